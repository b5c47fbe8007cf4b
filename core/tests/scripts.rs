//! Scripts against real servers: the undeclared-key guard fires on bad scripts and passes good ones
//! on both topologies; EVALSHA survives SCRIPT FLUSH and a server restart, for single and pipelined
//! calls; the key table the guard reads matches the server's COMMAND INFO; the tree has no raw
//! `redis.call` outside the guard.

mod common;

use emq::testing::script::{self, Script};
use emq::{ConnectOptions, ErrorCode, Family, QueueName, Store};

static BAD_ARGV_BASE: Script =
    Script::new("bad_argv_base", include_str!("fixtures/bad_argv_base.lua"));
static BAD_DECLARED_ROOT: Script = Script::new(
    "bad_declared_root",
    include_str!("fixtures/bad_declared_root.lua"),
);
static BAD_MOVABLE: Script = Script::new("bad_movable", include_str!("fixtures/bad_movable.lua"));
static GOOD_DECLARED: Script =
    Script::new("good_declared", include_str!("fixtures/good_declared.lua"));

#[tokio::test]
async fn guard_fails_keys_built_from_argv_or_a_declared_root() {
    for (topology, store) in common::both().await {
        let q = QueueName::new(&common::unique("guard")).unwrap();
        let base = format!("emq:{}:", q.braced());

        let e = BAD_ARGV_BASE
            .prepare()
            .key(&q.key(Family::Wait))
            .arg(&base)
            .invoke::<Option<String>>(&store)
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::UndeclaredKey, "{topology}: {e}");
        assert!(
            e.message().contains(&format!("{base}lock")),
            "{topology}: {e}"
        );

        let e = BAD_DECLARED_ROOT
            .prepare()
            .key(&q.key(Family::Wait))
            .invoke::<Option<String>>(&store)
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::UndeclaredKey, "{topology}: {e}");
        assert!(
            e.message().contains(&format!("{base}meta")),
            "{topology}: {e}"
        );

        let e = BAD_MOVABLE
            .prepare()
            .key(&q.key(Family::Delayed))
            .key(&q.key(Family::Completed))
            .arg(format!("{base}failed"))
            .invoke::<i64>(&store)
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::UndeclaredKey, "{topology}: {e}");

        let n: i64 = GOOD_DECLARED
            .prepare()
            .key(&q.key(Family::Delayed))
            .key(&q.key(Family::Prioritized))
            .key(&q.key(Family::Completed))
            .invoke(&store)
            .await
            .unwrap_or_else(|e| panic!("{topology}: {e}"));
        assert_eq!(n, 2, "{topology}");
    }
}

#[tokio::test]
async fn unguarded_mode_does_not_check() {
    // The same bad script passes unguarded on one node: exactly the break the guard exists to catch.
    let url = emq_harness::shared_standalone().url();
    let store = Store::connect(ConnectOptions::new(url).guarded(false))
        .await
        .unwrap();
    let q = QueueName::new(&common::unique("unguarded")).unwrap();
    let r: Option<String> = BAD_DECLARED_ROOT
        .prepare()
        .key(&q.key(Family::Wait))
        .invoke(&store)
        .await
        .unwrap();
    assert_eq!(r, None);
}

#[tokio::test]
async fn keys_of_two_queues_are_refused_before_sending() {
    let store = common::standalone().await;
    let a = QueueName::new("slot-a").unwrap();
    let b = (0..)
        .map(|i| QueueName::new(&format!("slot-b{i}")).unwrap())
        .find(|b| b.slot() != a.slot())
        .unwrap();
    let e = GOOD_DECLARED
        .prepare()
        .key(&a.key(Family::Delayed))
        .key(&b.key(Family::Prioritized))
        .key(&a.key(Family::Completed))
        .invoke::<i64>(&store)
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::CrossSlot, "{e}");
    // Wrong counts against the header are refused too.
    let e = GOOD_DECLARED
        .prepare()
        .key(&a.key(Family::Delayed))
        .invoke::<i64>(&store)
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Internal, "{e}");
}

#[tokio::test]
async fn scripts_survive_flush_and_restart() {
    let mut server = emq_harness::RedisServer::start().unwrap();
    let store = Store::connect(ConnectOptions::new(server.url()).guarded(true))
        .await
        .unwrap();
    let q = QueueName::new("survivor").unwrap();
    let run = |store: Store| {
        let q = q.clone();
        async move {
            GOOD_DECLARED
                .prepare()
                .key(&q.key(Family::Delayed))
                .key(&q.key(Family::Prioritized))
                .key(&q.key(Family::Completed))
                .invoke::<i64>(&store)
                .await
        }
    };
    assert_eq!(run(store.clone()).await.unwrap(), 2);
    let mut conn = store.conn();
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(run(store.clone()).await.unwrap(), 2);

    server.restart().unwrap();
    // The multiplexed connection reconnects on its own; the script cache is empty after the restart.
    let mut last = None;
    for _ in 0..50 {
        match run(store.clone()).await {
            Ok(n) => {
                last = Some(n);
                break;
            }
            Err(e) => {
                assert_eq!(e.code(), ErrorCode::ServerUnavailable, "{e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
    assert_eq!(last, Some(2));
}

async fn flush_scripts(store: &Store) {
    let mut conn = store.conn();
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut conn)
        .await
        .unwrap();
}

/// The one NOSCRIPT retry (`script/send.rs`) serves single calls and pipelines alike: after SCRIPT
/// FLUSH a pipelined bulk add (three add calls in one round trip), a single add, a pipelined drain,
/// and a pipeline of two scripts of which only the second is gone all succeed. On servers of its
/// own: a flush on the shared ones could land between another test's load and its one retry.
#[tokio::test]
async fn single_and_pipelined_calls_survive_script_flush() {
    let server = emq_harness::RedisServer::start().unwrap();
    let cluster = emq_harness::RedisCluster::start(3).unwrap();
    let stores = [
        (
            "standalone",
            Store::connect(ConnectOptions::new(server.url()).guarded(true)).await,
        ),
        (
            "cluster",
            Store::connect(ConnectOptions::seeds(cluster.urls()).guarded(true)).await,
        ),
    ];
    for (topology, store) in stores {
        let store = store.unwrap();
        let q = common::queue_on(&store, "flushed").await;
        flush_scripts(&store).await;
        let ids = q.add_bulk(common::jobs("bulk", 600)).await.unwrap();
        assert_eq!(ids.len(), 600, "{topology}");
        flush_scripts(&store).await;
        let one = q
            .add("one", serde_json::json!(1), emq::JobOptions::default())
            .await
            .unwrap();
        assert_eq!(q.counts().await.unwrap().waiting, 601, "{topology}");
        flush_scripts(&store).await;
        assert_eq!(q.drain(false).await.unwrap(), 601, "{topology}");
        assert_eq!(q.counts().await.unwrap().waiting, 0, "{topology}");

        flush_scripts(&store).await;
        GOOD_DECLARED.load(&store).await.unwrap();
        let name = q.name().clone();
        let calls = [
            GOOD_DECLARED
                .prepare()
                .key(&name.key(Family::Delayed))
                .key(&name.key(Family::Prioritized))
                .key(&name.key(Family::Completed)),
            script::JOB_STATE.on(&name, Some(one)).unwrap().arg(one),
        ];
        let replies: Vec<redis::Value> = script::pipeline(&store, &calls).await.unwrap();
        assert_eq!(replies.len(), 2, "{topology}");
        assert_eq!(replies[0], redis::Value::Int(2), "{topology}");
    }
}

#[tokio::test]
async fn dead_server_is_a_typed_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = Store::connect(ConnectOptions::new(format!("redis://127.0.0.1:{port}")))
        .await
        .err()
        .expect("nothing listens there");
    assert_eq!(e.code(), ErrorCode::ServerUnavailable, "{e}");
}

/// Renders the guard's key table from the server's `COMMAND` reply.
fn render_keyspec(reply: &redis::Value) -> String {
    use redis::Value;
    fn text(v: &Value) -> String {
        match v {
            Value::BulkString(b) => String::from_utf8_lossy(b).to_string(),
            Value::SimpleString(s) => s.clone(),
            other => panic!("unexpected {other:?}"),
        }
    }
    fn int(v: &Value) -> i64 {
        match v {
            Value::Int(i) => *i,
            other => panic!("unexpected {other:?}"),
        }
    }
    fn resolver(name: &str) -> Option<&'static str> {
        Some(match name {
            "zunionstore" | "zinterstore" | "zdiffstore" => "dest_numkeys",
            "zunion" | "zinter" | "zdiff" | "zintercard" | "sintercard" | "lmpop" | "zmpop"
            | "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" => "numkeys1",
            "blmpop" | "bzmpop" => "numkeys2",
            "xread" | "xreadgroup" => "streams",
            "sort" | "sort_ro" | "georadius" | "georadiusbymember" => "store",
            _ => return None,
        })
    }
    let mut rows = Vec::new();
    fn walk(entries: &[Value], rows: &mut Vec<(String, String)>) {
        for e in entries {
            let Value::Array(f) = e else {
                panic!("entry {e:?}")
            };
            let name = text(&f[0]).to_lowercase();
            let flags: Vec<String> = match &f[2] {
                Value::Array(a) => a.iter().map(text).collect(),
                Value::Set(a) => a.iter().map(text).collect(),
                _ => vec![],
            };
            let (first, last, step) = (int(&f[3]), int(&f[4]), int(&f[5]));
            let subs = match f.get(9) {
                Some(Value::Array(s)) if !s.is_empty() => Some(s.clone()),
                _ => None,
            };
            if let Some(subs) = subs {
                rows.push((name.clone(), "'container'".to_string()));
                walk(&subs, rows);
                continue;
            }
            let value = if flags.iter().any(|f| f == "movablekeys") {
                match resolver(&name) {
                    Some(r) => format!("{{{first}, {last}, {step}, '{r}'}}"),
                    None => format!("{{{first}, {last}, {step}, 'unknown'}}"),
                }
            } else {
                format!("{{{first}, {last}, {step}}}")
            };
            rows.push((name, value));
        }
    }
    let Value::Array(entries) = reply else {
        panic!("COMMAND reply {reply:?}")
    };
    walk(entries, &mut rows);
    rows.sort();
    let mut out = String::from(
        "-- keyspec: key positions of every command, generated from the server's COMMAND INFO by\n\
         -- `EMQ_WRITE_KEYSPEC=1 cargo test -p emq --test scripts keyspec` (core/tests/scripts.rs).\n\
         -- {first, last, step[, resolver]} as COMMAND INFO gives them; a resolver names how the guard\n\
         -- finds the keys of a command with movable keys. Loaded only in guarded mode.\n\
         -- KEYS: none of its own. ARGV: none of its own.\n\
         local EMQ_KEYSPEC = {\n",
    );
    for (name, value) in rows {
        out.push_str(&format!("  ['{name}'] = {value},\n"));
    }
    out.push_str("}\n");
    out
}

#[tokio::test]
async fn keyspec_matches_the_servers_command_info() {
    // Unguarded: the guard itself needs the table this test writes.
    let url = emq_harness::shared_standalone().url();
    let store = Store::connect(ConnectOptions::new(url).guarded(false))
        .await
        .unwrap();
    let mut conn = store.conn();
    let reply: redis::Value = redis::cmd("COMMAND").query_async(&mut conn).await.unwrap();
    let rendered = render_keyspec(&reply);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/lua/lib/keyspec.lua");
    if std::env::var("EMQ_WRITE_KEYSPEC").as_deref() == Ok("1") {
        std::fs::write(path, &rendered).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap();
    if std::env::var("EMQ_EXPECT_SERVER").as_deref() == Ok("valkey") {
        // The table is generated from Redis; Valkey knows more commands (which no emq script
        // uses, and which the guard refuses by name). Every command both know must have the same
        // key positions, and every command of the table must exist on Valkey.
        let rows = |text: &str| -> std::collections::BTreeMap<String, String> {
            text.lines()
                .filter_map(|l| l.trim().strip_prefix("['"))
                .filter_map(|l| l.split_once("'] = "))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let (ours, theirs) = (rows(&committed), rows(&rendered));
        assert!(
            ours.len() > 200,
            "parsed {} rows of keyspec.lua",
            ours.len()
        );
        let differ: Vec<_> = ours
            .iter()
            .filter(|(k, v)| theirs.get(*k).is_some_and(|t| t != *v))
            .collect();
        let gone: Vec<_> = ours.keys().filter(|k| !theirs.contains_key(*k)).collect();
        assert!(
            differ.is_empty(),
            "key positions differ on Valkey: {differ:?}"
        );
        assert!(gone.is_empty(), "commands Valkey lacks: {gone:?}");
        eprintln!(
            "keyspec: {} commands agree with Valkey; {} are Valkey's only",
            ours.len(),
            theirs.len() - ours.len()
        );
        return;
    }
    assert!(
        committed == rendered,
        "lua/lib/keyspec.lua is stale; regenerate it with EMQ_WRITE_KEYSPEC=1"
    );
}

#[test]
fn no_raw_redis_call_outside_the_guard_and_every_script_registered() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/lua");
    let mut files = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(dir)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "lua") {
                files.push(p);
            }
        }
    }
    let mut registered: Vec<&str> = script::ALL.iter().map(|s| s.name()).collect();
    registered.sort();
    let mut top: Vec<String> = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        let in_lib = f.parent().unwrap().ends_with("lib");
        if name != "guard" {
            assert!(
                !text.contains("redis.call") && !text.contains("redis.pcall"),
                "{} calls redis directly; use call()/try_call() of lua/lib/guard.lua",
                f.display()
            );
        }
        if !in_lib {
            top.push(name.clone());
            let problems = script::lint(&name, &text);
            assert!(problems.is_empty(), "{problems:?}");
        }
    }
    top.sort();
    assert_eq!(
        top, registered,
        "every script in lua/ is in the registry, and nothing else"
    );
}
