//! `emq ui [--listen ADDR] [--token T] [--read-only]`: the web dashboard.
//!
//! One axum server in the `emq` binary; the page (`assets/`: plain HTML, JS and CSS) is embedded
//! with `include_str!`, so nothing is built or fetched at build or run time. The page is a small
//! single-page app (hash routes `#/`, `#/q/<queue>`, `#/q/<queue>/j/<id>`, `#/q/<queue>/groups`,
//! `#/schedulers`, `#/workers`) reading the JSON API of `api.rs` and `ops.rs` (a job's timeline and
//! flow, cancel, priority, bulk actions, find, schedulers, fair groups), which goes through the
//! core's `Queue` API for everything (`emq::lookup` for the read-only look-ups); it follows the
//! queues' events over server-sent events (`/api/events`) and re-reads what it shows when they
//! concern it.
//!
//! Safe by default:
//! - it listens on loopback (`127.0.0.1:7777`); any other `--listen` address refuses to start
//!   without an access token (`--token` or `EMQ_UI_TOKEN`);
//! - with a token, every request needs it: `Authorization: Bearer <token>`, or the HttpOnly,
//!   SameSite=Strict cookie set by opening `/login?token=<token>` once;
//! - without one (loopback only), requests must name a loopback `Host` (no DNS rebinding);
//! - actions are POSTs that must carry the header `X-EMQ-UI: 1` (a cross-site form or a simple
//!   cross-origin fetch cannot) and, when the browser sends `Origin`, come from this origin;
//! - `--read-only` refuses every action, server-side (403 `read_only`);
//! - the datastore password never leaves the process: the URL shown is redacted and every error
//!   message is scrubbed of it before it is logged or sent;
//! - the page renders every job field with `textContent` (never as HTML).

mod api;
mod batches;
mod dead_letters;
mod latency;
mod ops;
mod security;

use crate::connect::connect;
use clap::Args as ClapArgs;
use emq::{Error, ErrorCode};
use std::net::SocketAddr;

/// The environment variable that may hold the access token.
pub const TOKEN_ENV: &str = "EMQ_UI_TOKEN";

/// `emq ui` options.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Address to serve on. Anything but loopback needs --token (or EMQ_UI_TOKEN).
    #[arg(long, default_value = "127.0.0.1:7777")]
    pub listen: String,

    /// Access token every request must carry [default: $EMQ_UI_TOKEN]. Open
    /// http://ADDR/login?token=TOKEN once in the browser (it sets a cookie), or send
    /// `Authorization: Bearer TOKEN`.
    #[arg(long)]
    pub token: Option<String>,

    /// Refuse every action (retry, remove, pause, drain, …) on the server side.
    #[arg(long)]
    pub read_only: bool,
}

/// The address to listen on, and whether it is loopback.
fn parse_listen(listen: &str) -> emq::Result<SocketAddr> {
    let with_host = if listen.starts_with(':') {
        format!("127.0.0.1{listen}")
    } else {
        listen.to_string()
    };
    with_host
        .parse::<SocketAddr>()
        .or_else(|_| {
            // A host name: only localhost is understood (no lookup on the datastore's behalf).
            match with_host.rsplit_once(':') {
                Some(("localhost", port)) => format!("127.0.0.1:{port}").parse(),
                _ => "x".parse::<SocketAddr>(),
            }
        })
        .map_err(|_| {
            Error::new(
                ErrorCode::InvalidOption,
                format!("--listen {listen:?}: expected IP:PORT, such as 127.0.0.1:7777"),
            )
        })
}

/// The token from `--token`, else `EMQ_UI_TOKEN`; blank counts as none.
fn resolve_token(flag: Option<&str>, env: Option<&str>) -> Option<String> {
    flag.or(env)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(String::from)
}

/// Checks the options before anything connects: a non-loopback address needs a token.
fn check(args: &Args, env_token: Option<&str>) -> emq::Result<(SocketAddr, Option<String>)> {
    let addr = parse_listen(&args.listen)?;
    let token = resolve_token(args.token.as_deref(), env_token);
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(Error::new(
            ErrorCode::InvalidOption,
            format!(
                "refusing to serve the dashboard on {addr} (not loopback) without an access \
                 token: pass --token TOKEN or set {TOKEN_ENV}"
            ),
        ));
    }
    if let Some(t) = &token {
        if t.len() < 8 {
            return Err(Error::new(
                ErrorCode::InvalidOption,
                "the access token must have at least 8 characters",
            ));
        }
    }
    Ok((addr, token))
}

/// Runs `emq ui` until Ctrl-C or SIGTERM.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    let env_token = std::env::var(TOKEN_ENV).ok();
    let (addr, token) = check(args, env_token.as_deref())?;
    let secrets = security::Secrets::from_urls(&effective_urls(urls));
    let connected = connect(urls).await.map_err(|e| secrets.scrub_error(e))?;
    let store = connected.store().clone();
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        Error::new(
            ErrorCode::InvalidOption,
            format!("cannot listen on {addr}: {e}"),
        )
    })?;
    let bound = listener
        .local_addr()
        .map_err(|e| Error::new(ErrorCode::Internal, format!("no local address: {e}")))?;
    let app = api::App::start(store, secrets.clone(), token.clone(), args.read_only).await?;
    eprintln!(
        "emq ui: serving {} on http://{bound}/{}{}",
        secrets.shown_url(),
        if token.is_some() {
            " (open /login?token=… once; the token is required)"
        } else {
            ""
        },
        if args.read_only { " (read-only)" } else { "" }
    );
    let router = api::router(app);
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let ctrl_c = tokio::signal::ctrl_c();
            #[cfg(unix)]
            {
                let mut term =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                        .expect("SIGTERM handler");
                tokio::select! { _ = ctrl_c => {}, _ = term.recv() => {} }
            }
            #[cfg(not(unix))]
            let _ = ctrl_c.await;
        })
        .await
        .map_err(|e| Error::new(ErrorCode::Internal, format!("the server failed: {e}")))?;
    drop(connected);
    Ok(())
}

/// The URLs the connection uses (for redaction): `--url`, else `EMQ_URL`, else the default.
fn effective_urls(urls: &[String]) -> Vec<String> {
    let mut all = urls.to_vec();
    if let Ok(env) = std::env::var(crate::connect::URL_ENV) {
        all.extend(env.split(',').map(|s| s.trim().to_string()));
    }
    if let Ok(env) = std::env::var(crate::connect::TEST_DEFAULT_ENV) {
        all.push(env);
    }
    all.retain(|u| !u.is_empty());
    if all.is_empty() {
        all.push(crate::connect::DEFAULT_URL.to_string());
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(listen: &str, token: Option<&str>) -> Args {
        Args {
            listen: listen.into(),
            token: token.map(String::from),
            read_only: false,
        }
    }

    #[test]
    fn loopback_needs_no_token_and_others_do() {
        assert!(check(&args("127.0.0.1:7777", None), None).is_ok());
        assert!(check(&args("[::1]:7777", None), None).is_ok());
        assert!(check(&args("localhost:7777", None), None).is_ok());
        for open in ["0.0.0.0:7777", "[::]:7777", "10.1.2.3:80"] {
            let e = check(&args(open, None), None).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOption, "{open}");
            assert!(e.message().contains("token"), "{open}: {e}");
            assert!(check(&args(open, Some("s3cret-token")), None).is_ok());
            assert!(check(&args(open, None), Some("s3cret-token")).is_ok());
            assert!(check(&args(open, None), Some("  ")).is_err(), "{open}");
        }
        assert!(check(&args("0.0.0.0:1", Some("short")), None).is_err());
        assert!(check(&args("nonsense", None), None).is_err());
    }
}
