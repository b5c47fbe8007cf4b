//! `emq dev`: a private redis-server in the foreground.
//!
//! Starts an [`EmbeddedServer`], prints its URL on stdout (one line, flushed; everything else goes
//! to stderr), and runs until SIGINT (Ctrl-C) or SIGTERM, then stops the server and removes its dir.
//! If the server dies on its own, it says so with the tail of the server's log and exits 1.

use crate::connect::start_embedded;
use emq::{Error, ErrorCode};
use emq_server_process::EmbeddedServer;
use std::io::Write;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};

/// How often the server's liveness is checked while waiting for a signal.
const POLL: Duration = Duration::from_millis(500);

fn internal(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::Internal, format!("{what}: {e}"))
}

/// Runs `emq dev`. `urls` are the global `--url` options, which do not apply here.
pub async fn run(urls: &[String]) -> emq::Result<()> {
    if !urls.is_empty() {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            "`emq dev` starts its own server; --url does not apply to it (drop the option)",
        ));
    }
    let mut server = start_embedded().await?;
    let waited = serve(&mut server).await;
    let pid = server.pid();
    let tail = match &waited {
        Err(_) => server.log_tail(),
        Ok(_) => String::new(),
    };
    server.stop();
    match waited {
        Ok(signal) => {
            eprintln!("emq dev: {signal}; stopped redis-server (pid {pid})");
            Ok(())
        }
        Err(e) if e.code() == ErrorCode::ServerUnavailable => Err(Error::new(
            e.code(),
            format!(
                "{}\n--- tail of its log ---\n{}",
                e.message(),
                tail.trim_end()
            ),
        )),
        Err(e) => Err(e),
    }
}

/// Announces the server and waits for a signal (Ok with its name) or the server's death (Err).
async fn serve(server: &mut EmbeddedServer) -> emq::Result<&'static str> {
    // Handlers first: a SIGTERM sent as soon as the URL is read must find them in place.
    let mut interrupt =
        signal(SignalKind::interrupt()).map_err(|e| internal("cannot handle SIGINT", e))?;
    let mut terminate =
        signal(SignalKind::terminate()).map_err(|e| internal("cannot handle SIGTERM", e))?;

    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", server.url())
        .and_then(|()| stdout.flush())
        .map_err(|e| internal("cannot write the URL to stdout", e))?;
    drop(stdout);
    eprintln!(
        "emq dev: redis-server pid {} at {} (dir {}; data in memory only). Ctrl-C stops it.",
        server.pid(),
        server.url(),
        server.dir().display()
    );

    let mut tick = tokio::time::interval(POLL);
    loop {
        tokio::select! {
            _ = interrupt.recv() => return Ok("interrupted"),
            _ = terminate.recv() => return Ok("terminated"),
            _ = tick.tick() => {
                if !server.is_running() {
                    return Err(Error::new(
                        ErrorCode::ServerUnavailable,
                        format!("the redis-server (pid {}) exited on its own", server.pid()),
                    ));
                }
            }
        }
    }
}
