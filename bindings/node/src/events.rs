//! A subscriber on a queue's events stream (wrapped by `EventStream` in `node/src/events.ts`): reads events in
//! order, each batch waiting up to a bound; `close` ends a read in progress at once, so a closed
//! subscriber never holds the process open for the rest of its wait.

use crate::{throw, Settled};
use emq::events::{Event, EventStream};
use napi_derive::napi;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::{watch, Mutex};

/// An event as JSON with camelCase keys.
pub(crate) fn event_json(e: &Event) -> Value {
    json!({
        "streamId": e.stream_id,
        "kind": e.kind,
        "jobId": e.job_id.map(|id| id.to_string()),
        "fields": e.fields,
    })
}

/// Events as a JSON array.
pub(crate) fn events_text(events: &[Event]) -> String {
    Value::Array(events.iter().map(event_json).collect()).to_string()
}

/// A subscriber.
#[napi]
pub struct NativeEvents {
    stream: Mutex<EventStream>,
    closed: watch::Sender<bool>,
}

impl NativeEvents {
    pub(crate) fn new(stream: EventStream) -> NativeEvents {
        NativeEvents {
            stream: Mutex::new(stream),
            closed: watch::channel(false).0,
        }
    }
}

#[napi]
impl NativeEvents {
    /// The next events (JSON array), waiting up to `wait` ms for the first; `[]` when none came or
    /// once closed.
    #[napi]
    pub async fn next(&self, wait: f64, count: f64) -> Settled<String> {
        Settled::of(async move {
            let wait = emq::options::millis("wait", wait).map_err(throw)?;
            let count = crate::options::whole("count", count, 100_000).map_err(throw)?;
            let mut closed = self.closed.subscribe();
            if *closed.borrow() {
                return Ok("[]".into());
            }
            let mut stream = tokio::select! {
                s = self.stream.lock() => s,
                _ = closed.wait_for(|c| *c) => return Ok("[]".into()),
            };
            tokio::select! {
                r = stream.next_batch(Duration::from_millis(wait.max(1)), count.max(1) as usize) => {
                    Ok(events_text(&r.map_err(throw)?))
                }
                _ = closed.wait_for(|c| *c) => Ok("[]".into()),
            }
        })
        .await
    }

    /// Ends the subscription (a read in progress resolves to `[]`).
    #[napi]
    pub fn close(&self) {
        self.closed.send_replace(true);
    }
}
