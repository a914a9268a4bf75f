//! Public ids: the lowercase hex MD5 of an internal id, a box key or an edge key.

use std::fmt;

use md5::{Digest, Md5};

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
    /// `buf`. One at a time with md-5: hashing eight side by side (the former `md5lanes`)
    /// measured no faster (docs/exceptions.md).
    pub fn of_each(n: usize, write: impl Fn(usize, &mut Vec<u8>)) -> Vec<Self> {
        let mut buf = Vec::new();
        (0..n)
            .map(|i| {
                buf.clear();
                write(i, &mut buf);
                Self::hex(&Md5::digest(&buf).into())
            })
            .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_the_lowercase_hex_md5_of_each_message() {
        let msgs: Vec<String> = (0..300).map(|i| "x".repeat(i)).collect();
        let each = Hash32::of_each(msgs.len(), |i, b| b.extend_from_slice(msgs[i].as_bytes()));
        for (m, h) in msgs.iter().zip(&each) {
            assert_eq!(*h, Hash32::of(&[m.as_bytes()]));
        }
        assert_eq!(each[0].as_str(), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(md5_hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
    }
}
