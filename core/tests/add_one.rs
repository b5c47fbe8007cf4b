//! A one-job plain add goes through `add_one.lua`, a batch through `add.lua`: both must leave the
//! same record, lists, marker, events and counter behind (and the same idempotence and pause
//! behaviour), so the two scripts cannot drift apart.

use emq::testing::script;
use emq::{ConnectOptions, JobOptions, NewJob, Queue, QueueName, Removal};
use emq_harness::RedisServer;
use serde_json::json;
use std::collections::HashMap;

async fn conn(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

async fn record(c: &mut redis::aio::MultiplexedConnection, key: &str) -> HashMap<String, String> {
    redis::cmd("HGETALL").arg(key).query_async(c).await.unwrap()
}

async fn list(c: &mut redis::aio::MultiplexedConnection, key: &str) -> Vec<String> {
    redis::cmd("LRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .query_async(c)
        .await
        .unwrap()
}

async fn hget(c: &mut redis::aio::MultiplexedConnection, key: &str, f: &str) -> Option<String> {
    redis::cmd("HGET")
        .arg(key)
        .arg(f)
        .query_async(c)
        .await
        .unwrap()
}

/// The `ids` of each `added` event of a queue's stream, in order.
async fn added_events(c: &mut redis::aio::MultiplexedConnection, q: &str) -> Vec<String> {
    let entries: Vec<(String, HashMap<String, String>)> = redis::cmd("XRANGE")
        .arg(format!("emq:{{{q}}}:events"))
        .arg("-")
        .arg("+")
        .query_async(c)
        .await
        .unwrap();
    entries
        .into_iter()
        .filter(|(_, f)| f.get("ev").map(String::as_str) == Some("added"))
        .map(|(_, f)| f["ids"].clone())
        .collect()
}

/// Registers `n` blocked workers `w0`… on queue `q` as wait_register.lua writes them
/// ("<worker>|<lease_ms>" -> end of the wait, far ahead), so each of the next `n` adds to an
/// empty queue hands its job over.
async fn register_waiters(c: &mut redis::aio::MultiplexedConnection, q: &str, n: usize) {
    for w in 0..n {
        let _: i64 = redis::cmd("ZADD")
            .arg(format!("emq:{{{q}}}:waiters"))
            .arg(4_102_444_800_000u64)
            .arg(format!("w{w}|30000"))
            .query_async(c)
            .await
            .unwrap();
    }
}

fn options() -> JobOptions {
    JobOptions {
        attempts: 3,
        remove_on_complete: Removal::Now,
        ..JobOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_plain_add_writes_what_a_batch_writes() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let open = |name: &'static str| {
        let url = url.clone();
        async move {
            Queue::connect(ConnectOptions::new(url).guarded(true), name)
                .await
                .unwrap()
        }
    };
    let (one, bulk) = (open("one").await, open("bulk").await);
    let mut c = conn(&url).await;

    let id = one.add("n", json!({"a": 1}), options()).await.unwrap();
    let ids = bulk
        .add_bulk(vec![
            NewJob {
                name: "n".into(),
                data: json!({"a": 1}),
                options: options(),
            },
            NewJob {
                name: "m".into(),
                data: json!(2),
                options: JobOptions::default(),
            },
        ])
        .await
        .unwrap();

    // The same record, created stamp aside (both from the server's clock).
    let mut a = record(&mut c, &format!("emq:{{one}}:{id}")).await;
    let mut b = record(&mut c, &format!("emq:{{bulk}}:{}", ids[0])).await;
    for r in [&mut a, &mut b] {
        let created: u64 = r.remove("created_ms").unwrap().parse().unwrap();
        assert!(created > 1_700_000_000_000, "{created}");
    }
    assert_eq!(a, b);
    assert_eq!(a["attempts"], "3");
    assert!(a["opts"].contains("remove_on_complete"), "{a:?}");

    // Waiting, named by the marker (the list was empty), counted, and announced.
    assert_eq!(list(&mut c, "emq:{one}:wait").await, vec![id.to_string()]);
    assert_eq!(list(&mut c, "emq:{one}:marker").await, vec![id.to_string()]);
    assert_eq!(
        list(&mut c, "emq:{bulk}:marker").await,
        vec![ids[0].to_string()]
    );
    assert_eq!(
        hget(&mut c, "emq:{one}:meta", "added").await.as_deref(),
        Some("1")
    );
    assert_eq!(
        hget(&mut c, "emq:{bulk}:meta", "added").await.as_deref(),
        Some("2")
    );
    assert_eq!(added_events(&mut c, "one").await, vec![id.to_string()]);
    assert_eq!(
        added_events(&mut c, "bulk").await,
        vec![format!("{} {}", ids[0], ids[1])]
    );
    assert_eq!(one.get(id).await.unwrap().unwrap().data, json!({"a": 1}));

    // Idempotent: the same id again changes nothing (record, list, counter, events).
    let before = record(&mut c, &format!("emq:{{one}}:{id}")).await;
    let again = JobOptions {
        id: Some(id),
        ..options()
    };
    assert_eq!(one.add("other", json!(9), again).await.unwrap(), id);
    assert_eq!(record(&mut c, &format!("emq:{{one}}:{id}")).await, before);
    assert_eq!(list(&mut c, "emq:{one}:wait").await.len(), 1);
    assert_eq!(
        hget(&mut c, "emq:{one}:meta", "added").await.as_deref(),
        Some("1")
    );
    assert_eq!(added_events(&mut c, "one").await.len(), 1);

    // Paused: to the paused list, no marker.
    let paused = open("paused").await;
    paused.pause().await.unwrap();
    let p = paused
        .add("n", json!(1), JobOptions::default())
        .await
        .unwrap();
    assert_eq!(
        list(&mut c, "emq:{paused}:paused").await,
        vec![p.to_string()]
    );
    assert!(list(&mut c, "emq:{paused}:wait").await.is_empty());
    assert!(list(&mut c, "emq:{paused}:marker").await.is_empty());
    let counts = paused.counts().await.unwrap();
    assert_eq!((counts.waiting, counts.paused), (0, 1), "{counts:?}");

    for q in [&one, &bulk, &paused] {
        let r = q.audit().await.unwrap();
        assert!(r.ok(), "{:?}", r.problems);
    }
}

/// A lease an add handed over: "<16 digits of the server's microseconds>.h<place>|<ms>|a".
fn assert_handoff_lease(lease: &str, place: usize) {
    let (token, rest) = lease.split_once('|').expect(lease);
    let (clock, at) = token.split_once('.').expect(lease);
    assert!(
        clock.len() == 16 && clock.bytes().all(|b| b.is_ascii_digit()),
        "{lease}"
    );
    assert_eq!(at, format!("h{place}"), "{lease}");
    let (ms, ahead) = rest.split_once('|').expect(lease);
    assert_eq!(ahead, "a", "{lease}");
    assert_eq!(
        ms.parse::<u64>().unwrap(),
        clock.parse::<u64>().unwrap() / 1000,
        "{lease}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_over_job_is_leased_with_the_servers_exact_microseconds() {
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let mut c = conn(&url).await;
    for (name, n) in [("hand-one", 1usize), ("hand-bulk", 2)] {
        let q = Queue::connect(ConnectOptions::new(url.clone()).guarded(true), name)
            .await
            .unwrap();
        // Registrations as wait_register.lua writes them ("<worker>|<lease_ms>" -> end of the
        // wait), one per job, so each add hands its job over.
        register_waiters(&mut c, name, n).await;
        let ids = if n == 1 {
            vec![q.add("h", json!(1), JobOptions::default()).await.unwrap()]
        } else {
            let job = |i: i64| NewJob {
                name: "h".into(),
                data: json!(i),
                options: JobOptions::default(),
            };
            q.add_bulk(vec![job(1), job(2)]).await.unwrap()
        };
        assert_eq!(
            list(&mut c, &format!("emq:{{{name}}}:handoff")).await.len(),
            n
        );
        assert!(list(&mut c, &format!("emq:{{{name}}}:wait"))
            .await
            .is_empty());
        for (place, id) in ids.iter().enumerate() {
            let lease = hget(&mut c, &format!("emq:{{{name}}}:leases"), &id.to_string())
                .await
                .expect("a lease");
            assert_handoff_lease(&lease, place);
        }
    }
}

/// The arguments of the EVALSHA calls the server ran since the last look (its slow log, set to
/// log every command), oldest first.
async fn evalsha_args(c: &mut redis::aio::MultiplexedConnection) -> Vec<Vec<String>> {
    let entries: Vec<redis::Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(1000)
        .query_async(c)
        .await
        .unwrap();
    let _: () = redis::cmd("SLOWLOG")
        .arg("RESET")
        .query_async(c)
        .await
        .unwrap();
    let mut calls = Vec::new();
    for e in entries.iter().rev() {
        let redis::Value::Array(fields) = e else {
            panic!("{e:?}")
        };
        let args: Vec<String> = redis::from_redis_value(fields[3].clone()).unwrap();
        if args[0].eq_ignore_ascii_case("evalsha") {
            calls.push(args);
        }
    }
    calls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defaults_are_not_sent_and_the_record_is_add_luas() {
    // add_one.lua takes name and data, then opts, attempts, max_events only up to the last that
    // is not its default, and the id from the record key. For each shape of options, the record
    // and reply are add.lua's, and the call carries exactly the arguments the shape needs.
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let mut c = conn(&url).await;
    let rmc = JobOptions {
        remove_on_complete: Removal::Now,
        ..JobOptions::default()
    };
    let cases = [
        ("defaults", JobOptions::default(), 0),
        ("rmc", rmc.clone(), 1),
        ("attempts", options(), 2),
    ];
    for (name, opts, tail) in cases {
        let one = Queue::connect(ConnectOptions::new(url.clone()).guarded(true), name)
            .await
            .unwrap();
        let bulk_name = format!("{name}-bulk");
        let bulk = Queue::connect(ConnectOptions::new(url.clone()).guarded(true), &bulk_name)
            .await
            .unwrap();
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-log-slower-than")
            .arg(0)
            .query_async(&mut c)
            .await
            .unwrap();
        evalsha_args(&mut c).await;
        let id = one.add("n", json!({"a": 1}), opts.clone()).await.unwrap();
        let calls = evalsha_args(&mut c).await;
        let add = calls.last().expect("the add's EVALSHA");
        // EVALSHA sha 12 <12 keys> name data <tail>
        assert_eq!(add[2], "12", "{name}: {add:?}");
        assert_eq!(add[14], format!("emq:{{{name}}}:{id}"), "{name}");
        assert_eq!(add[15..17], ["n", "{\"a\":1}"], "{name}: {add:?}");
        assert_eq!(add.len(), 17 + tail, "{name}: {add:?}");
        let ids = bulk
            .add_bulk(vec![
                NewJob {
                    name: "n".into(),
                    data: json!({"a": 1}),
                    options: opts.clone(),
                },
                NewJob {
                    name: "m".into(),
                    data: json!(2),
                    options: JobOptions::default(),
                },
            ])
            .await
            .unwrap();
        let mut a = record(&mut c, &format!("emq:{{{name}}}:{id}")).await;
        let mut b = record(&mut c, &format!("emq:{{{bulk_name}}}:{}", ids[0])).await;
        for r in [&mut a, &mut b] {
            r.remove("created_ms").expect("a created stamp");
        }
        assert_eq!(a, b, "{name}");
        assert_eq!(a.contains_key("opts"), tail >= 1, "{name}: {a:?}");
        assert_eq!(a.contains_key("attempts"), tail >= 2, "{name}: {a:?}");
        // The reply for an id already there names it, as add.lua's does.
        let again = JobOptions {
            id: Some(id),
            ..opts.clone()
        };
        assert_eq!(one.add("x", json!(0), again).await.unwrap(), id);
        assert_eq!(list(&mut c, &format!("emq:{{{name}}}:wait")).await.len(), 1);
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-log-slower-than")
            .arg(10_000)
            .query_async(&mut c)
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tail_of_defaults_stores_nothing_and_a_cap_trims_the_stream() {
    // Called directly: "{}" and "1" sent only to reach a later argument are not stored, and a
    // max_events sent caps the events stream (XADD MAXLEN ~ trims whole nodes of 100 entries).
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let store = emq::Store::connect(ConnectOptions::new(url.clone()).guarded(true))
        .await
        .unwrap();
    let mut c = conn(&url).await;
    let q = Queue::connect(ConnectOptions::new(url.clone()).guarded(true), "capped")
        .await
        .unwrap();
    let name = QueueName::new("capped").unwrap();
    for i in 0..300 {
        let id = q.mint_id().unwrap();
        let reply: Vec<String> = script::ADD_ONE
            .on(&name, Some(id))
            .unwrap()
            .arg("n")
            .arg(i.to_string())
            .arg("{}")
            .arg("1")
            .arg(5)
            .invoke(&store)
            .await
            .unwrap();
        assert!(reply.is_empty(), "{reply:?}");
        if i == 0 {
            let r = record(&mut c, &format!("emq:{{capped}}:{id}")).await;
            let mut fields: Vec<&str> = r.keys().map(String::as_str).collect();
            fields.sort();
            assert_eq!(fields, ["created_ms", "data", "name"], "{r:?}");
            assert_eq!(q.get(id).await.unwrap().unwrap().data, json!(0));
        }
    }
    let len: u64 = redis::cmd("XLEN")
        .arg("emq:{capped}:events")
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(len < 300, "the cap of 5 trims: {len} events of 300");
    assert_eq!(list(&mut c, "emq:{capped}:wait").await.len(), 300);
    let r = q.audit().await.unwrap();
    assert!(r.ok(), "{:?}", r.problems);
}

/// A hand-off entry's netstrings ("<len>:<bytes>"…): the id, the token, then the record's fields.
fn netstrings(entry: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = entry;
    while !rest.is_empty() {
        let (len, tail) = rest.split_once(':').expect(entry);
        let len: usize = len.parse().expect(entry);
        out.push(tail[..len].to_string());
        rest = &tail[len..];
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_over_job_carries_add_luas_entry_and_events() {
    // The hand-off branch pushes the job on the wait list first and takes it back: what is left
    // is add.lua's hand-off (entry, lease, active, events, empty wait list, no marker).
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let mut c = conn(&url).await;
    let mut seen = Vec::new();
    for (name, n) in [("given-one", 1usize), ("given-bulk", 2)] {
        let q = Queue::connect(ConnectOptions::new(url.clone()).guarded(true), name)
            .await
            .unwrap();
        register_waiters(&mut c, name, n).await;
        let job = |i: i64| NewJob {
            name: "h".into(),
            data: json!(i),
            options: options(),
        };
        let id = if n == 1 {
            q.add("h", json!(1), options()).await.unwrap()
        } else {
            q.add_bulk(vec![job(1), job(2)]).await.unwrap()[0]
        };
        let entries = list(&mut c, &format!("emq:{{{name}}}:handoff")).await;
        assert_eq!(entries.len(), n, "{name}");
        // LPUSH: the first job's entry is the last in the list.
        let parts = netstrings(entries.last().unwrap());
        assert_eq!(parts[0], id.to_string(), "{name}");
        let lease = hget(&mut c, &format!("emq:{{{name}}}:leases"), &id.to_string())
            .await
            .expect("a lease");
        assert_eq!(lease.split('|').next(), Some(parts[1].as_str()), "{name}");
        assert_handoff_lease(&lease, 0);
        let mut fields = parts[2..].to_vec();
        let at = fields.iter().position(|f| f == "created_ms").unwrap();
        fields.drain(at..at + 2);
        seen.push(fields);
        assert!(list(&mut c, &format!("emq:{{{name}}}:wait"))
            .await
            .is_empty());
        assert!(list(&mut c, &format!("emq:{{{name}}}:marker"))
            .await
            .is_empty());
        let active: Option<f64> = redis::cmd("ZSCORE")
            .arg(format!("emq:{{{name}}}:active"))
            .arg(id.to_string())
            .query_async(&mut c)
            .await
            .unwrap();
        assert!(active.is_some(), "{name}");
        let evs: Vec<(String, HashMap<String, String>)> = redis::cmd("XRANGE")
            .arg(format!("emq:{{{name}}}:events"))
            .arg("-")
            .arg("+")
            .query_async(&mut c)
            .await
            .unwrap();
        let kinds: Vec<&str> = evs.iter().map(|(_, f)| f["ev"].as_str()).collect();
        assert_eq!(kinds, ["added", "active"], "{name}");
    }
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[0][..2], ["name", "h"]);
    assert!(seen[0].contains(&"opts".to_string()) && seen[0].contains(&"attempts".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limited_queue_hands_nothing_off_and_an_unlimited_one_does() {
    // add_one.lua reads the queue's limits only once the job made the wait list non-empty; with
    // any limit set (or the queue paused) a blocked worker is not handed the job: it waits, and
    // the marker (unless paused) names it. Without a limit the same add is handed off.
    use emq::{GroupRateLimit, RateLimit};
    let server = RedisServer::start().expect("redis-server");
    let url = server.url();
    let mut c = conn(&url).await;
    let window = std::time::Duration::from_secs(60);
    for case in ["concurrency", "rate", "group_rate", "paused", "none"] {
        let q = Queue::connect(ConnectOptions::new(url.clone()).guarded(true), case)
            .await
            .unwrap();
        match case {
            "concurrency" => q.set_global_concurrency(Some(5)).await.unwrap(),
            "rate" => q
                .set_rate_limit(Some(RateLimit { max: 5, window }))
                .await
                .unwrap(),
            "group_rate" => q
                .set_group_rate_limit(Some(GroupRateLimit { max: 5, window }))
                .await
                .unwrap(),
            "paused" => q.pause().await.unwrap(),
            _ => {}
        }
        register_waiters(&mut c, case, 1).await;
        let id = q.add("n", json!(1), JobOptions::default()).await.unwrap();
        let handoff = list(&mut c, &format!("emq:{{{case}}}:handoff")).await;
        let wait = list(&mut c, &format!("emq:{{{case}}}:wait")).await;
        let paused = list(&mut c, &format!("emq:{{{case}}}:paused")).await;
        let marker = list(&mut c, &format!("emq:{{{case}}}:marker")).await;
        let waiters: u64 = redis::cmd("ZCARD")
            .arg(format!("emq:{{{case}}}:waiters"))
            .query_async(&mut c)
            .await
            .unwrap();
        let ids = vec![id.to_string()];
        match case {
            "none" => {
                assert_eq!(handoff.len(), 1, "{case}");
                assert!(wait.is_empty() && marker.is_empty(), "{case}");
                assert_eq!(waiters, 0, "{case}");
            }
            "paused" => {
                assert!(
                    handoff.is_empty() && wait.is_empty() && marker.is_empty(),
                    "{case}"
                );
                assert_eq!(paused, ids, "{case}");
                assert_eq!(waiters, 1, "{case}");
            }
            _ => {
                assert!(handoff.is_empty(), "{case}");
                assert_eq!((wait, marker), (ids.clone(), ids), "{case}");
                assert_eq!(waiters, 1, "{case}");
            }
        }
        let r = q.audit().await.unwrap();
        assert!(r.ok(), "{case}: {:?}", r.problems);
    }
}
