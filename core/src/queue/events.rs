//! The events of one queue as its handle reads them: a follower from now on ([`Queue::events`]) or
//! the newest entries at once ([`Queue::recent_events`]); the stream itself is `events.rs`.

use super::*;
use crate::events::{expand, Event, EventStream};
use std::collections::HashMap;

impl Queue {
    /// Follows the queue's events from now on (or after a stream id).
    pub async fn events(&self, after: Option<String>) -> Result<EventStream> {
        self.plain_only("the events stream")?;
        EventStream::new(self.store().clone(), self.keys().events.clone(), after).await
    }

    /// The newest `limit` events, oldest first (without waiting).
    pub async fn recent_events(&self, limit: usize) -> Result<Vec<Event>> {
        self.plain_only("the events stream")?;
        let mut entries: Vec<(String, HashMap<String, String>)> = redis::cmd("XREVRANGE")
            .arg(&self.keys().events)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(limit)
            .query_async(&mut self.store().conn())
            .await?;
        entries.reverse();
        Ok(expand(entries, None))
    }
}
