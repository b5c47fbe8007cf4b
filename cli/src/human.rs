//! Times and durations for people: ISO 8601 UTC stamps with a relative form ("3s ago", "in 2m"),
//! and durations such as "850ms", "3.2s", "2m 5s". `--json` output never goes through here; it
//! keeps the raw values (ms since the epoch, ms).
//!
//! "Now" is the datastore's clock ([`Clock`]: its `TIME` read once, advanced by the local monotonic
//! clock), the same clock every stamp of a job was written with, so a skewed local clock does not
//! skew the relative forms.

use chrono::{DateTime, SecondsFormat};
use std::time::Instant;

/// The datastore's clock: its `TIME` when read, advanced by the local monotonic clock since.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    server_ms: u64,
    read_at: Instant,
}

impl Clock {
    /// Reads the datastore's `TIME`.
    pub async fn read(store: &emq::Store) -> emq::Result<Clock> {
        let server_ms = crate::connect::server_time_ms(store).await?;
        Ok(Clock::at(server_ms))
    }

    /// A clock that reads `server_ms` now.
    pub fn at(server_ms: u64) -> Clock {
        Clock {
            server_ms,
            read_at: Instant::now(),
        }
    }

    /// Now, in ms since the epoch on the datastore's clock.
    pub fn now_ms(&self) -> u64 {
        self.server_ms + self.read_at.elapsed().as_millis() as u64
    }

    /// `2025-06-01T12:00:00.123Z (3s ago)`.
    pub fn stamp(&self, at_ms: u64) -> String {
        format!("{} ({})", iso_ms(at_ms), relative(at_ms, self.now_ms()))
    }

    /// `2025-06-01T12:00:00Z 3s ago`: to the second, for table columns.
    pub fn short_stamp(&self, at_ms: u64) -> String {
        format!("{} {}", iso_s(at_ms), relative(at_ms, self.now_ms()))
    }
}

fn iso(at_ms: u64, precision: SecondsFormat) -> String {
    match i64::try_from(at_ms)
        .ok()
        .and_then(DateTime::from_timestamp_millis)
    {
        Some(t) => t.to_rfc3339_opts(precision, true),
        None => format!("{at_ms} ms"),
    }
}

/// ISO 8601 UTC to the millisecond: `2025-06-01T12:00:00.123Z`.
pub fn iso_ms(at_ms: u64) -> String {
    iso(at_ms, SecondsFormat::Millis)
}

/// ISO 8601 UTC to the second: `2025-06-01T12:00:00Z`.
pub fn iso_s(at_ms: u64) -> String {
    iso(at_ms, SecondsFormat::Secs)
}

/// `at_ms` seen from `now_ms`: "just now" (under a second either way), "3s ago", "in 2m",
/// "5h ago", "in 3d" (the largest whole unit).
pub fn relative(at_ms: u64, now_ms: u64) -> String {
    let (delta, past) = if at_ms <= now_ms {
        (now_ms - at_ms, true)
    } else {
        (at_ms - now_ms, false)
    };
    if delta < 1000 {
        return "just now".into();
    }
    let secs = delta / 1000;
    let unit = match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    };
    if past {
        format!("{unit} ago")
    } else {
        format!("in {unit}")
    }
}

/// A duration in ms for people: "850ms", "3.2s", "2m 5s", "1h 2m", "3d 4h".
pub fn duration(ms: u64) -> String {
    let secs = ms / 1000;
    match ms {
        m if m < 1000 => format!("{m}ms"),
        m if m < 10_000 => format!("{:.1}s", m as f64 / 1000.0),
        _ if secs < 60 => format!("{secs}s"),
        _ if secs < 3600 => two(secs / 60, "m", secs % 60, "s"),
        _ if secs < 86_400 => two(secs / 3600, "h", secs % 3600 / 60, "m"),
        _ => two(secs / 86_400, "d", secs % 86_400 / 3600, "h"),
    }
}

/// Reads a human duration — a number and a unit, or several (`250ms`, `5s`, `1.5m`, `2h`, `1d`,
/// `1w`, `1h30m`) — as milliseconds. Only the text is read here: None when it is not one. The
/// value is the caller's to hand to the core, which checks its bounds (a negative or huge one is
/// the core's `invalid_option`).
pub fn parse_duration(text: &str) -> Option<f64> {
    let t = text.trim();
    let (sign, mut rest) = match t.strip_prefix('-') {
        Some(r) => (-1.0, r),
        None => (1.0, t),
    };
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit_ms = match &rest[..u] {
            "ms" => 1.0,
            "s" => 1_000.0,
            "m" => 60_000.0,
            "h" => 3_600_000.0,
            "d" => 86_400_000.0,
            "w" => 604_800_000.0,
            _ => return None,
        };
        rest = &rest[u..];
        total += number * unit_ms;
    }
    Some(sign * total)
}

fn two(a: u64, ua: &str, b: u64, ub: &str) -> String {
    if b == 0 {
        format!("{a}{ua}")
    } else {
        format!("{a}{ua} {b}{ub}")
    }
}

/// One line of at most `max` characters: whitespace runs (newlines too) become one space, and a
/// longer text ends in `…`.
pub fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_stamps_are_utc() {
        assert_eq!(iso_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_ms(1_717_243_200_123), "2024-06-01T12:00:00.123Z");
        assert_eq!(iso_s(1_717_243_200_123), "2024-06-01T12:00:00Z");
        // Leap day.
        assert_eq!(iso_s(1_709_210_096_000), "2024-02-29T12:34:56Z");
    }

    #[test]
    fn relative_forms() {
        let now = 1_000_000_000;
        assert_eq!(relative(now, now), "just now");
        assert_eq!(relative(now - 999, now), "just now");
        assert_eq!(relative(now - 3_000, now), "3s ago");
        assert_eq!(relative(now + 120_500, now), "in 2m");
        assert_eq!(relative(now - 59_999, now), "59s ago");
        assert_eq!(relative(now - 5 * 3_600_000, now), "5h ago");
        assert_eq!(relative(now + 3 * 86_400_000, now), "in 3d");
    }

    #[test]
    fn human_durations_are_read() {
        assert_eq!(parse_duration("250ms"), Some(250.0));
        assert_eq!(parse_duration("5s"), Some(5_000.0));
        assert_eq!(parse_duration("1.5m"), Some(90_000.0));
        assert_eq!(parse_duration("2h"), Some(7_200_000.0));
        assert_eq!(parse_duration("1d"), Some(86_400_000.0));
        assert_eq!(parse_duration("1w"), Some(604_800_000.0));
        assert_eq!(parse_duration("1h30m"), Some(5_400_000.0));
        assert_eq!(parse_duration("-5s"), Some(-5_000.0));
        for bad in ["", "5", "s", "1x", "1 d", "1.2.3s", "d1", "-"] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(duration(0), "0ms");
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(3_240), "3.2s");
        assert_eq!(duration(42_000), "42s");
        assert_eq!(duration(125_000), "2m 5s");
        assert_eq!(duration(120_000), "2m");
        assert_eq!(duration(3_720_000), "1h 2m");
        assert_eq!(duration(4 * 3_600_000 + 3 * 86_400_000), "3d 4h");
    }

    #[test]
    fn one_line_flattens_and_truncates() {
        assert_eq!(one_line("a\n  b\tc", 10), "a b c");
        assert_eq!(one_line("abcdefghij", 10), "abcdefghij");
        assert_eq!(one_line("abcdefghijk", 10), "abcdefghi…");
        assert_eq!(one_line("ééééé", 3), "éé…");
    }

    #[test]
    fn the_clock_starts_at_the_server_time() {
        let c = Clock::at(1_717_243_200_000);
        let now = c.now_ms();
        assert!((1_717_243_200_000..1_717_243_260_000).contains(&now));
        assert!(c
            .stamp(1_717_243_197_000)
            .starts_with("2024-06-01T11:59:57.000Z (3s ago"));
        assert_eq!(
            c.short_stamp(1_717_243_200_000),
            "2024-06-01T12:00:00Z just now"
        );
    }
}
