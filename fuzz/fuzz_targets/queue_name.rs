//! QueueName::new: an accepted name (bare or `{braced}`) is its hash tag, its braced form names
//! the same queue, and every key of the queue lies inside that tag.
#![no_main]
use libfuzzer_sys::fuzz_target;
#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    match emq::QueueName::new(s) {
        Ok(q) => {
            let bare = s
                .strip_prefix('{')
                .and_then(|r| r.strip_suffix('}'))
                .unwrap_or(s);
            assert_eq!(q.as_str(), bare);
            assert_eq!(emq::QueueName::new(q.as_str()).unwrap(), q);
            assert_eq!(emq::QueueName::new(&q.braced()).unwrap(), q);
            for family in emq::Family::ALL {
                let key = q.key(family);
                assert!(
                    key.as_str().starts_with(&format!("emq:{{{bare}}}:")),
                    "{}",
                    key.as_str()
                );
                assert_eq!(key.slot(), q.slot());
            }
        }
        Err(e) => common::typed(&e),
    }
});
