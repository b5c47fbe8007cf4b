//! One call being built: [`Invocation`] takes keys only as [`Key`]s, checks the counts against the
//! header, each key's role and the one-slot rule before anything is sent, and runs as EVALSHA.

use super::{header::*, registry::*, send::*};
use crate::error::{Error, ErrorCode, Result};
use crate::keyspace::Key;
use crate::store::Store;
use redis::aio::ConnectionLike;
use redis::{FromRedisValue, ToRedisArgs};

/// The `ARGV` of a call in one buffer: every argument's bytes back to back and where each ends
/// (one allocation for all of them, where a `Vec<u8>` each cost two per argument).
#[derive(Default)]
pub(super) struct ArgBuf {
    pub(super) bytes: Vec<u8>,
    pub(super) ends: Vec<usize>,
}

impl ArgBuf {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter())
            .map(|(a, &b)| &self.bytes[a..b])
    }
}

/// Writes one argument into an [`ArgBuf`]; the argument ends when the writer is dropped.
pub(super) struct ArgWriter<'a>(&'a mut ArgBuf);

impl std::io::Write for ArgWriter<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.bytes.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for ArgWriter<'_> {
    fn drop(&mut self) {
        self.0.ends.push(self.0.bytes.len());
    }
}

impl redis::RedisWrite for ArgBuf {
    fn write_arg(&mut self, arg: &[u8]) {
        self.bytes.extend_from_slice(arg);
        self.ends.push(self.bytes.len());
    }

    fn writer_for_next_arg(&mut self) -> impl std::io::Write + '_ {
        ArgWriter(self)
    }
}

/// One call of a script, being built.
pub struct Invocation {
    pub(super) script: &'static Script,
    pub(super) keys: Vec<Key>,
    pub(super) args: ArgBuf,
}

impl Invocation {
    /// Adds the next `KEYS` entry. Only a [`Key`] from the keyspace builders is accepted.
    pub fn key(mut self, key: &Key) -> Self {
        self.keys.push(key.clone());
        self
    }

    /// Adds the fair-group containers in the order every script header lists them
    /// (`group_ready`, `group_turns`, `group_parked`, `group_state`: lua/lib/groups.lua).
    pub(crate) fn group_keys(self, k: &crate::keyspace::QueueKeys) -> Self {
        self.key(&k.group_ready)
            .key(&k.group_turns)
            .key(&k.group_parked)
            .key(&k.group_state)
    }

    /// Makes room for `bytes` more bytes of `ARGV` (their total, when the caller knows it).
    pub(crate) fn reserve_arg_bytes(mut self, bytes: usize) -> Self {
        self.args.bytes.reserve(bytes);
        self
    }

    /// Adds the next `ARGV` entry.
    pub fn arg<T: ToRedisArgs>(mut self, arg: T) -> Self {
        arg.write_redis_args(&mut self.args);
        self
    }

    /// Checks the call against the header and the one-slot rule, without sending it.
    pub fn check(&self) -> Result<()> {
        let h = self.script.header()?;
        if !count_ok(h.keys.len(), h.keys_repeat, self.keys.len())
            || !count_ok(h.argv.len(), h.argv_repeat, self.args.len())
        {
            return Err(Error::new(
                ErrorCode::Internal,
                format!(
                    "{}.lua declares {} keys and {} args, called with {} and {}",
                    self.script.name,
                    h.keys.len(),
                    h.argv.len(),
                    self.keys.len(),
                    self.args.len()
                ),
            ));
        }
        self.check_roles(h)?;
        if let Some(first) = self.keys.first() {
            let slot = first.slot();
            if let Some(other) = self.keys.iter().find(|k| k.slot() != slot) {
                return Err(Error::new(
                    ErrorCode::CrossSlot,
                    format!(
                        "{}.lua called with keys in two slots: {first} ({slot}) and {other} ({})",
                        self.script.name,
                        other.slot()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Each key against the header's name at its position: refused (before sending) when a key's
    /// role is not one the header takes there, so two keys exchanged, or one missing, cannot reach
    /// the server even where the counts add up.
    fn check_roles(&self, h: &Header) -> Result<()> {
        let fixed = h.keys.len() - usize::from(h.keys_repeat);
        let cycle = if h.keys_repeat {
            h.key_roles.last()
        } else {
            None
        };
        if let Some(cycle) = cycle {
            let extra = self.keys.len().saturating_sub(fixed);
            if extra % cycle.len() != 0 {
                return Err(Error::new(
                    ErrorCode::Internal,
                    format!(
                        "{}.lua: the repeating KEYS group {} takes keys in groups of {} ({}), called with {extra}",
                        self.script.name,
                        h.keys[fixed],
                        cycle.len(),
                        cycle.join("+")
                    ),
                ));
            }
        }
        for (i, key) in self.keys.iter().enumerate() {
            let (name, ok) = if i < fixed {
                (&h.keys[i], h.key_roles[i].iter().any(|r| r == key.role()))
            } else {
                let cycle = cycle.expect("counts checked");
                (
                    &h.keys[fixed],
                    cycle[(i - fixed) % cycle.len()] == key.role(),
                )
            };
            if !ok {
                return Err(Error::new(
                    ErrorCode::Internal,
                    format!(
                        "{}.lua: KEYS[{}] is {name}, called with a {} key ({key})",
                        self.script.name,
                        i + 1,
                        key.role()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The EVALSHA command for this call, checked first (see [`Invocation::check`]).
    pub(crate) fn command(&self, guarded: bool) -> Result<redis::Cmd> {
        self.check()?;
        Ok(self.evalsha(guarded))
    }

    fn evalsha(&self, guarded: bool) -> redis::Cmd {
        let sha = self.script.sha(guarded);
        let key_bytes: usize = self.keys.iter().map(|k| k.as_str().len()).sum();
        let mut cmd = redis::Cmd::with_capacity(
            3 + self.keys.len() + self.args.len(),
            7 + sha.len() + 4 + key_bytes + self.args.bytes.len(),
        );
        cmd.arg("EVALSHA").arg(sha).arg(self.keys.len());
        for k in &self.keys {
            cmd.arg(k);
        }
        for a in self.args.iter() {
            cmd.arg(a);
        }
        cmd
    }

    #[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))] // for core/tests
    /// The script being called.
    pub fn script(&self) -> &'static Script {
        self.script
    }

    /// Runs the call: EVALSHA, and on NOSCRIPT load the script and retry once.
    pub async fn invoke<T: FromRedisValue>(self, store: &Store) -> Result<T> {
        use tracing::Instrument;
        let span = tracing::debug_span!(
            "emq.script",
            script = self.script.name,
            keys = self.keys.len()
        );
        let mut conn = store.conn();
        self.invoke_on(store, &mut conn).instrument(span).await
    }

    /// Runs the call on `conn` (a dedicated connection, say) with the same one NOSCRIPT retry.
    pub(crate) async fn invoke_on<T: FromRedisValue, C: ConnectionLike + Send>(
        &self,
        store: &Store,
        conn: &mut C,
    ) -> Result<T> {
        let cmd = self.command(store.guarded())?;
        send_loading(store, conn, &Request::One(cmd), &[self.script]).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arg_buffer_keeps_each_argument_whole_and_in_order() {
        // One buffer holds every ARGV entry: empty ones, numbers, text and an id must come out of
        // the EVALSHA command exactly as given, one argument each.
        let k = q().keys();
        let id = crate::JobId::parse(&crate::JobId::from_parts(1, 2, 3).to_string()).unwrap();
        let inv = PAUSE
            .prepare()
            .key(&k.wait)
            .arg("")
            .arg(42u64)
            .arg("a|b")
            .arg(id)
            .arg(&b"\x00\xff"[..]);
        assert_eq!(inv.args.len(), 5);
        let got: Vec<Vec<u8>> = inv.args.iter().map(<[u8]>::to_vec).collect();
        let want: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"42".to_vec(),
            b"a|b".to_vec(),
            id.to_string().into_bytes(),
            vec![0, 255],
        ];
        assert_eq!(got, want);
        let cmd = inv.evalsha(false);
        let sent: Vec<Vec<u8>> = cmd
            .args_iter()
            .map(|a| match a {
                redis::Arg::Simple(b) => b.to_vec(),
                _ => panic!("only plain arguments"),
            })
            .collect();
        assert_eq!(sent[0], b"EVALSHA");
        assert_eq!(sent[2], b"1");
        assert_eq!(sent[3], k.wait.as_str().as_bytes());
        assert_eq!(&sent[4..], &want[..]);
    }

    fn q() -> crate::QueueName {
        crate::QueueName::new("swapped").unwrap()
    }

    #[test]
    fn a_swapped_pair_of_keys_is_refused_before_sending() {
        use crate::keyspace::Family;
        let k = q().keys();
        // RESUME's header: wait, paused, meta, marker, events (see lua/resume.lua).
        let h = RESUME.header().unwrap();
        let key_of = |name: &str| match name {
            "wait" => k.wait.clone(),
            "paused" => k.paused.clone(),
            "meta" => k.meta.clone(),
            "marker" => k.marker.clone(),
            "events" => k.events.clone(),
            other => panic!("resume.lua names {other}; update this test"),
        };
        let keys: Vec<Key> = h.keys.iter().map(|n| key_of(n)).collect();
        let mut ok = RESUME.prepare();
        for key in &keys {
            ok = ok.key(key);
        }
        let args = h.argv.len();
        for _ in 0..args {
            ok = ok.arg("1");
        }
        ok.check().expect("the keys in header order pass");
        let mut swapped_keys = keys.clone();
        swapped_keys.swap(0, 1); // same slot, same count: only the names tell
        let mut swapped = RESUME.prepare();
        for key in &swapped_keys {
            swapped = swapped.key(key);
        }
        for _ in 0..args {
            swapped = swapped.arg("1");
        }
        let err = swapped.check().unwrap_err();
        assert_eq!(err.code(), ErrorCode::Internal);
        assert!(err.message().contains("KEYS[1]"), "{}", err.message());
        assert!(err.message().contains(&h.keys[0]), "{}", err.message());
        assert!(swapped.command(false).is_err(), "command() checks too");
        // A wrong family at one position, same count.
        let mut wrong = RESUME.prepare().key(&q().key(Family::Delayed));
        for key in &keys[1..] {
            wrong = wrong.key(key);
        }
        for _ in 0..args {
            wrong = wrong.arg("1");
        }
        assert!(wrong.check().is_err());
    }

    #[test]
    fn a_repeating_group_takes_its_sequence_whole() {
        use crate::keyspace::JobPart;
        let (k, q) = (q().keys(), q());
        let id = crate::JobId::from_parts(1, 1, 1);
        let base = || {
            REMOVE_FINISHED
                .prepare()
                .key(&k.completed)
                .key(&k.meta)
                .key(&k.events)
        };
        let args = |mut inv: Invocation| {
            for _ in 0..REMOVE_FINISHED.header().unwrap().argv.len() {
                inv = inv.arg("1");
            }
            inv
        };
        let rec = q.job_key(id, JobPart::Record);
        let logs = q.job_key(id, JobPart::Logs);
        let good = args(base().key(&rec).key(&logs));
        assert!(good.check().is_ok(), "{:?}", good.check());
        assert!(
            args(base().key(&logs).key(&rec)).check().is_err(),
            "order within a pair"
        );
        assert!(args(base().key(&rec)).check().is_err(), "half a pair");
        let failed = REMOVE_FINISHED
            .prepare()
            .key(&k.failed)
            .key(&k.meta)
            .key(&k.events);
        assert!(args(failed).check().is_ok(), "finished takes failed too");
        let wait = REMOVE_FINISHED
            .prepare()
            .key(&k.wait)
            .key(&k.meta)
            .key(&k.events);
        assert!(args(wait).check().is_err(), "but not wait");
    }
}
