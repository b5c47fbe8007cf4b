//! Server time of the dashboard's pages on big queues: one queue of 1,000,000 waiting jobs and 100
//! queues of 10,000 jobs each, on a private standalone server. Run by `bench/ui_bench.sh` (or by
//! hand: `cargo test -p emq-cli --release --test ui_bench -- --ignored --nocapture`); figures in
//! `bench/RESULTS.md` ("emq ui on big queues").
//!
//! Each page is requested `UI_BENCH_RUNS` times (default 7, at least 5); it prints the median and
//! the range of the server's own time (`Server-Timing: app;dur=…`, from the request reaching the
//! router to the response leaving it) and of the round trip seen by the client, as a Markdown
//! table. With `UI_BENCH_BASELINE=<path of another emq binary>` the same requests go to that
//! binary's `emq ui` too, on the same data, turn about, and the table has its column beside
//! (before/after a change). Then the server's own per-call cost of the commands a job's state
//! look-up makes (INFO commandstats). Bounded: 2,000,000 jobs built with add_bulk in chunks of
//! 10,000, 13 pages.

use emq::{ConnectOptions, JobOptions, NewJob, Queue};
use emq_harness::RedisServer;
use serde_json::json;
use std::time::Instant;

mod ui_support;
use ui_support::Ui;

/// (median, min, max) of a sample.
fn spread(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (median, v[0], v[n - 1])
}

/// Server times and round trips (ms) of `runs` requests of `path`.
fn measure(ui: &Ui, path: &str, runs: usize) -> (Vec<f64>, Vec<f64>) {
    let mut server = Vec::new();
    let mut round = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let r = ui.request("GET", path, &[], "");
        round.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        let dur = r
            .head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("server-timing: app;dur=")
                    .map(str::to_string)
            })
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no Server-Timing header: {}", r.head));
        server.push(dur);
    }
    (server, round)
}

async fn fill(q: &Queue, n: usize, name: impl Fn(usize) -> String) {
    let chunk = 10_000;
    let mut done = 0;
    while done < n {
        let k = (n - done).min(chunk);
        let jobs = (done..done + k)
            .map(|i| NewJob {
                name: name(i),
                data: json!({ "i": i }),
                options: JobOptions {
                    dedup: (i % 100_000 == 0).then(|| format!("key-{i}")),
                    ..JobOptions::default()
                },
            })
            .collect();
        q.add_bulk(jobs).await.unwrap();
        done += k;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run by bench/ui_bench.sh"]
async fn overview_and_queue_page_on_big_queues() {
    let runs: usize = std::env::var("UI_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
        .max(5);
    let server = RedisServer::start().unwrap();
    let url = server.url();
    let big = Queue::connect(ConnectOptions::new(url.clone()), "big")
        .await
        .unwrap();
    let t = Instant::now();
    // Names: "bench" but one in 100,000 "rare-<i>", for the name search.
    fill(&big, 1_000_000, |i| {
        if i % 100_000 == 99_999 {
            format!("rare-{i}")
        } else {
            "bench".into()
        }
    })
    .await;
    for i in 0..100 {
        let q = big.queue(&format!("q{i:03}")).unwrap();
        fill(&q, 10_000, |_| "bench".into()).await;
    }
    let fill_s = t.elapsed().as_secs_f64();
    // Oldest first: the oldest is at the wait list's right end, the newest at its left.
    let at = |i: u64| {
        let big = big.clone();
        async move { big.list_ids(emq::JobState::Waiting, i, 1).await.unwrap()[0] }
    };
    let (oldest, middle, newest) = (at(0).await, at(500_000).await, at(999_999).await);
    let some_id = oldest;
    let urls = vec![url.clone()];
    let baseline = std::env::var("UI_BENCH_BASELINE")
        .ok()
        .filter(|b| !b.is_empty());
    let (ui, before) = tokio::task::spawn_blocking(move || {
        let before = baseline.map(|b| Ui::start_bin(&b, &urls, &[], &[]));
        (Ui::start(&urls, &[], &[]), before)
    })
    .await
    .unwrap();
    let pages: Vec<(String, String)> = vec![
        (
            "overview (101 queues, 2,000,000 jobs)".into(),
            "/api/overview".into(),
        ),
        (
            "queue page, 1,000,000 waiting: first page (25 jobs)".into(),
            "/api/queues/big/jobs?state=waiting&offset=0&limit=25".into(),
        ),
        (
            "queue page, 1,000,000 waiting: page at offset 500,000".into(),
            "/api/queues/big/jobs?state=waiting&offset=500000&limit=25".into(),
        ),
        (
            "queue page, 1,000,000 waiting: last page (offset 999,975)".into(),
            "/api/queues/big/jobs?state=waiting&offset=999975&limit=25".into(),
        ),
        (
            "queue page, 10,000 waiting: first page".into(),
            "/api/queues/q050/jobs?state=waiting&offset=0&limit=25".into(),
        ),
        (
            "job page (record, logs, timeline of 10,000 stream entries, flow)".into(),
            format!("/api/queues/big/jobs/{some_id}"),
        ),
        (
            "find by id: the oldest of 1,000,000 waiting".into(),
            format!("/api/queues/big/find?by=id&text={oldest}"),
        ),
        (
            "find by id: the 500,000th of 1,000,000 waiting".into(),
            format!("/api/queues/big/find?by=id&text={middle}"),
        ),
        (
            "find by id: the newest of 1,000,000 waiting".into(),
            format!("/api/queues/big/find?by=id&text={newest}"),
        ),
        (
            "find by dedup key, 1,000,000 waiting".into(),
            "/api/queues/big/find?by=dedup&text=key-500000".into(),
        ),
        (
            "find by name, one scan window (5,000 ids) of 1,000,000 waiting".into(),
            "/api/queues/big/find?by=name&text=rare&state=waiting&offset=0".into(),
        ),
        ("schedulers (101 queues)".into(), "/api/schedulers".into()),
    ];
    let uis: Vec<std::sync::Arc<Ui>> = before
        .into_iter()
        .chain([ui])
        .map(std::sync::Arc::new)
        .collect();
    let compare = uis.len() == 2;
    let us = uis.clone();
    let rows = tokio::task::spawn_blocking(move || {
        // One warm-up request each (the first connection to each node, the scripts' first load).
        for u in &us {
            for (_, p) in &pages {
                let _ = measure(u, p, 1);
            }
        }
        pages
            .into_iter()
            .map(|(what, p)| {
                // Turn about: each binary's runs of a page under the same load.
                let mut got = vec![(Vec::new(), Vec::new()); us.len()];
                for _ in 0..runs {
                    for (i, u) in us.iter().enumerate() {
                        let (s, r) = measure(u, &p, 1);
                        got[i].0.extend(s);
                        got[i].1.extend(r);
                    }
                }
                let sp: Vec<_> = got
                    .into_iter()
                    .map(|(s, r)| (spread(s), spread(r)))
                    .collect();
                (what, sp)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    println!(
        "\nfilled 2,000,000 jobs in {fill_s:.1} s; {runs} requests per page, one after another\n"
    );
    if compare {
        println!("| page | before: server time, ms: median [min–max] | after: server time, ms: median [min–max] |");
        println!("|---|---:|---:|");
        for (what, sp) in &rows {
            let (b, a) = (sp[0].0, sp[1].0);
            println!(
                "| {what} | {:.1} [{:.1}–{:.1}] | **{:.1}** [{:.1}–{:.1}] |",
                b.0, b.1, b.2, a.0, a.1, a.2
            );
        }
    } else {
        println!("| page | server time, ms: median [min–max] | round trip, ms: median [min–max] |");
        println!("|---|---:|---:|");
        for (what, sp) in &rows {
            let (s, r) = sp[0];
            println!(
                "| {what} | **{:.1}** [{:.1}–{:.1}] | {:.1} [{:.1}–{:.1}] |",
                s.0, s.1, s.2, r.0, r.1, r.2
            );
        }
    }
    // The server's own cost per call of what a state look-up runs (commands a script makes are
    // counted too): the sorted-set and set checks against the list search.
    let stats = server.cli(&["INFO", "commandstats"]).unwrap();
    println!("\nserver time per call (INFO commandstats, whole run):");
    for cmd in [
        "zscore",
        "sismember",
        "lpos",
        "lindex",
        "hgetall",
        "lrange",
        "evalsha",
    ] {
        if let Some(line) = stats
            .lines()
            .find(|l| l.starts_with(&format!("cmdstat_{cmd}:")))
        {
            println!("  {line}");
        }
    }
    let rows: Vec<(String, (f64, f64, f64))> = rows
        .into_iter()
        .map(|(what, sp)| (what, sp.last().unwrap().0))
        .collect();
    // Bounded work: no page of these took a full scan's time (a 1,000,000-job scan takes seconds).
    for (what, s) in &rows {
        assert!(s.0 < 5_000.0, "{what}: {:.1} ms", s.0);
    }
    drop(uis);
}
