//! SHA-256 fingerprints as lowercase hex: chunk ids, cache keys, dataset and text hashes.

use sha2::{Digest, Sha256};

/// Appends the lowercase hex of `bytes` to `out`.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(2 * bytes.len());
    for b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
}

/// The lowercase hex of `bytes`.
///
/// ```
/// assert_eq!(rag_eval::digest::hex(&[0x00, 0xab, 0x7f]), "00ab7f");
/// ```
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::new();
    push_hex(&mut out, bytes);
    out
}

/// The first 16 hex digits (8 bytes) of a finished SHA-256: enough to tell inputs apart in
/// file names, run records and resume checks, short enough to read.
pub fn short_hex(hasher: Sha256) -> String {
    hex(&hasher.finalize()[..8])
}

/// The first 16 hex digits of the SHA-256 of `bytes`.
///
/// ```
/// assert_eq!(rag_eval::digest::short_sha256(b"hello"), "2cf24dba5fb0a30e");
/// ```
pub fn short_sha256(bytes: &[u8]) -> String {
    short_hex(Sha256::new_with_prefix(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_agrees_with_format_for_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let expected: String = all.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&all), expected);
        let mut s = String::from("id_");
        push_hex(&mut s, &[0xff, 0x01]);
        assert_eq!(s, "id_ff01");
    }

    #[test]
    fn short_hashes_are_the_known_digest_prefix() {
        // SHA-256("") = e3b0c44298fc1c14 9afbf4c8996fb924…
        assert_eq!(short_sha256(b""), "e3b0c44298fc1c14");
        let mut h = Sha256::new();
        h.update(b"hel");
        h.update(b"lo");
        assert_eq!(short_hex(h), short_sha256(b"hello"));
    }
}
