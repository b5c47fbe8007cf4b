//! `emq groups <queue>`: the fair groups as a table and `--json`, sorted by backlog (the default),
//! running jobs or name, paged; each action (pause, resume, weight, concurrency and max-waiting for
//! one group or as the default) read back from the core; bad input refused with the core's codes.

use emq::{ConnectOptions, GroupInfo, JobContext, JobOptions, Queue, Worker};
use serde_json::{json, Value};
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod common;
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

fn url() -> String {
    emq_harness::shared_standalone().url()
}

fn unique(prefix: &str) -> String {
    use std::sync::atomic::AtomicU32;
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// `emq --url <url> args…`, run off the async runtime.
async fn run(urls: &[String], args: &[&str]) -> Output {
    let mut all: Vec<String> = Vec::new();
    for u in urls {
        all.extend(["--url".to_string(), u.clone()]);
    }
    all.extend(args.iter().map(|a| a.to_string()));
    tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        common::run_emq(&refs, &[], RUN_TIMEOUT)
    })
    .await
    .unwrap()
}

async fn ok(urls: &[String], args: &[&str]) -> (String, String) {
    let out = run(urls, args).await;
    assert!(out.status.success(), "emq {args:?}: {out:?}");
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

async fn json_of(urls: &[String], args: &[&str]) -> Value {
    let (text, _) = ok(urls, args).await;
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("emq {args:?}: {e}:\n{text}"))
}

/// Runs a command that must fail; gives (exit code, the `error[<code>]` code, the message).
async fn refused(urls: &[String], args: &[&str]) -> (i32, String, String) {
    let out = run(urls, args).await;
    assert!(!out.status.success(), "emq {args:?} succeeded: {out:?}");
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    let last = stderr.lines().last().unwrap_or_default().to_string();
    let (code, message) = last
        .strip_prefix("error[")
        .and_then(|r| r.split_once("]: "))
        .unwrap_or_else(|| panic!("emq {args:?}: not a typed error: {stderr}"));
    assert!(out.stdout.is_empty(), "{out:?}");
    (
        out.status.code().unwrap(),
        code.to_string(),
        message.to_string(),
    )
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap().to_string())
        .collect()
}

async fn add_to(q: &Queue, group: &str, n: usize) {
    for i in 0..n {
        q.add(
            "job",
            json!({ "i": i }),
            JobOptions {
                group: Some(group.into()),
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    }
}

async fn group(q: &Queue, name: &str) -> GroupInfo {
    q.groups(0, 10_000)
        .await
        .unwrap()
        .into_iter()
        .find(|g| g.name == name)
        .unwrap_or_else(|| panic!("no group {name}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_lists_a_table_and_json_sorted_by_backlog_then_by_name() {
    let urls = vec![url()];
    let name = unique("cli-groups");
    let q = Queue::connect(ConnectOptions::new(url()), &name)
        .await
        .unwrap();
    add_to(&q, "alpha", 3).await;
    add_to(&q, "bravo", 5).await;
    add_to(&q, "charlie", 1).await;
    q.set_group_weight("charlie", 4).await.unwrap();
    q.set_group_concurrency(Some(2), Some("charlie"))
        .await
        .unwrap();
    q.set_group_max_waiting(Some(100), None).await.unwrap();
    q.pause_group("bravo").await.unwrap();

    // --json: the backlog first, every field.
    let rows = json_of(&urls, &["groups", &name, "--json"]).await;
    assert_eq!(names(&rows), ["bravo", "alpha", "charlie"], "{rows}");
    assert_eq!(
        rows[0],
        json!({"name": "bravo", "waiting": 5, "running": 0, "weight": 1, "concurrency": null,
               "max_waiting": 100, "paused": true})
    );
    assert_eq!(
        rows[2],
        json!({"name": "charlie", "waiting": 1, "running": 0, "weight": 4, "concurrency": 2,
               "max_waiting": 100, "paused": false})
    );
    // --sort name, and paging.
    let rows = json_of(&urls, &["groups", &name, "--json", "--sort", "name"]).await;
    assert_eq!(names(&rows), ["alpha", "bravo", "charlie"]);
    let rows = json_of(
        &urls,
        &["groups", &name, "--json", "--offset", "1", "--limit", "1"],
    )
    .await;
    assert_eq!(names(&rows), ["alpha"], "the second by backlog");
    let rows = json_of(
        &urls,
        &[
            "groups", &name, "--json", "--sort", "name", "--offset", "2", "--limit", "5",
        ],
    )
    .await;
    assert_eq!(names(&rows), ["charlie"]);

    // The table: a header, one row per group in backlog order, caps and paused in words.
    let (table, stderr) = ok(&urls, &["groups", &name]).await;
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        [
            "GROUP",
            "WAITING",
            "RUNNING",
            "WEIGHT",
            "CONCURRENCY",
            "MAX",
            "WAITING",
            "PAUSED"
        ],
        "{table}"
    );
    let cells = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
    assert_eq!(
        cells(lines[1]),
        ["bravo", "5", "0", "1", "-", "100", "yes"],
        "{table}"
    );
    assert_eq!(
        cells(lines[2]),
        ["alpha", "3", "0", "1", "-", "100", "no"],
        "{table}"
    );
    assert_eq!(
        cells(lines[3]),
        ["charlie", "1", "0", "4", "2", "100", "no"],
        "{table}"
    );
    // The columns line up: every row's waiting count ends where the header's WAITING does.
    let end = lines[0].find("WAITING").unwrap() + "WAITING".len();
    for l in &lines[1..] {
        assert!(l[..end].ends_with(|c: char| c.is_ascii_digit()), "{table}");
        assert_eq!(l.as_bytes()[end], b' ', "{table}");
    }
    assert!(
        stderr.contains("3 group(s) shown of 3") && stderr.contains("by waiting"),
        "{stderr}"
    );
    assert!(stderr.contains("limit 50"), "the default limit: {stderr}");

    // A queue without groups: a header and no rows.
    let (empty, _) = ok(&urls, &["groups", &unique("cli-nogroups")]).await;
    assert_eq!(empty.lines().count(), 1, "{empty}");
    let rows = json_of(&urls, &["groups", &unique("cli-nogroups"), "--json"]).await;
    assert_eq!(rows, json!([]));
    q.obliterate(true).await.unwrap();
}

/// Set by the test when the held jobs may finish.
static RELEASE: AtomicBool = AtomicBool::new(false);

async fn hold(_job: JobContext) -> Result<Value, emq::HandlerError> {
    while !RELEASE.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(json!(null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_sorts_by_running_jobs() {
    let urls = vec![url()];
    let name = unique("cli-grun");
    let q = Queue::connect(ConnectOptions::new(url()), &name)
        .await
        .unwrap();
    // a: 3 jobs, b: 1, c: 5 but paused. Three slots: a runs 2 or 3, b 1 or 0, c none.
    add_to(&q, "a", 3).await;
    add_to(&q, "b", 1).await;
    add_to(&q, "c", 5).await;
    q.pause_group("c").await.unwrap();
    let worker = Worker::builder(q.clone())
        .concurrency(3)
        .handler(hold)
        .run()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        let all = q.groups(0, 100).await.unwrap();
        if all.iter().map(|g| g.running).sum::<u64>() == 3 {
            break;
        }
        assert!(Instant::now() < until, "never 3 running: {all:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let rows = json_of(&urls, &["groups", &name, "--json", "--sort", "running"]).await;
    assert_eq!(names(&rows), ["a", "b", "c"], "{rows}");
    assert!(rows[0]["running"].as_u64().unwrap() >= 2, "{rows}");
    assert_eq!(rows[2]["running"], 0, "the paused group runs nothing");
    let rows = json_of(&urls, &["groups", &name, "--json"]).await;
    assert_eq!(names(&rows)[0], "c", "the largest backlog first: {rows}");
    let (table, _) = ok(&urls, &["groups", &name, "--sort", "running"]).await;
    let first: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(first[0], "a", "{table}");
    RELEASE.store(true, Ordering::SeqCst);
    worker.close().await.unwrap();
    q.obliterate(true).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_action_changes_what_the_core_reads_back() {
    let urls = vec![url()];
    let name = unique("cli-gact");
    let q = Queue::connect(ConnectOptions::new(url()), &name)
        .await
        .unwrap();
    add_to(&q, "t1", 2).await;
    add_to(&q, "t2", 1).await;

    let (said, _) = ok(&urls, &["groups", &name, "pause", "t1"]).await;
    assert_eq!(said.trim(), format!("paused group t1 in queue {name}"));
    assert!(group(&q, "t1").await.paused);
    assert!(!group(&q, "t2").await.paused);
    let (said, _) = ok(&urls, &["groups", &name, "resume", "t1"]).await;
    assert_eq!(said.trim(), format!("resumed group t1 in queue {name}"));
    assert!(!group(&q, "t1").await.paused);

    let (said, _) = ok(&urls, &["groups", &name, "weight", "t1", "7"]).await;
    assert_eq!(
        said.trim(),
        format!("set the weight of group t1 in queue {name} to 7")
    );
    assert_eq!(group(&q, "t1").await.weight, 7);
    assert_eq!(group(&q, "t2").await.weight, 1);

    // concurrency: one group's own cap, the default of every group, and lifting one.
    ok(&urls, &["groups", &name, "concurrency", "t1", "2"]).await;
    assert_eq!(group(&q, "t1").await.concurrency, Some(2));
    assert_eq!(group(&q, "t2").await.concurrency, None);
    let (said, _) = ok(&urls, &["groups", &name, "concurrency", "5"]).await;
    assert_eq!(
        said.trim(),
        format!("set the concurrency of every group (the default) in queue {name} to 5")
    );
    assert_eq!(group(&q, "t1").await.concurrency, Some(2), "its own wins");
    assert_eq!(group(&q, "t2").await.concurrency, Some(5), "the default");
    let (said, _) = ok(&urls, &["groups", &name, "concurrency", "t1", "none"]).await;
    assert_eq!(
        said.trim(),
        format!("lifted the concurrency cap of group t1 in queue {name}")
    );
    assert_eq!(
        group(&q, "t1").await.concurrency,
        Some(5),
        "back to the default"
    );
    ok(&urls, &["groups", &name, "concurrency", "none"]).await;
    assert_eq!(group(&q, "t2").await.concurrency, None);

    // max-waiting: a default cap of 2 refuses the third waiting job of a group (group_full).
    let (said, _) = ok(&urls, &["groups", &name, "max-waiting", "2"]).await;
    assert_eq!(
        said.trim(),
        format!("set the most waiting jobs of every group (the default) in queue {name} to 2")
    );
    assert_eq!(group(&q, "t2").await.max_waiting, Some(2));
    ok(&urls, &["add", &name, "job", "--group", "t2"]).await;
    let (exit, code, message) = refused(&urls, &["add", &name, "job", "--group", "t2"]).await;
    assert_eq!((exit, code.as_str()), (1, "group_full"), "{message}");
    assert_eq!(group(&q, "t2").await.waiting, 2);
    ok(&urls, &["groups", &name, "max-waiting", "t2", "3"]).await;
    assert_eq!(group(&q, "t2").await.max_waiting, Some(3));
    ok(&urls, &["add", &name, "job", "--group", "t2"]).await;
    ok(&urls, &["groups", &name, "max-waiting", "t2", "none"]).await;
    ok(&urls, &["groups", &name, "max-waiting", "none"]).await;
    let t2 = group(&q, "t2").await;
    assert_eq!((t2.waiting, t2.max_waiting), (3, None));

    // The table shows what was set.
    let rows = json_of(&urls, &["groups", &name, "--json", "--sort", "name"]).await;
    assert_eq!(rows[0]["name"], "t1");
    assert_eq!(rows[0]["weight"], 7);
    q.obliterate(true).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_with_the_cores_codes() {
    let urls = vec![url()];
    let name = unique("cli-gbad");
    let q = Queue::connect(ConnectOptions::new(url()), &name)
        .await
        .unwrap();
    add_to(&q, "t1", 1).await;
    for (args, want) in [
        (vec!["weight", "t1", "0"], "1 to 1000"),
        (vec!["weight", "t1", "1001"], "1 to 1000"),
        (vec!["weight", "t1", "99999999999"], "1 to 1000"),
        (vec!["weight", "t1", "-3"], "whole number"),
        (vec!["weight", "t1", "heavy"], "whole number"),
        (vec!["concurrency", "0"], "from 1 to"),
        (vec!["concurrency", "t1", "5000000"], "from 1 to"),
        (vec!["concurrency", "t1", "lots"], "whole number"),
        (vec!["max-waiting", "t1", "0"], "from 1 to"),
        (vec!["max-waiting", "-1"], "whole number"),
        (vec!["pause", ""], "group must be 1 to 256 bytes"),
    ] {
        let mut all = vec!["groups", name.as_str()];
        all.extend(&args);
        let (exit, code, message) = refused(&urls, &all).await;
        assert_eq!(
            (exit, code.as_str()),
            (2, "invalid_option"),
            "{args:?}: {message}"
        );
        assert!(message.contains(want), "{args:?}: {message}");
    }
    let long = "g".repeat(257);
    let (exit, code, _) = refused(&urls, &["groups", &name, "weight", &long, "2"]).await;
    assert_eq!((exit, code.as_str()), (2, "invalid_option"));
    // Nothing was changed by the refused commands.
    let t1 = group(&q, "t1").await;
    assert_eq!(
        (t1.weight, t1.concurrency, t1.max_waiting, t1.paused),
        (1, None, None, false)
    );
    let (exit, code, _) = refused(&urls, &["groups", "bad name!", "--json"]).await;
    assert_eq!((exit, code.as_str()), (2, "invalid_queue_name"));
    // A usage error is clap's (exit 2, its own message).
    let out = run(&urls, &["groups", &name, "--sort", "size"]).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = run(&urls, &["groups", &name, "weight", "t1"]).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    q.obliterate(true).await.unwrap();
}

#[test]
fn the_help_shows_the_actions_and_examples() {
    let out = common::run_emq(&["groups", "--help"], &[], RUN_TIMEOUT);
    assert!(out.status.success(), "{out:?}");
    let help = String::from_utf8(out.stdout).unwrap();
    for want in [
        "pause",
        "resume",
        "weight",
        "concurrency",
        "max-waiting",
        "--sort",
        "[default: waiting]",
        "[default: 50]",
        "emq groups emails weight tenant-42 3",
        "emq groups emails concurrency 2",
    ] {
        assert!(help.contains(want), "{want:?} missing:\n{help}");
    }
    let out = common::run_emq(&["groups", "q", "concurrency", "--help"], &[], RUN_TIMEOUT);
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("[GROUP] <N|none>"), "{help}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_cluster_groups_are_listed_and_set() {
    let urls = emq_harness::shared_cluster().urls();
    let name = unique("cli-gcl");
    let q = Queue::connect(ConnectOptions::seeds(urls.clone()), &name)
        .await
        .unwrap();
    add_to(&q, "small", 1).await;
    add_to(&q, "large", 3).await;
    ok(&urls, &["groups", &name, "weight", "small", "9"]).await;
    ok(&urls, &["groups", &name, "pause", "large"]).await;
    let rows = json_of(&urls, &["groups", &name, "--json"]).await;
    assert_eq!(names(&rows), ["large", "small"], "{rows}");
    assert_eq!(
        (&rows[0]["paused"], &rows[1]["weight"]),
        (&json!(true), &json!(9))
    );
    let (exit, code, _) = refused(&urls, &["groups", &name, "concurrency", "0"]).await;
    assert_eq!((exit, code.as_str()), (2, "invalid_option"));
    q.obliterate(true).await.unwrap();
}
