//! Exact vector search against a NumPy brute force (being written).

fn main() {}
