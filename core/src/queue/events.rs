//! The events of one queue as its handle reads them: a follower from now on ([`Queue::events`]) or
//! the newest entries at once ([`Queue::recent_events`]); the stream itself is `events.rs`.

use super::*;
use crate::events::{expand, Event, EventStream};

impl Queue {
    /// Follows the queue's events from now on (or after a stream id).
    /// On a partitioned queue, the partitions' streams merged (`events.rs`: an event's
    /// `stream_id` is then a cursor over every partition, which `after` takes back), and those of
    /// the partitions a growth adds, from their start, once the handle has read the growth.
    pub async fn events(&self, after: Option<String>) -> Result<EventStream> {
        if let Some(p) = &self.spread() {
            let q = self.clone();
            let now: crate::events::PartsNow =
                Box::new(move || q.spread().map_or_else(Vec::new, |p| streams(&p.members)));
            return Ok(EventStream::merged(
                crate::events::Merged::open(&streams(&p.members), after, Some(now)).await?,
            ));
        }
        EventStream::new(self.store().clone(), self.keys().events.clone(), after).await
    }

    /// The newest `limit` events, oldest first (without waiting).
    /// On a partitioned queue, every partition's newest merged by entry id (the masters'
    /// clocks), each event's `stream_id` the cursor of its place.
    pub async fn recent_events(&self, limit: usize) -> Result<Vec<Event>> {
        if let Some(p) = &self.spread() {
            return crate::events::recent(&streams(&p.members), limit).await;
        }
        let entries =
            crate::events::newest_entries(self.store(), &self.keys().events, limit).await?;
        Ok(expand(entries, None))
    }
}

/// Each partition's events stream and the store it lives on.
fn streams(parts: &[Queue]) -> Vec<(Store, crate::keyspace::Key)> {
    parts
        .iter()
        .map(|p| (p.store().clone(), p.keys().events.clone()))
        .collect()
}
