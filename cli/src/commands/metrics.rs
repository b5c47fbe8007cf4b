//! `emq metrics <queue>... [--json] [--listen ADDR] [--groups N]`: queue metrics in the Prometheus
//! text format (per-group gauges only with `--groups`).
//!
//! Without `--listen` it prints one snapshot. With it, it serves `GET /metrics` over HTTP on ADDR
//! (e.g. `127.0.0.1:9108`; port 0 picks a free one) until Ctrl-C or SIGTERM, reading fresh metrics
//! for every scrape, and first prints `listening on http://<addr>/metrics` on stdout.

use crate::connect::connect;
use clap::Args as ClapArgs;
use emq::{IdMinter, Queue, QueueName};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `emq metrics` options.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The queues to report.
    #[arg(required = true)]
    pub queues: Vec<String>,

    /// Print JSON instead of the Prometheus text.
    #[arg(long, conflicts_with = "listen")]
    pub json: bool,

    /// Serve the text over HTTP on this address instead of printing it once.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,

    /// Also report each queue's first N groups (by name; at most 10,000) as per-group gauges,
    /// `emq_group_waiting` and `emq_group_running`. Off by default: a label per tenant can grow
    /// a metrics store without bound.
    #[arg(long, value_name = "N")]
    pub groups: Option<u64>,
}

async fn snapshot(queues: &[Queue], groups: Option<u64>) -> emq::Result<Vec<emq::QueueMetrics>> {
    let mut all = Vec::with_capacity(queues.len());
    for q in queues {
        all.push(match groups {
            Some(n) => q.metrics_with_groups(n).await?,
            None => q.metrics().await?,
        });
    }
    Ok(all)
}

/// Runs `emq metrics`.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    for name in &args.queues {
        QueueName::new(name)?;
    }
    let connected = connect(urls).await?;
    let store = connected.store().clone();
    let minter = Arc::new(IdMinter::start(store.clone()).await?);
    // Each with its stored partition count: a partitioned queue's metrics are its partitions'.
    let mut queues = Vec::with_capacity(args.queues.len());
    for n in &args.queues {
        queues.push(super::queues::open_one(&store, &minter, n).await?);
    }
    let Some(addr) = &args.listen else {
        let all = snapshot(&queues, args.groups).await?;
        if args.json {
            outln!("{}", serde_json::to_string_pretty(&all).unwrap_or_default());
        } else {
            out!("{}", emq::prometheus_text(&all));
        }
        return Ok(());
    };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        emq::Error::new(
            emq::ErrorCode::InvalidOption,
            format!("cannot listen on {addr}: {e}"),
        )
    })?;
    let bound = listener
        .local_addr()
        .map_err(|e| emq::Error::new(emq::ErrorCode::Internal, format!("no local address: {e}")))?;
    outln!("listening on http://{bound}/metrics");
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| emq::Error::new(emq::ErrorCode::Internal, e.to_string()))?;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = term.recv() => return Ok(()),
            accepted = listener.accept() => {
                let Ok((mut sock, _)) = accepted else { continue };
                let mut buf = vec![0u8; 4096];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]);
                let path = request.split_whitespace().nth(1).unwrap_or("");
                let (status, body) = if path == "/metrics" {
                    match snapshot(&queues, args.groups).await {
                        Ok(all) => ("200 OK", emq::prometheus_text(&all)),
                        Err(e) => ("503 Service Unavailable", format!("error[{}]: {}\n", e.code(), e.message())),
                    }
                } else {
                    ("404 Not Found", "try /metrics\n".to_string())
                };
                let reply = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            }
        }
    }
}
