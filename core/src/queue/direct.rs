//! Adds whose round trip the caller drives on a socket of its own: Python's asyncio producer
//! (issue 30 item 5) writes the call and reads the reply on its event loop's thread, where
//! [`Queue::add_json`] crosses to the core's runtime and back (about 70 µs of client CPU per add
//! on this project's VM; bench/RESULTS.md "The asyncio add without the hop").
//!
//! The core still decides everything about the add: [`Queue::direct_add`] checks the job, mints
//! its id and builds the one `add_one.lua` call that [`Queue::add_json`] would send (same script,
//! keys, arguments and server-clock stamps); [`direct_reply_len`] finds where a reply ends in the
//! bytes read so far; [`direct_settle`] reads it. Anything unusual goes the usual way, with the
//! same id (an add is idempotent per id, so nothing is added twice): a job that is not a plain
//! one-job add (delay, priority, dedup, group, LIFO, debounce), a partitioned queue, a durable
//! store, a cluster, TLS, credentials or a database in the URL, the queue's first add (which
//! registers the queue), and every reply but "added" or "that id exists" — NOSCRIPT (the script
//! not loaded), a server error, a failover's READONLY or LOADING.

use super::add::is_plain;
use super::*;
use crate::error::Result;
use crate::job::payload_from_text;
use crate::job_id::JobId;
use crate::options::JobOptions;
use crate::store::Topology;
use std::sync::atomic::Ordering;

/// One add's call, to write on the caller's socket ([`Queue::direct_endpoint`]).
pub struct DirectAdd {
    /// The job's id (minted here unless the options pinned one).
    pub id: JobId,
    /// The call's bytes (RESP).
    pub frame: Vec<u8>,
}

/// What a direct add's reply says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectOutcome {
    /// The job was added, or a job with its id existed already: this is the id `add` returns.
    Added(JobId),
    /// Anything else: add it again through [`Queue::add_json`], with the same id.
    Again,
}

impl Queue {
    /// Where a caller's own socket sends direct adds: host and port of a standalone server
    /// reached by `redis://host:port` without credentials or a database. None: use
    /// [`Queue::add_json`]. Worked out once per handle (and its clones): what it reads is fixed
    /// when the handle opens.
    pub fn direct_endpoint(&self) -> Option<(String, u16)> {
        self.direct_cached().clone()
    }

    /// [`Queue::direct_endpoint`], worked out on first use.
    fn direct_cached(&self) -> &Option<(String, u16)> {
        self.direct.get_or_init(|| self.endpoint_of_store())
    }

    fn endpoint_of_store(&self) -> Option<(String, u16)> {
        let o = self.store.options();
        if self.spread().is_some()
            || o.durable.is_some()
            || self.store.topology() != Topology::Standalone
            || o.urls.len() != 1
        {
            return None;
        }
        let url = redis::parse_redis_url(&o.urls[0])?;
        let bare_path = matches!(url.path(), "" | "/" | "/0");
        if url.scheme() != "redis"
            || !url.username().is_empty()
            || url.password().is_some()
            || !bare_path
            || url.query().is_some()
        {
            return None;
        }
        Some((url.host_str()?.to_string(), url.port().unwrap_or(6379)))
    }

    /// The call of a one-job add of `name` with `data` (JSON text, checked as
    /// [`Queue::add_json`] checks it), for the caller to write on its socket; `Ok(None)` when this
    /// add must go through [`Queue::add_json`] (see the module's doc). Errors are `add_json`'s for
    /// the same input (bad options, payload, id).
    pub fn direct_add(
        &self,
        name: &str,
        data: &str,
        options: &JobOptions,
    ) -> Result<Option<DirectAdd>> {
        options.validate()?;
        payload_from_text("the payload", data)?;
        crate::options::check_dead_letter_not_own(self.name(), options)?;
        if cfg!(feature = "otel")
            || !is_plain(options)
            || options.debounce
            || !self.registered.load(Ordering::Relaxed)
            || self.direct_cached().is_none()
        {
            return Ok(None);
        }
        let id = match options.id {
            Some(id) => id,
            None => self.minter.mint()?,
        };
        let job = NewJob {
            name: name.to_string(),
            data: serde_json::Value::Null,
            options: options.clone(),
        };
        let frame = self.add_one_frame(id, &job, data)?;
        Ok(Some(DirectAdd { id, frame }))
    }
}

/// How many bytes the first reply in `buf` takes (RESP2, as a connection that sent no HELLO
/// reads it); None while it is incomplete.
pub fn direct_reply_len(buf: &[u8]) -> Option<usize> {
    fn line(buf: &[u8], at: usize) -> Option<(usize, i64)> {
        let end = at + buf.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        let n = std::str::from_utf8(&buf[at + 1..end])
            .ok()?
            .parse::<i64>()
            .unwrap_or(0);
        Some((end + 2, n))
    }
    fn value(buf: &[u8], at: usize) -> Option<usize> {
        match *buf.get(at)? {
            b'+' | b'-' | b':' => line(buf, at).map(|(end, _)| end),
            b'$' => {
                let (end, n) = line(buf, at)?;
                if n < 0 {
                    return Some(end);
                }
                let stop = end + n as usize + 2;
                (buf.len() >= stop).then_some(stop)
            }
            b'*' => {
                let (mut end, n) = line(buf, at)?;
                for _ in 0..n.max(0) {
                    end = value(buf, end)?;
                }
                Some(end)
            }
            // Not RESP2: the whole buffer, so the caller settles it as "again" and stops.
            _ => Some(buf.len()),
        }
    }
    value(buf, 0)
}

/// What the reply (one whole reply, [`direct_reply_len`]) to the direct add of `id` says.
pub fn direct_settle(reply: &[u8], id: JobId) -> DirectOutcome {
    match redis::parse_redis_value(reply) {
        // add_one.lua: an empty array when added, [index, holder] when the id exists.
        Ok(redis::Value::Array(items)) => match items.as_slice() {
            [] => DirectOutcome::Added(id),
            [_, holder] => redis::from_redis_value::<String>(holder.clone())
                .ok()
                .and_then(|h| JobId::parse(&h).ok())
                .map_or(DirectOutcome::Again, DirectOutcome::Added),
            _ => DirectOutcome::Again,
        },
        _ => DirectOutcome::Again,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_lengths_and_outcomes() {
        let id = JobId::from_parts(1, 2, 3);
        let other = JobId::from_parts(4, 5, 6);
        let exists = format!("*2\r\n$1\r\n0\r\n$16\r\n{other}\r\n");
        for (reply, outcome) in [
            ("*0\r\n".to_string(), DirectOutcome::Added(id)),
            (exists.clone(), DirectOutcome::Added(other)),
            (
                "-NOSCRIPT No matching script.\r\n".into(),
                DirectOutcome::Again,
            ),
            ("-READONLY You can't write\r\n".into(), DirectOutcome::Again),
            ("*1\r\n:1\r\n".into(), DirectOutcome::Again),
            ("$-1\r\n".into(), DirectOutcome::Again),
        ] {
            let b = reply.as_bytes();
            assert_eq!(direct_reply_len(b), Some(b.len()), "{reply:?}");
            // Every proper prefix is incomplete; two replies end to end split at the first.
            for cut in 0..b.len() {
                assert_eq!(direct_reply_len(&b[..cut]), None, "{reply:?} cut at {cut}");
            }
            let two = [b, b"*0\r\n"].concat();
            assert_eq!(direct_reply_len(&two), Some(b.len()));
            assert_eq!(direct_settle(b, id), outcome, "{reply:?}");
        }
        // Not RESP2 at all: taken whole, and "again".
        assert_eq!(direct_reply_len(b"hello"), Some(5));
        assert_eq!(direct_settle(b"hello", id), DirectOutcome::Again);
    }
}
