//! [`RunId`]: a sortable run identifier, in the ULID layout.
//!
//! 26 characters of Crockford's base 32: 48 bits of milliseconds since the Unix epoch, then 80
//! bits that tell apart runs made in the same millisecond. Sorting ids as text sorts runs by
//! the time they were made, which is what `runs list` and the stores' indexes rely on.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};
use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Crockford's base 32 alphabet (no I, L, O, U).
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Characters of an id.
pub const ID_LEN: usize = 26;

/// A run's id: time-ordered, unique, 26 characters (`01JDX3V8Q2M7R4K9N0T5W6Y1ZB`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId(String);

/// The last id made in this process, so ids made in one millisecond still increase.
static LAST: Mutex<Option<(u64, u128)>> = Mutex::new(None);

impl RunId {
    /// A new id for now, greater than every id this process made before.
    pub fn new() -> RunId {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let ms = u64::try_from(now.as_millis()).unwrap_or(u64::MAX) & ((1 << 48) - 1);
        let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        let (ms, random) = match *last {
            // Same millisecond (or a clock that went back): one more than the last id, so the
            // order within the process is the order of creation.
            Some((prev_ms, prev_rand)) if ms <= prev_ms => {
                (prev_ms, (prev_rand + 1) & ((1u128 << 80) - 1))
            }
            _ => (ms, random_bits(now.as_nanos())),
        };
        *last = Some((ms, random));
        RunId::from_parts(ms, random)
    }

    /// The id made of a millisecond timestamp (48 bits kept) and 80 further bits.
    pub fn from_parts(ms: u64, random: u128) -> RunId {
        let value = (u128::from(ms & ((1 << 48) - 1)) << 80) | (random & ((1u128 << 80) - 1));
        let mut s = String::with_capacity(ID_LEN);
        for i in (0..ID_LEN).rev() {
            s.push(char::from(ALPHABET[((value >> (5 * i)) & 31) as usize]));
        }
        RunId(s)
    }

    /// The milliseconds since the Unix epoch at which the id was made.
    pub fn timestamp_ms(&self) -> u64 {
        (decode(&self.0).unwrap_or(0) >> 80) as u64
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for RunId {
    fn default() -> Self {
        RunId::new()
    }
}

/// 80 bits that differ between processes and calls: SHA-256 over the time, the process id, a
/// per-process counter and an address, enough to keep concurrent CI jobs' ids apart without a
/// random-number crate.
fn random_bits(nanos: u128) -> u128 {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let local = 0u8;
    let mut h = Sha256::new();
    h.update(nanos.to_le_bytes());
    h.update(std::process::id().to_le_bytes());
    h.update(n.to_le_bytes());
    h.update((std::ptr::addr_of!(local) as usize).to_le_bytes());
    h.update(format!("{:?}", std::thread::current().id()).as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 16];
    b[6..].copy_from_slice(&d[..10]);
    u128::from_be_bytes(b)
}

fn decode(s: &str) -> Option<u128> {
    if s.len() != ID_LEN {
        return None;
    }
    let mut v: u128 = 0;
    for (i, c) in s.bytes().enumerate() {
        let d = ALPHABET.iter().position(|&a| a == c.to_ascii_uppercase())? as u128;
        // The first character carries 3 bits only (26 × 5 = 130 > 128).
        if i == 0 && d > 7 {
            return None;
        }
        v = (v << 5) | d;
    }
    Some(v)
}

/// Text that is not a run id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRunId(pub String);

impl fmt::Display for BadRunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a run id (26 characters of Crockford base 32, the first 0-7)",
            self.0
        )
    }
}

impl std::error::Error for BadRunId {}

impl FromStr for RunId {
    type Err = BadRunId;

    /// Accepts lower case too; the id is kept in upper case.
    fn from_str(s: &str) -> Result<RunId, BadRunId> {
        match decode(s) {
            Some(_) => Ok(RunId(s.to_ascii_uppercase())),
            None => Err(BadRunId(s.to_owned())),
        }
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for RunId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for RunId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_layout() {
        assert_eq!(
            RunId::from_parts(0, 0).as_str(),
            "00000000000000000000000000"
        );
        assert_eq!(
            RunId::from_parts((1 << 48) - 1, (1u128 << 80) - 1).as_str(),
            "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"
        );
        // 1 ms: the 48-bit time ends at character 10 (bit 80 is the lowest of character 9).
        assert_eq!(
            RunId::from_parts(1, 0).as_str(),
            "00000000010000000000000000"
        );
        assert!("8ZZZZZZZZZZZZZZZZZZZZZZZZZ".parse::<RunId>().is_err());
        assert!("0000000001000000000000000".parse::<RunId>().is_err());
        assert!("0000000001000000000000000U".parse::<RunId>().is_err());
        let id: RunId = "01jdx3v8q2m7r4k9n0t5w6y1zb".parse().unwrap();
        assert_eq!(id.as_str(), "01JDX3V8Q2M7R4K9N0T5W6Y1ZB");
    }

    #[test]
    fn ids_made_in_a_row_increase_and_carry_the_time() {
        let before = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let ids: Vec<RunId> = (0..1000).map(|_| RunId::new()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(ids[0].timestamp_ms() >= before);
        assert!(ids[999].timestamp_ms() <= before + 60_000);
    }

    proptest! {
        #[test]
        fn text_order_is_numeric_order(a in 0u64..(1 << 48), b in 0u64..(1 << 48), ra: u128, rb: u128) {
            let (x, y) = (RunId::from_parts(a, ra), RunId::from_parts(b, rb));
            let (ra, rb) = (ra & ((1u128 << 80) - 1), rb & ((1u128 << 80) - 1));
            prop_assert_eq!(x.cmp(&y), (a, ra).cmp(&(b, rb)));
            prop_assert_eq!(x.timestamp_ms(), a);
            prop_assert_eq!(x.as_str().parse::<RunId>().unwrap(), x);
        }
    }
}
