//! [`Prefix`]: the fixed front of a script called again and again with only its last key and its
//! arguments changing, checked once.

use super::{invocation::*, registry::*, send::*};
use crate::error::{Error, ErrorCode, Result};
use crate::keyspace::Key;
use crate::store::Store;
use redis::FromRedisValue;

/// The fixed front of a script's calls, checked once: `EVALSHA <sha> <numkeys>` and every key but
/// the last, for a script called again and again with only its last key and its arguments
/// changing (add_one.lua: the queue's eleven keys, then the job's record). Building it from an
/// [`Invocation`] checks the header's counts, the roles at every position and the one-slot rule;
/// a call then adds a last key of the same role and slot ([`Prefix::command`] refuses any other) and
/// arguments, and skips re-cloning, re-checking and re-writing the fixed keys on every call.
pub(crate) struct Prefix {
    pub(super) script: &'static Script,
    pub(super) cmd: redis::Cmd,
    pub(super) last_role: &'static str,
    pub(super) slot: u16,
    pub(super) args: (usize, bool),
}

impl Prefix {
    /// From a complete, valid call (`sample`, whose last key and arguments are only examples),
    /// in the given mode.
    pub(crate) fn new(sample: &Invocation, guarded: bool) -> Result<Prefix> {
        sample.check()?;
        let h = sample.script.header()?;
        let (last, fixed) = sample
            .keys
            .split_last()
            .ok_or_else(|| Error::new(ErrorCode::Internal, "a prefix needs a last key"))?;
        let sha = sample.script.sha(guarded);
        let mut cmd = redis::Cmd::with_capacity(3 + sample.keys.len() + 8, 256);
        cmd.arg("EVALSHA").arg(sha).arg(sample.keys.len());
        for k in fixed {
            cmd.arg(k);
        }
        Ok(Prefix {
            script: sample.script,
            cmd,
            last_role: last.role(),
            slot: last.slot(),
            args: (h.argv.len() - usize::from(h.argv_repeat), h.argv_repeat),
        })
    }

    /// The command of one call: the prefix, `last` and `args` (each one ARGV entry), checked; to
    /// send with [`Prefix::send`], or to write as bytes on a socket of the caller's own
    /// (`queue/direct.rs`: `get_packed_command`; a NOSCRIPT reply there means the script is not
    /// loaded, which [`Prefix::send`] does).
    pub(crate) fn command(&self, last: &Key, args: &[&[u8]]) -> Result<redis::Cmd> {
        self.check_call(last, args.len())?;
        let mut cmd = self.cmd.clone();
        cmd.arg(last);
        for a in args {
            cmd.arg(*a);
        }
        Ok(cmd)
    }

    /// Sends a command [`Prefix::command`] built, as [`Invocation::invoke`] sends (EVALSHA, one
    /// load and resend on NOSCRIPT).
    pub(crate) async fn send<T: FromRedisValue>(
        &self,
        store: &Store,
        cmd: redis::Cmd,
    ) -> Result<T> {
        use tracing::Instrument;
        let span = tracing::debug_span!("emq.script", script = self.script.name, keys = 0);
        let mut conn = store.conn();
        send_loading(store, &mut conn, &Request::One(cmd), &[self.script])
            .instrument(span)
            .await
    }

    /// Refuses a last key of another role or slot than the sample's, or an ARGV count the header
    /// does not take.
    fn check_call(&self, last: &Key, args: usize) -> Result<()> {
        let (fixed, repeat) = self.args;
        if last.role() == self.last_role
            && last.slot() == self.slot
            && (args == fixed || (repeat && args >= fixed))
        {
            return Ok(());
        }
        Err(Error::new(
            ErrorCode::Internal,
            format!(
                "{}.lua: a call of its prefix with a {} key ({last}) and {args} args",
                self.script.name,
                last.role(),
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_sends_what_the_invocation_sends_and_refuses_a_wrong_last_key() {
        use crate::keyspace::JobPart;
        let q = crate::QueueName::new("prefixed").unwrap();
        let k = q.keys();
        let full = |id: crate::JobId, args: &[&str]| {
            let mut inv = crate::queue::add_one_keyed(&q, &k, id);
            for a in args {
                inv = inv.arg(*a);
            }
            inv
        };
        let bytes = |cmd: &redis::Cmd| -> Vec<Vec<u8>> {
            cmd.args_iter()
                .map(|a| match a {
                    redis::Arg::Simple(b) => b.to_vec(),
                    _ => panic!("only plain arguments"),
                })
                .collect()
        };
        let sample = crate::JobId::from_parts(1, 1, 1);
        for guarded in [false, true] {
            let prefix = Prefix::new(&full(sample, &["n", "{}"]), guarded).unwrap();
            for (i, args) in [
                vec!["j", "{\"i\":1}"],
                vec!["j", "{}", "{\"remove_on_complete\":true}"],
                vec!["j", "2", "{\"attempts\":3}", "3", "5"],
            ]
            .into_iter()
            .enumerate()
            {
                let id = crate::JobId::from_parts(7, 3, i as u16);
                let want = full(id, &args).command(guarded).unwrap();
                let raw: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
                let rec = q.job_key(id, JobPart::Record);
                assert_eq!(bytes(&prefix.command(&rec, &raw).unwrap()), bytes(&want));
            }
        }
        // A last key of another role or another queue's slot, or too few args, is refused.
        let prefix = Prefix::new(&full(sample, &["n", "{}"]), false).unwrap();
        let other = (0..)
            .map(|i| crate::QueueName::new(&format!("other{i}")).unwrap())
            .find(|o| o.slot() != q.slot())
            .unwrap();
        let rec = q.job_key(sample, JobPart::Record);
        assert!(prefix.check_call(&rec, 2).is_ok() && prefix.check_call(&rec, 5).is_ok());
        assert!(prefix.check_call(&rec, 1).is_err(), "too few args");
        assert!(prefix
            .check_call(&q.job_key(sample, JobPart::Logs), 2)
            .is_err());
        assert!(prefix
            .check_call(&other.job_key(sample, JobPart::Record), 2)
            .is_err());
    }
}
