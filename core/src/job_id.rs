//! Job ids: 64-bit JOB snowflakes (time | node | sequence) and the one gate that parses them.
//!
//! Layout of the value (most significant first): 1 zero bit, 41 bits of milliseconds since
//! [`EPOCH_MS`] on the *server's* clock (see [`crate::minter`]), 10 bits of node id (leased from
//! `{emq}:nodes`), 12 bits of sequence.
//!
//! Text form: `j` + 13 lowercase Crockford base32 digits of the value + 2 check digits (10 bits of a
//! keyed hash of the value): 16 characters, no `:` `{` `}`, fixed width so that text order is creation
//! order. [`JobId::parse`] is the only way a string becomes a `JobId`; it rejects any string the core
//! could not have minted (wrong length, alphabet, case, leading bits or check digits).

use crate::error::{Error, ErrorCode, Result};
use std::fmt;

/// Milliseconds of the Unix epoch at which id time starts: 2025-01-01T00:00:00Z.
pub const EPOCH_MS: u64 = 1_735_689_600_000;
/// Bits of node id.
pub const NODE_BITS: u32 = 10;
/// Bits of sequence.
pub const SEQ_BITS: u32 = 12;
/// Bits of time.
pub const TIME_BITS: u32 = 41;
/// Largest node id.
pub const MAX_NODE: u16 = (1 << NODE_BITS) - 1;
/// Largest sequence number within one millisecond.
pub const MAX_SEQ: u16 = (1 << SEQ_BITS) - 1;
/// Length of the text form.
pub const TEXT_LEN: usize = 16;

const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
const BODY_DIGITS: usize = 13;

/// A job id minted by the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(u64);

// Kotlin and Swift see a job id as its text (a `String` alias); text coming back in goes through
// the one gate.
#[cfg(feature = "uniffi")]
uniffi::custom_type!(JobId, String, {
    lower: |id| id.to_string(),
    try_lift: |text| Ok(JobId::parse(&text)?),
});

fn check_bits(v: u64) -> u64 {
    // splitmix64 finaliser of the value with a fixed key; any one-digit change flips the check
    // with probability 1023/1024.
    let mut z = v ^ 0x656d_715f_6a6f_6221; // "emq_job!"
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) & 0x3ff
}

fn digit_value(c: u8) -> Option<u64> {
    ALPHABET.iter().position(|&a| a == c).map(|p| p as u64)
}

impl JobId {
    /// Assembles an id from its parts (the minter's job; also used by tests).
    pub(crate) fn from_parts(ms_since_epoch: u64, node: u16, seq: u16) -> JobId {
        debug_assert!(ms_since_epoch < (1 << TIME_BITS));
        debug_assert!(node <= MAX_NODE && seq <= MAX_SEQ);
        JobId((ms_since_epoch << (NODE_BITS + SEQ_BITS)) | ((node as u64) << SEQ_BITS) | seq as u64)
    }

    /// The one gate: parses the text form, rejecting anything the core did not mint.
    pub fn parse(text: &str) -> Result<JobId> {
        let bad = |why: &str| {
            Error::new(
                ErrorCode::InvalidJobId,
                format!("{text:?} is not a job id minted by emq ({why})"),
            )
        };
        let bytes = text.as_bytes();
        if bytes.len() != TEXT_LEN {
            return Err(bad("wrong length"));
        }
        if bytes[0] != b'j' {
            return Err(bad("wrong prefix"));
        }
        let mut v: u64 = 0;
        for (i, &c) in bytes[1..1 + BODY_DIGITS].iter().enumerate() {
            let d = digit_value(c).ok_or_else(|| bad("character outside the id alphabet"))?;
            if i == 0 && d > 0b0111 {
                // 13 digits carry 65 bits; the top two plus the sign bit are always zero.
                return Err(bad("out of range"));
            }
            v = (v << 5) | d;
        }
        if v >> 63 != 0 {
            return Err(bad("out of range"));
        }
        let c0 = digit_value(bytes[14]).ok_or_else(|| bad("character outside the id alphabet"))?;
        let c1 = digit_value(bytes[15]).ok_or_else(|| bad("character outside the id alphabet"))?;
        if (c0 << 5 | c1) != check_bits(v) {
            return Err(bad("check digits do not match"));
        }
        Ok(JobId(v))
    }

    /// The raw 64-bit value.
    pub fn as_u64(self) -> u64 {
        self.0
    }

    /// Milliseconds since the Unix epoch (server clock) at which the id was minted.
    pub fn unix_ms(self) -> u64 {
        (self.0 >> (NODE_BITS + SEQ_BITS)) + EPOCH_MS
    }

    /// The node that minted it.
    pub fn node(self) -> u16 {
        ((self.0 >> SEQ_BITS) & MAX_NODE as u64) as u16
    }

    /// Its sequence within the millisecond.
    pub fn seq(self) -> u16 {
        (self.0 & MAX_SEQ as u64) as u16
    }

    fn write_text(self, out: &mut [u8; TEXT_LEN]) {
        out[0] = b'j';
        let mut v = self.0;
        for i in (0..BODY_DIGITS).rev() {
            out[1 + i] = ALPHABET[(v & 31) as usize];
            v >>= 5;
        }
        let c = check_bits(self.0);
        out[14] = ALPHABET[(c >> 5) as usize];
        out[15] = ALPHABET[(c & 31) as usize];
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; TEXT_LEN];
        self.write_text(&mut buf);
        // The alphabet is ASCII.
        f.write_str(std::str::from_utf8(&buf).map_err(|_| fmt::Error)?)
    }
}

impl std::str::FromStr for JobId {
    type Err = Error;
    fn from_str(s: &str) -> Result<JobId> {
        JobId::parse(s)
    }
}

impl serde::Serialize for JobId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for JobId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<JobId, D::Error> {
        let s = String::deserialize(d)?;
        JobId::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl redis::ToRedisArgs for JobId {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        out.write_arg_fmt(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_and_sorts() {
        let ids = [
            JobId::from_parts(0, 0, 0),
            JobId::from_parts(1, 0, 0),
            JobId::from_parts(1, 0, 1),
            JobId::from_parts(1, 1, 0),
            JobId::from_parts((1 << TIME_BITS) - 1, MAX_NODE, MAX_SEQ),
        ];
        for w in ids.windows(2) {
            assert!(w[0] < w[1]);
            assert!(w[0].to_string() < w[1].to_string());
        }
        for id in ids {
            let t = id.to_string();
            assert_eq!(t.len(), TEXT_LEN);
            assert!(!t.contains([':', '{', '}']));
            assert_eq!(JobId::parse(&t).unwrap(), id);
        }
        let id = JobId::from_parts(123_456, 7, 9);
        assert_eq!(
            (id.unix_ms() - EPOCH_MS, id.node(), id.seq()),
            (123_456, 7, 9)
        );
    }

    #[test]
    fn gate_rejects_near_misses() {
        let good = JobId::from_parts(987_654_321, 42, 17).to_string();
        let mut rejected = 0;
        let mut tried = 0;
        for pos in 0..TEXT_LEN {
            for &c in ALPHABET.iter().chain(b"IOLU:{}-_ ") {
                let mut b = good.clone().into_bytes();
                if b[pos] == c {
                    continue;
                }
                b[pos] = c;
                let s = String::from_utf8(b).unwrap();
                tried += 1;
                if JobId::parse(&s).is_err() {
                    rejected += 1;
                }
            }
        }
        // A single changed character is caught unless the check digits collide (1 in 1024).
        assert!(rejected * 1000 >= tried * 998, "{rejected}/{tried}");
        for s in [
            "",
            "j",
            &good.to_uppercase(),
            &good[..15],
            &format!("{good}0"),
            "12345",
            "orders",
        ] {
            let e = JobId::parse(s).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidJobId, "{s:?}");
        }
    }

    /// With the `uniffi` feature, a job id crosses to Kotlin/Swift as its text, and text coming
    /// back becomes an id only through the parser (`cargo test -p emq --features uniffi`).
    #[cfg(feature = "uniffi")]
    #[test]
    fn a_job_id_crosses_the_ffi_as_its_text_through_the_parser() {
        use uniffi::{Lift, Lower};
        type Tag = crate::UniFfiTag;
        let id = JobId::from_parts(123_456, 7, 8);
        let back = <JobId as Lift<Tag>>::try_lift(<JobId as Lower<Tag>>::lower(id)).unwrap();
        assert_eq!(back, id);
        let text = <String as Lift<Tag>>::try_lift(<JobId as Lower<Tag>>::lower(id)).unwrap();
        assert_eq!(text, id.to_string());
        for bad in [
            "",
            "not an id",
            "J0000000000000000",
            &id.to_string().to_uppercase(),
        ] {
            let err = <JobId as Lift<Tag>>::try_lift(<String as Lower<Tag>>::lower(bad.into()))
                .unwrap_err();
            let core = err.downcast_ref::<Error>().expect("the parser's error");
            assert_eq!(core.code(), ErrorCode::InvalidJobId, "{bad:?}");
        }
    }
}
