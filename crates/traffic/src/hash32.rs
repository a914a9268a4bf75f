//! Public ids: the lowercase hex MD5 of an internal id, a box key or an edge key.

use std::fmt;

use md5::{Digest, Md5};

use crate::md5lanes::{LANES, digests};

/// A public id: the lowercase hex MD5 of an internal id, a box key or an edge key. Kept
/// inline (ids are copied into every edge and compared while sorting).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hash32([u8; 32]);

impl Hash32 {
    /// The MD5 of the concatenated parts.
    pub fn of(parts: &[&[u8]]) -> Self {
        let mut h = Md5::new();
        for p in parts {
            h.update(p);
        }
        Self::hex(&h.finalize().into())
    }
    /// The id of each of `n` messages; `write(i, buf)` appends message `i` to an empty
    /// `buf`. Hashes [`LANES`] messages side by side (several times faster than one by one).
    pub fn of_each(n: usize, write: impl Fn(usize, &mut Vec<u8>)) -> Vec<Self> {
        let mut out = Vec::with_capacity(n);
        let mut bufs: [Vec<u8>; LANES] = Default::default();
        for start in (0..n).step_by(LANES) {
            let lanes = LANES.min(n - start);
            for (i, b) in bufs.iter_mut().take(lanes).enumerate() {
                b.clear();
                write(start + i, b);
            }
            let msgs: [&[u8]; LANES] = std::array::from_fn(|i| bufs[i].as_slice());
            out.extend(digests(&msgs[..lanes]).iter().map(Self::hex));
        }
        out
    }
    fn hex(digest: &[u8; 16]) -> Self {
        let mut out = [0u8; 32];
        for (i, b) in digest.iter().enumerate() {
            out[2 * i] = b"0123456789abcdef"[usize::from(b >> 4)];
            out[2 * i + 1] = b"0123456789abcdef"[usize::from(b & 15)];
        }
        Hash32(out)
    }
    /// The first 16 hex digits (64 bits), in the same order as the whole.
    pub fn prefix(&self) -> u128 {
        let mut b = [0u8; 16];
        b.copy_from_slice(&self.0[..16]);
        u128::from_be_bytes(b)
    }
    /// The 32 hex digits, as bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
    /// The 32 hex digits.
    pub fn as_str(&self) -> &str {
        // Always ASCII hex; the fallback is unreachable.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl fmt::Display for Hash32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Hash32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Lowercase hex MD5 of `s` (the public id of a node, edge or box).
pub fn md5_hex(s: &str) -> String {
    Hash32::of(&[s.as_bytes()]).as_str().to_string()
}
