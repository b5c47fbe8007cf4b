//! The hand-off entry parser (netstrings popped from `handoff`): never panics, refuses with a
//! typed error, and an accepted entry's id passes the job-id gate.
#![no_main]
use libfuzzer_sys::fuzz_target;
#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    match emq::fuzzing::handoff_entry(data) {
        Ok(id) => assert_eq!(emq::JobId::parse(&id.to_string()).unwrap(), id),
        Err(e) => common::typed(&e),
    }
});
