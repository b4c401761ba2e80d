//! The identifiers and timestamps LangSmith expects: UUIDs in their hyphenated form and
//! RFC 3339 times in UTC, plus the `dotted_order` that places a run in its trace.

use crate::calendar::civil_from_days;
use sha2::{Digest, Sha256};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A random (version 4) UUID.
pub fn random_uuid() -> String {
    let mut bytes = [0u8; 16];
    for b in &mut bytes {
        *b = fastrand::u8(..);
    }
    format_uuid(bytes, 4)
}

/// A UUID derived from `parts` (version 8, the one RFC 9562 leaves to applications): the same
/// parts always give the same id, so an upload that is repeated names the same objects and the
/// server recognises what it already holds.
pub fn derived_uuid(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        // Length-prefixed, so ("ab", "c") and ("a", "bc") differ.
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    let digest = h.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    format_uuid(bytes, 8)
}

fn format_uuid(mut bytes: [u8; 16], version: u8) -> String {
    bytes[6] = (bytes[6] & 0x0f) | (version << 4);
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Whether `text` is a UUID in the hyphenated form.
pub fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// A moment in UTC, to the microsecond, as LangSmith writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamp {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    micros: u32,
}

impl Timestamp {
    /// Now.
    pub fn now() -> Self {
        Timestamp::at(SystemTime::now())
    }

    /// `time` in UTC (times before 1970 read as 1970).
    pub fn at(time: SystemTime) -> Self {
        let since = time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
        let secs = since.as_secs();
        let (year, month, day) = civil_from_days((secs / 86_400) as i64);
        let rest = secs % 86_400;
        Timestamp {
            year,
            month,
            day,
            hour: (rest / 3600) as u32,
            minute: (rest / 60 % 60) as u32,
            second: (rest % 60) as u32,
            micros: since.subsec_micros(),
        }
    }

    /// `2026-11-24T01:02:03.000004Z`.
    pub fn rfc3339(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.micros
        )
    }

    /// `20261124T010203000004Z`, the time part of a `dotted_order`.
    pub fn compact(&self) -> String {
        format!(
            "{:04}{:02}{:02}T{:02}{:02}{:02}{:06}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.micros
        )
    }
}

/// The `dotted_order` of a root run: its start time and id; a child appends `.` and its own.
pub fn root_dotted_order(start: &Timestamp, run_id: &str) -> String {
    format!("{}{run_id}", start.compact())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_match_known_dates() {
        let t = Timestamp::at(UNIX_EPOCH);
        assert_eq!(t.rfc3339(), "1970-01-01T00:00:00.000000Z");
        // 2000-02-29 (a leap day of a century year divisible by 400), from `date -d @951782400`.
        let t = Timestamp::at(UNIX_EPOCH + Duration::from_micros(951_782_400_000_007));
        assert_eq!(t.rfc3339(), "2000-02-29T00:00:00.000007Z");
        let t = Timestamp::at(UNIX_EPOCH + Duration::from_secs(1_795_482_123));
        assert_eq!(t.rfc3339(), "2026-11-24T01:02:03.000000Z");
        assert_eq!(t.compact(), "20261124T010203000000Z");
    }

    #[test]
    fn uuids_have_their_version_and_variant() {
        let r = random_uuid();
        assert!(is_uuid(&r), "{r}");
        assert_eq!(&r[14..15], "4");
        assert!(matches!(&r[19..20], "8" | "9" | "a" | "b"), "{r}");
        assert_ne!(random_uuid(), r);
        let d = derived_uuid(&["dataset", "q1"]);
        assert!(is_uuid(&d) && &d[14..15] == "8", "{d}");
        assert_eq!(d, derived_uuid(&["dataset", "q1"]));
        assert_ne!(d, derived_uuid(&["datasetq", "1"]));
        assert!(!is_uuid("q0001"));
        assert!(!is_uuid("0123456789abcdef0123456789abcdef0123"));
    }
}
