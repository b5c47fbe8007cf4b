//! The hand-off entry: how an add gives a job straight to a blocked worker.
//!
//! A worker about to block registers in the queue's `waiters` set (`wait_register.lua`, pipelined
//! with its BRPOP). An add that finds a registration while the queue is empty, unpaused and
//! unlimited leases the job itself (lease on the server's clock) and pushes one entry on `handoff`,
//! which the worker's BRPOP pops: the job starts with no claim round trip. The entry is a run of
//! netstrings (`<len>:<bytes>`): the job id, the lease token, then the record's field/value pairs,
//! as `add.lua` wrote them. This module parses it; `add.lua` builds it. An entry no worker took is
//! taken first by the next claim (`lib/claim.lua`), or undone by `sweep.lua` when its lease expires.

use crate::error::{Error, ErrorCode, Result};
use crate::job::{Job, JobState};
use crate::job_id::JobId;
use std::collections::HashMap;

/// A job handed over by an add: leased already, with its record.
#[derive(Debug)]
pub(crate) struct Handed {
    /// The job, read from the entry (state active).
    pub job: Job,
    /// Its lease token.
    pub token: String,
}

fn malformed(why: &str) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("malformed hand-off entry: {why}"),
    )
}

/// Splits a run of netstrings.
fn netstrings(mut rest: &[u8]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    while !rest.is_empty() {
        let colon = rest
            .iter()
            .position(|b| *b == b':')
            .ok_or_else(|| malformed("no length"))?;
        let len: usize = std::str::from_utf8(&rest[..colon])
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| malformed("bad length"))?;
        let end = (colon + 1)
            .checked_add(len)
            .ok_or_else(|| malformed("bad length"))?;
        let body = rest.get(colon + 1..end).ok_or_else(|| malformed("short"))?;
        out.push(String::from_utf8(body.to_vec()).map_err(|_| malformed("not UTF-8"))?);
        rest = &rest[end..];
    }
    Ok(out)
}

/// Parses an entry popped from `handoff`. The id passes the one job-id gate.
pub(crate) fn parse(entry: &[u8]) -> Result<Handed> {
    let mut items = netstrings(entry)?.into_iter();
    let (Some(id), Some(token)) = (items.next(), items.next()) else {
        return Err(malformed("no id and token"));
    };
    let id = JobId::parse(&id)?;
    let mut record = HashMap::new();
    while let Some(field) = items.next() {
        let value = items
            .next()
            .ok_or_else(|| malformed("a field without a value"))?;
        record.insert(field, value);
    }
    if !record.contains_key("name") {
        return Err(malformed("no name"));
    }
    Ok(Handed {
        job: Job::from_record(id, Some(JobState::Active), record),
        token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(items: &[&str]) -> Vec<u8> {
        items
            .iter()
            .flat_map(|i| format!("{}:{i}", i.len()).into_bytes())
            .collect()
    }

    #[test]
    fn parses_what_add_lua_writes() {
        let id = JobId::from_parts(1_700_000_000_000, 3, 7).to_string();
        let data = r#"{"a":"x:1|2","n":[1,2]}"#;
        let entry = ns(&[
            &id,
            "1.7e+15.h0",
            "name",
            "email",
            "data",
            data,
            "created_ms",
            "17",
        ]);
        let h = parse(&entry).unwrap();
        assert_eq!(h.job.id.to_string(), id);
        assert_eq!(h.token, "1.7e+15.h0");
        assert_eq!(h.job.name, "email");
        assert_eq!(h.job.data, serde_json::json!({"a": "x:1|2", "n": [1, 2]}));
        assert_eq!(h.job.state, Some(JobState::Active));
    }

    #[test]
    fn refuses_forged_or_torn_entries() {
        assert_eq!(
            parse(&ns(&["not-an-id", "t", "name", "x"]))
                .unwrap_err()
                .code(),
            ErrorCode::InvalidJobId
        );
        let id = JobId::from_parts(1_700_000_000_000, 3, 7).to_string();
        for bad in [
            ns(&[&id]),
            ns(&[&id, "t", "name"]),
            b"99:short".to_vec(),
            b"x".to_vec(),
        ] {
            assert!(parse(&bad).is_err(), "{:?}", String::from_utf8_lossy(&bad));
        }
    }

    #[test]
    fn a_length_near_usize_max_is_refused_not_an_overflow() {
        // Found by fuzz/fuzz_targets/handoff_entry.rs: `colon + 1 + len` overflowed (a panic in
        // debug builds) for a length of usize::MAX.
        for len in [usize::MAX, usize::MAX - 1, usize::MAX - 3] {
            let entry = format!("{len}:ab");
            assert!(parse(entry.as_bytes()).is_err(), "{entry}");
        }
    }
}
