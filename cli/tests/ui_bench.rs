//! Server time of the dashboard's pages on big queues: one queue of 1,000,000 waiting jobs and 100
//! queues of 10,000 jobs each, on a private standalone server. Run by `bench/ui_bench.sh` (or by
//! hand: `cargo test -p emq-cli --release --test ui_bench -- --ignored --nocapture`); figures in
//! `bench/RESULTS.md` ("emq ui on big queues").
//!
//! Each page is requested `UI_BENCH_RUNS` times (default 7, at least 5); it prints the median and
//! the range of the server's own time (`Server-Timing: app;dur=…`, from the request reaching the
//! router to the response leaving it) and of the round trip seen by the client, as a Markdown
//! table. Bounded: 2,000,000 jobs built with add_bulk in chunks of 10,000, 9 pages.

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
    let some_id = big.list_ids(emq::JobState::Waiting, 0, 1).await.unwrap()[0];
    let urls = vec![url.clone()];
    let ui = tokio::task::spawn_blocking(move || Ui::start(&urls, &[], &[]))
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
            "queue page, 10,000 waiting: first page".into(),
            "/api/queues/q050/jobs?state=waiting&offset=0&limit=25".into(),
        ),
        (
            "job page (record, logs, timeline of 10,000 stream entries, flow)".into(),
            format!("/api/queues/big/jobs/{some_id}"),
        ),
        (
            "find by id, 1,000,000 waiting".into(),
            format!("/api/queues/big/find?by=id&text={some_id}"),
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
    let ui = std::sync::Arc::new(ui);
    let u = ui.clone();
    let rows = tokio::task::spawn_blocking(move || {
        // One warm-up request each (the first connection to each node, the scripts' first load).
        for (_, p) in &pages {
            let _ = measure(&u, p, 1);
        }
        pages
            .into_iter()
            .map(|(what, p)| {
                let (s, r) = measure(&u, &p, runs);
                (what, spread(s), spread(r))
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    println!(
        "\nfilled 2,000,000 jobs in {fill_s:.1} s; {runs} requests per page, one after another\n"
    );
    println!("| page | server time, ms: median [min–max] | round trip, ms: median [min–max] |");
    println!("|---|---:|---:|");
    for (what, s, r) in &rows {
        println!(
            "| {what} | **{:.1}** [{:.1}–{:.1}] | {:.1} [{:.1}–{:.1}] |",
            s.0, s.1, s.2, r.0, r.1, r.2
        );
    }
    // Bounded work: no page of these took a full scan's time (a 1,000,000-job scan takes seconds).
    for (what, s, _) in &rows {
        assert!(s.0 < 5_000.0, "{what}: {:.1} ms", s.0);
    }
}
