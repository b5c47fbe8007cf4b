//! Quick start, Rust worker: processes the jobs of the queue `emails` until SIGINT or SIGTERM,
//! then finishes the jobs it is running and exits.
//! The datastore is EMQ_URL, default redis://127.0.0.1:6379.
use emq::{ConnectOptions, JobContext, Queue, Worker};
use serde_json::json;
use tokio::signal::unix::{signal, SignalKind};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("EMQ_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let queue = Queue::connect(ConnectOptions::new(url), "emails").await?;
    let worker = Worker::builder(queue.clone())
        .concurrency(4)
        .handler(|job: JobContext| async move {
            let to = job.data()["to"].clone();
            job.log(&format!("sending to {to}")).await?;
            Ok(json!({"sent": to})) // the job's result
        })
        .run()?;
    println!("worker started; Ctrl-C to stop");

    let mut term = signal(SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    worker.close().await?; // stops fetching, waits for running jobs, gives the rest back
    queue.close().await?;
    println!("worker stopped");
    Ok(())
}
