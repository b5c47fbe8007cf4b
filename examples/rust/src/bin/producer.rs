//! Quick start, Rust producer: adds one job to the queue `emails` and waits for its result.
//!   cargo run -p emq-examples --bin worker     # in one terminal
//!   cargo run -p emq-examples --bin producer   # in another
//! The datastore is EMQ_URL, default redis://127.0.0.1:6379.
use std::time::Duration;

use emq::{ConnectOptions, JobOptions, JobState, Queue};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("EMQ_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let queue = Queue::connect(ConnectOptions::new(url), "emails").await?;
    let data = json!({"to": "ada@example.com"});
    let id = queue.add("send", data, JobOptions::default()).await?;
    println!("added {id}");

    // Read the result back: poll the job until a worker has finished it (at most 30 s).
    for _ in 0..300 {
        if let Some(job) = queue.get(id).await? {
            if matches!(job.state, Some(JobState::Completed | JobState::Failed)) {
                let state = job.state.map(|s| s.as_str()).unwrap_or_default();
                println!("{state} {}", job.result.unwrap_or_default());
                queue.close().await?;
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("job {id} did not finish within 30 s: is the worker running?").into())
}
