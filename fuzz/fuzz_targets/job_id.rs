//! JobId::parse: an id accepted prints back to text that parses to the same id.
#![no_main]
use libfuzzer_sys::fuzz_target;
#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    match emq::JobId::parse(s) {
        Ok(id) => {
            let again = emq::JobId::parse(&id.to_string()).unwrap();
            assert_eq!(again, id);
            assert_eq!(again.as_u64(), id.as_u64());
        }
        Err(e) => common::typed(&e),
    }
});
