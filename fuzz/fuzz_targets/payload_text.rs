//! payload_from_text (payloads from bindings and the CLI): accepted text reads back as the same
//! value from its serialised form, and passes the depth check; refused text gets invalid_payload.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    match emq::job::payload_from_text("the payload", s) {
        Ok(v) => {
            emq::job::check_payload("the payload", &v)
                .expect("an accepted payload passes the depth check");
            let text = serde_json::to_string(&v).unwrap();
            let back = emq::job::payload_from_text("the payload", &text)
                .expect("its own text is accepted");
            assert_eq!(back, v, "{s:?}");
        }
        Err(e) => assert_eq!(e.code(), emq::ErrorCode::InvalidPayload, "{e}"),
    }
});
