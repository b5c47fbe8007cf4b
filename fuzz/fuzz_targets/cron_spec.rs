//! CronSchedule::parse (`<expr>\n<tz>`): never panics; an accepted spec computes its next
//! occurrence after a few instants without panicking, and a next occurrence is later.
#![no_main]
use libfuzzer_sys::fuzz_target;
#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let (expr, tz) = s.split_once('\n').unwrap_or((s, "UTC"));
    match emq::CronSchedule::parse(expr, tz) {
        Ok(c) => {
            for after in [0u64, 1_700_000_000_000, 4_102_444_800_000] {
                match c.next_occurrence_ms(after, false) {
                    Ok(next) => assert!(next > after, "{expr:?} {tz:?}: {next} <= {after}"),
                    Err(e) => common::typed(&e),
                }
            }
        }
        Err(e) => common::typed(&e),
    }
});
