//! JobOptions from JSON (what bindings and the CLI pass): options that deserialize and validate
//! survive their compact JSON form unchanged.
#![no_main]
use libfuzzer_sys::fuzz_target;
#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(o) = serde_json::from_slice::<emq::JobOptions>(data) else {
        return;
    };
    match o.validate() {
        Ok(()) => {
            let text = o.compact_json();
            let back: emq::JobOptions =
                serde_json::from_str(&text).expect("compact_json reads back");
            assert_eq!(back, o, "{text}");
        }
        Err(e) => common::typed(&e),
    }
});
