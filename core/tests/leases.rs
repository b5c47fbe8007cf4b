//! Lease tokens and start reports, driven by the scripts a worker runs (`claim`, `started`,
//! `complete`) on a real server.

mod common;

use common::{audit_ok, queue_on};

use emq::testing::script;
use emq::{JobId, JobPart, Queue};

const LEASE_MS: u64 = 60_000;
const MAX_EVENTS: u64 = 1_000;

/// The server's clock in microseconds (TIME).
async fn server_us(q: &Queue) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME")
        .query_async(&mut q.store().conn())
        .await
        .unwrap();
    s * 1_000_000 + us
}

async fn lease_of(q: &Queue, id: JobId) -> Option<String> {
    redis::cmd("HGET")
        .arg(q.keys().leases.as_str())
        .arg(id.to_string())
        .query_async(&mut q.store().conn())
        .await
        .unwrap()
}

/// Claims up to `count` jobs, the first `start` of them starting at once: (id, token) pairs.
async fn claim(q: &Queue, count: u64, start: u64) -> Vec<(JobId, String)> {
    let reply: Vec<redis::Value> = script::CLAIM
        .on(q.name(), None)
        .unwrap()
        .arg(count)
        .arg(LEASE_MS)
        .arg(MAX_EVENTS)
        .arg(start)
        .invoke(q.store())
        .await
        .unwrap();
    let mut it = reply.into_iter().skip(1);
    let mut out = Vec::new();
    while let (Some(id), Some(token)) = (it.next(), it.next()) {
        let id: String = redis::from_redis_value(id).unwrap();
        let token: String = redis::from_redis_value(token).unwrap();
        out.push((JobId::parse(&id).unwrap(), token));
    }
    out
}

#[tokio::test]
async fn lease_tokens_carry_the_servers_microseconds_exactly() {
    let store = common::standalone().await;
    let q = queue_on(&store, "tokens").await;
    q.add_bulk(common::jobs("t", 3)).await.unwrap();
    let before = server_us(&q).await;
    let leased = claim(&q, 3, 1).await;
    let after = server_us(&q).await;
    assert_eq!(leased.len(), 3);
    for (i, (id, token)) in leased.iter().enumerate() {
        // "<microseconds>.<place in the batch>", all digits: a clock printed as a Lua number
        // ("1.7961485553790e+15.1") kept only 14 of its 16 digits, so two leases of one job made
        // within 100 µs at the same place could share a token.
        let (clock, place) = token.split_once('.').expect("a dot");
        assert_eq!(place, (i + 1).to_string(), "token {token}");
        assert!(
            clock.len() == 16 && clock.bytes().all(|b| b.is_ascii_digit()),
            "token {token}"
        );
        let clock: u64 = clock.parse().unwrap();
        assert!(
            before <= clock && clock <= after,
            "token {token} outside {before}..{after}"
        );
        // The lease stores the token and the start millisecond; the jobs after the first were
        // leased ahead (`|a`).
        let lease = lease_of(&q, *id).await.expect("a lease");
        let expected = format!("{token}|{}", clock / 1000);
        if i == 0 {
            assert_eq!(lease, expected);
        } else {
            assert_eq!(lease, format!("{expected}|a"));
        }
    }
    audit_ok(&q).await;
}

#[tokio::test]
async fn starts_reported_together_mark_only_the_callers_leases() {
    let store = common::standalone().await;
    let q = queue_on(&store, "starts").await;
    q.add_bulk(common::jobs("s", 4)).await.unwrap();
    let leased = claim(&q, 4, 1).await;
    assert_eq!(leased.len(), 4);
    let (first, second, third, fourth) = (&leased[0], &leased[1], &leased[2], &leased[3]);

    // started.lua with three pairs: one right, one with a stale token, one right again.
    let lost: Vec<String> = script::STARTED
        .on(q.name(), None)
        .unwrap()
        .arg(second.0)
        .arg(&second.1)
        .arg(third.0)
        .arg("1.1")
        .arg(fourth.0)
        .arg(&fourth.1)
        .invoke(q.store())
        .await
        .unwrap();
    assert_eq!(lost, vec![third.0.to_string()]);
    for (job, started) in [(second, true), (third, false), (fourth, true)] {
        let lease = lease_of(&q, job.0).await.unwrap();
        assert!(lease.starts_with(&format!("{}|", job.1)), "{lease}");
        assert_eq!(!lease.ends_with("|a"), started, "{lease}");
    }

    // complete.lua completes the first job and reports the third's start in the same call.
    let (lost, next): (Vec<i64>, Vec<redis::Value>) = script::COMPLETE
        .on(q.name(), None)
        .unwrap()
        .key(&q.name().job_key(first.0, JobPart::Record))
        .key(&q.name().job_key(first.0, JobPart::Logs))
        .arg(0)
        .arg(LEASE_MS)
        .arg(MAX_EVENTS)
        .arg(0)
        .arg(format!("{} {}", third.0, third.1))
        .arg("")
        .arg(first.0)
        .arg(&first.1)
        .arg("\"done\"")
        .arg("1")
        .invoke(q.store())
        .await
        .unwrap();
    assert!(lost.is_empty(), "{lost:?}");
    assert_eq!(next.len(), 1, "no next job asked for: {next:?}");
    assert_eq!(lease_of(&q, first.0).await, None);
    let lease = lease_of(&q, third.0).await.unwrap();
    assert!(!lease.ends_with("|a"), "{lease}");

    // A completion with a stale token is refused and named by its place in the call.
    let (lost, _): (Vec<i64>, Vec<redis::Value>) = script::COMPLETE
        .on(q.name(), None)
        .unwrap()
        .key(&q.name().job_key(second.0, JobPart::Record))
        .key(&q.name().job_key(second.0, JobPart::Logs))
        .key(&q.name().job_key(fourth.0, JobPart::Record))
        .key(&q.name().job_key(fourth.0, JobPart::Logs))
        .arg(0)
        .arg(LEASE_MS)
        .arg(MAX_EVENTS)
        .arg(0)
        .arg("")
        .arg("")
        .arg(second.0)
        .arg("1.1")
        .arg("null")
        .arg("0")
        .arg(fourth.0)
        .arg(&fourth.1)
        .arg("null")
        .arg("0")
        .invoke(q.store())
        .await
        .unwrap();
    assert_eq!(lost, vec![1]);
    assert!(lease_of(&q, second.0).await.is_some());
    assert_eq!(lease_of(&q, fourth.0).await, None);
    audit_ok(&q).await;
}

async fn encoding(q: &Queue, key: &str) -> Option<String> {
    redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg(key)
        .query_async(&mut q.store().conn())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_claim_keeps_active_and_leases_hashed() {
    let store = common::standalone().await;
    let q = queue_on(&store, "hashed").await;
    q.add_bulk(common::jobs("h", 3)).await.unwrap();
    let leased = claim(&q, 3, 3).await;
    assert_eq!(leased.len(), 3);
    // Small enough for a listpack, yet hashed: each lease, start and completion touches them in
    // O(1) / O(log n) instead of a scan of all entries.
    let k = q.keys();
    assert_eq!(
        encoding(&q, k.active.as_str()).await.as_deref(),
        Some("skiplist")
    );
    assert_eq!(
        encoding(&q, k.leases.as_str()).await.as_deref(),
        Some("hashtable")
    );
    // Nothing but the three jobs is left in them.
    let active: u64 = redis::cmd("ZCARD")
        .arg(k.active.as_str())
        .query_async(&mut q.store().conn())
        .await
        .unwrap();
    let leases: u64 = redis::cmd("HLEN")
        .arg(k.leases.as_str())
        .query_async(&mut q.store().conn())
        .await
        .unwrap();
    assert_eq!((active, leases), (3, 3));
    audit_ok(&q).await;
}

#[tokio::test]
async fn tokens_name_places_past_ten_and_a_hundred() {
    let store = common::standalone().await;
    let q = queue_on(&store, "places").await;
    q.add_bulk(common::jobs("p", 120)).await.unwrap();
    let leased = claim(&q, 120, 120).await;
    assert_eq!(leased.len(), 120);
    let clock = leased[0].1.split_once('.').expect("a dot").0.to_string();
    for (i, (id, token)) in leased.iter().enumerate() {
        // One clock per call; each job's place in decimal, without leading zeros.
        assert_eq!(*token, format!("{clock}.{}", i + 1));
        let lease = lease_of(&q, *id).await.expect("a lease");
        assert!(lease.starts_with(&format!("{token}|")), "{lease}");
        assert!(!lease.ends_with("|a"), "{lease}");
    }
    audit_ok(&q).await;
}

async fn record_field(q: &Queue, id: JobId, field: &str) -> Option<String> {
    redis::cmd("HGET")
        .arg(q.name().job_key(id, JobPart::Record))
        .arg(field)
        .query_async(&mut q.store().conn())
        .await
        .unwrap()
}

async fn zscore(q: &Queue, key: &str, id: JobId) -> Option<String> {
    redis::cmd("ZSCORE")
        .arg(key)
        .arg(id.to_string())
        .query_async(&mut q.store().conn())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_start_reported_and_completed_in_one_call_and_a_lost_one_between() {
    let store = common::standalone().await;
    let q = queue_on(&store, "oneread").await;
    q.add_bulk(common::jobs("o", 4)).await.unwrap();
    let leased = claim(&q, 4, 1).await;
    assert_eq!(leased.len(), 4);
    let (first, second, third, fourth) = (&leased[0], &leased[1], &leased[2], &leased[3]);
    let claimed_ms = lease_of(&q, first.0).await.unwrap();
    let claimed_ms = claimed_ms.split('|').nth(1).unwrap().to_string();
    // Started later than the claim, on the server's clock.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;

    // One call: the second's and the fourth's starts are reported; the first (started at its
    // claim), the second (reported here) and the third (a stale token) are completed, kept.
    let (lost, next): (Vec<i64>, Vec<redis::Value>) = script::COMPLETE
        .on(q.name(), None)
        .unwrap()
        .key(&q.name().job_key(first.0, JobPart::Record))
        .key(&q.name().job_key(first.0, JobPart::Logs))
        .key(&q.name().job_key(third.0, JobPart::Record))
        .key(&q.name().job_key(third.0, JobPart::Logs))
        .key(&q.name().job_key(second.0, JobPart::Record))
        .key(&q.name().job_key(second.0, JobPart::Logs))
        .arg(0)
        .arg(LEASE_MS)
        .arg(MAX_EVENTS)
        .arg(0)
        .arg(format!(
            "{} {} {} {}",
            second.0, second.1, fourth.0, fourth.1
        ))
        .arg("")
        .arg(first.0)
        .arg(&first.1)
        .arg("1")
        .arg("1")
        .arg(third.0)
        .arg("1.1")
        .arg("3")
        .arg("1")
        .arg(second.0)
        .arg(&second.1)
        .arg("2")
        .arg("1")
        .invoke(q.store())
        .await
        .unwrap();
    assert_eq!(lost, vec![2], "the third, at place 2, was not completed");
    assert_eq!(next.len(), 1, "no next job asked for: {next:?}");
    let k = q.keys();
    for job in [first, second] {
        assert_eq!(lease_of(&q, job.0).await, None);
        assert_eq!(zscore(&q, k.active.as_str(), job.0).await, None);
        assert!(zscore(&q, k.completed.as_str(), job.0).await.is_some());
    }
    // The first ran from its claim; the second from its start reported in this call.
    assert_eq!(
        record_field(&q, first.0, "processed_ms").await.as_deref(),
        Some(claimed_ms.as_str())
    );
    let finished = record_field(&q, second.0, "finished_ms").await.unwrap();
    assert_eq!(
        record_field(&q, second.0, "processed_ms").await.as_deref(),
        Some(finished.as_str())
    );
    assert_ne!(finished, claimed_ms);
    assert_eq!(
        record_field(&q, first.0, "result").await.as_deref(),
        Some("1")
    );
    assert_eq!(
        record_field(&q, second.0, "result").await.as_deref(),
        Some("2")
    );
    // The third keeps its lease, still ahead (its start was not reported) and active; the
    // fourth's start is marked.
    let third_lease = lease_of(&q, third.0).await.unwrap();
    assert!(
        third_lease.starts_with(&format!("{}|", third.1)),
        "{third_lease}"
    );
    assert!(third_lease.ends_with("|a"), "{third_lease}");
    assert!(zscore(&q, k.active.as_str(), third.0).await.is_some());
    assert_eq!(record_field(&q, third.0, "result").await, None);
    let fourth_lease = lease_of(&q, fourth.0).await.unwrap();
    assert!(
        fourth_lease.starts_with(&format!("{}|", fourth.1)),
        "{fourth_lease}"
    );
    assert!(!fourth_lease.ends_with("|a"), "{fourth_lease}");
    audit_ok(&q).await;
}
