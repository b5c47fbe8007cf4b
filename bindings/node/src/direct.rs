//! The reply side of a direct add (the core's `queue/direct.rs`), and the values that cross:
//! `NativeQueue.directAdd` builds the call, `node/src/direct.ts` moves the bytes on the event
//! loop's own socket.

use napi::bindgen_prelude::Buffer;
use napi_derive::napi;

/// Where a queue's direct adds go.
#[napi(object)]
pub struct DirectEndpoint {
    pub host: String,
    pub port: u32,
}

/// One direct add's call: the job's id and the bytes to write.
#[napi(object)]
pub struct DirectCall {
    pub id: String,
    pub frame: Buffer,
}

/// How many bytes the first reply in `buf` takes; null while it is incomplete.
#[napi]
pub fn direct_reply_len(buf: Buffer) -> Option<u32> {
    emq::direct_reply_len(&buf).map(|n| n as u32)
}

/// The id the direct add of `id` returns, from its whole `reply`; null: add it again through
/// `addStart` (same id).
#[napi]
pub fn direct_settle(reply: Buffer, id: String) -> crate::Result<Option<String>> {
    let id = emq::JobId::parse(&id).map_err(crate::throw)?;
    Ok(match emq::direct_settle(&reply, id) {
        emq::DirectOutcome::Added(id) => Some(id.to_string()),
        emq::DirectOutcome::Again => None,
    })
}
