//! Dropping a worker handle (as a binding's finaliser does, on a thread outside the runtime)
//! stops the worker before it returns: an add right after is not handed to the gone worker.

mod common;

use emq::{JobContext, JobOptions, JobState, Worker, WorkerOptions};
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_add_after_a_dropped_worker_stays_waiting() {
    let store = common::standalone().await;
    for round in 0..15 {
        let q = common::queue_on(&store, "drop").await;
        let w = Worker::builder(q.clone())
            .options(WorkerOptions {
                concurrency: 1,
                block_timeout: Duration::from_millis(50),
                ..WorkerOptions::default()
            })
            .handler(|_job: JobContext| async move { Ok(json!(null)) })
            .run()
            .unwrap();
        let first = q.add("a", json!(1), JobOptions::default()).await.unwrap();
        common::wait_until("the first job", Duration::from_secs(10), || async {
            q.get(first).await.unwrap().unwrap().state == Some(JobState::Completed)
        })
        .await;
        // Idle now, blocking with a short timeout, so it re-registers often.
        tokio::time::sleep(Duration::from_millis(30 + round * 7)).await;
        std::thread::spawn(move || drop(w)).join().unwrap();
        let second = q.add("b", json!(2), JobOptions::default()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            q.get(second).await.unwrap().unwrap().state,
            Some(JobState::Waiting),
            "round {round}: a job was handed to the dropped worker"
        );
    }
}
