//! Server time of the dashboard's overview and queue page on big queues (run by hand:
//! `cargo test -p emq-cli --test ui_bench -- --ignored --nocapture`): one queue of 1,000,000
//! waiting jobs and 100 queues of 10,000 jobs each, on a private standalone server.
//!
//! Measured 2026-12-01 on this 2-core machine (debug build, medians): overview of the 101 queues
//! 141 ms; the 1,000,000-job queue's first page 28 ms, its page at offset 500,000 276 ms (LRANGE
//! walks the list to the offset: deep pages of a huge waiting list cost the datastore O(offset));
//! a 10,000-job queue's page 13 ms.

use emq::{ConnectOptions, JobOptions, NewJob, Queue};
use emq_harness::RedisServer;
use serde_json::json;
use std::time::{Duration, Instant};

mod ui_support;
use ui_support::Ui;

fn median_ms(ui: &Ui, path: &str, runs: usize) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            let r = ui.request("GET", path, &[], "");
            assert_eq!(r.status, 200, "{path}: {}", r.body);
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    times[runs / 2]
}

async fn fill(q: &Queue, n: usize) {
    let chunk = 10_000;
    let mut left = n;
    while left > 0 {
        let k = left.min(chunk);
        let jobs = (0..k)
            .map(|i| NewJob {
                name: "bench".into(),
                data: json!({ "i": i }),
                options: JobOptions::default(),
            })
            .collect();
        q.add_bulk(jobs).await.unwrap();
        left -= k;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run by hand"]
async fn overview_and_queue_page_on_big_queues() {
    let server = RedisServer::start().unwrap();
    let url = server.url();
    let big = Queue::connect(ConnectOptions::new(url.clone()), "big")
        .await
        .unwrap();
    let t = Instant::now();
    fill(&big, 1_000_000).await;
    let mut small = Vec::new();
    for i in 0..100 {
        let q = big.queue(&format!("q{i:03}")).unwrap();
        fill(&q, 10_000).await;
        small.push(q);
    }
    eprintln!(
        "filled 2,000,000 jobs in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let urls = vec![url.clone()];
    let ui = tokio::task::spawn_blocking(move || Ui::start(&urls, &[], &[]))
        .await
        .unwrap();
    let ui = std::sync::Arc::new(ui);
    let u = ui.clone();
    let figures = tokio::task::spawn_blocking(move || {
        let overview = median_ms(&u, "/api/overview", 5);
        let first = median_ms(
            &u,
            "/api/queues/big/jobs?state=waiting&offset=0&limit=25",
            9,
        );
        let deep = median_ms(
            &u,
            "/api/queues/big/jobs?state=waiting&offset=500000&limit=25",
            9,
        );
        let small = median_ms(
            &u,
            "/api/queues/q050/jobs?state=waiting&offset=0&limit=25",
            9,
        );
        (overview, first, deep, small)
    })
    .await
    .unwrap();
    println!(
        "overview (101 queues, 2,000,000 jobs): {:.1} ms; queue page of 1,000,000 waiting: first page {:.1} ms, page at 500,000 {:.1} ms; queue page of 10,000: {:.1} ms (medians; emq ui debug build)",
        figures.0, figures.1, figures.2, figures.3
    );
    assert!(figures.0 < Duration::from_secs(30).as_millis() as f64);
}
