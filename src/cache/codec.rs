//! Vectors as SQLite blobs.

/// A vector as a compact blob: each component's IEEE-754 bits, little-endian, so every value
/// (NaN payloads, infinities, negative zero) comes back bit for bit.
pub(super) fn encode_vector(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The inverse of [`encode_vector`]; `None` when the length is not a multiple of four.
pub(super) fn decode_vector(blob: &[u8]) -> Option<Vec<f32>> {
    if !blob.len().is_multiple_of(4) {
        return None;
    }
    Some(
        blob.chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    )
}
