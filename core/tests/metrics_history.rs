//! A queue's last day on real servers (`core/src/metrics_history.rs`, `metrics_rollup.lua`):
//! the trim samples the backlog per minute, folds each minute older than the window into its hour
//! (counts and histograms added, the backlog's largest sample kept), drops what is older than the
//! day, and `metrics_history` adds an hour's folded counts to its minutes still in the window.
//! Old minutes are seeded in the fields `complete.lua` writes (`c:<minute>`, `r<b>:<minute>`…),
//! as they would stand after 90 minutes; the current hour's come from a real worker.

mod common;

use common::{jobs, queue_on, wait_until};
use emq::{JobContext, Worker, WorkerOptions};
use serde_json::Value;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trim_samples_the_backlog_and_folds_old_minutes_into_hours() {
    for (topology, store) in common::both().await {
        let q = queue_on(&store, "history").await;
        q.add_bulk(jobs("n", 3)).await.unwrap();
        assert_eq!(
            q.trim_metrics().await.unwrap(),
            0,
            "{topology}: nothing old yet"
        );
        let h = q.metrics_history().await.unwrap();
        assert_eq!(h.queue, q.name().to_string());
        assert_eq!(
            h.backlog_per_minute
                .iter()
                .map(|(_, n)| *n)
                .collect::<Vec<_>>(),
            vec![3],
            "{topology}: one sample of 3 waiting"
        );

        let now_min = q.server_time_ms().await.unwrap() / 60_000;
        // Past the 60-minute window, within the day, and 10 minutes into its hour, so that `old`
        // and `old + 1` share an hour (with `now_min - 90`, a run 90 minutes after an hour's
        // 59th minute saw three hours, as the local CI at 12:29 UTC did).
        let old = (now_min - 90) / 60 * 60 + 10;
        let ancient = now_min - 30 * 60; // past the day
        let metrics = q.keys().metrics.to_string();
        let seed: Vec<(String, u64)> = vec![
            (format!("c:{old}"), 5),
            (format!("f:{old}"), 1),
            (format!("r3:{old}"), 5),
            (format!("rs:{old}"), 40),
            (format!("b:{old}"), 8),
            (format!("b:{}", old + 1), 2),
            (format!("c:{ancient}"), 2),
            (format!("c:h{}", ancient / 60), 4),
        ];
        let mut conn = store.conn();
        for (f, v) in &seed {
            let _: () = redis::cmd("HSET")
                .arg(&metrics)
                .arg(f)
                .arg(v)
                .query_async(&mut conn)
                .await
                .unwrap();
        }

        let w = Worker::builder(q.clone())
            .options(WorkerOptions {
                concurrency: 2,
                block_timeout: Duration::from_millis(200),
                // The test trims itself, once, to count what one trim removes.
                trim_interval: Duration::from_secs(600),
                ..WorkerOptions::default()
            })
            .handler(|_job: JobContext| async move { Ok(Value::Null) })
            .run()
            .unwrap();
        wait_until("3 completed", Duration::from_secs(10), || async {
            q.counts().await.unwrap().completed == 3
        })
        .await;
        w.close().await.unwrap();

        let removed = q.trim_metrics().await.unwrap();
        assert_eq!(
            removed, 8,
            "{topology}: 6 minutes folded or dropped, 1 hour dropped"
        );
        let fields: Vec<String> = redis::cmd("HKEYS")
            .arg(&metrics)
            .query_async(&mut conn)
            .await
            .unwrap();
        for f in &fields {
            let at = f.split_once(':').unwrap().1;
            match at.strip_prefix('h') {
                Some(hour) => assert!(hour.parse::<u64>().unwrap() >= now_min / 60 - 24, "{f}"),
                None => assert!(at.parse::<u64>().unwrap() >= now_min - 60, "{f}"),
            }
        }

        let h = q.metrics_history().await.unwrap();
        let hours: Vec<u64> = h.hours.iter().map(|x| x.hour).collect();
        assert_eq!(hours, vec![old / 60, now_min / 60], "{topology}: {h:?}");
        let past = &h.hours[0];
        assert_eq!((past.completed, past.failed), (5, 1), "{topology}");
        assert_eq!(
            past.backlog_max,
            Some(8),
            "{topology}: the hour's largest sample"
        );
        assert_eq!((past.run.counts[3], past.run.sum_ms), (5, 40), "{topology}");
        let current = &h.hours[1];
        assert_eq!(
            current.completed, 3,
            "{topology}: the worker's, still per minute"
        );
        assert_eq!(current.run.count(), 3, "{topology}");
        assert!(
            current.backlog_max.is_some(),
            "{topology}: the samples of this hour"
        );
        assert!(
            h.backlog_per_minute.iter().all(|(m, _)| *m >= now_min - 60),
            "{topology}: the minutes of the window only"
        );
        // The per-minute window of `metrics` is what it was: the worker's three.
        let m = q.metrics().await.unwrap();
        assert_eq!(
            m.completed_per_minute.iter().map(|(_, n)| n).sum::<u64>(),
            3
        );
    }
}
