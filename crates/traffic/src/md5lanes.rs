//! MD5 of many short messages at once (node, edge and box ids).
//!
//! One MD5 is a chain of 64 dependent steps per block, so a single hash keeps a core mostly
//! waiting; a graph of 40,000 elements spent a tenth of its time there. Running [`LANES`]
//! independent messages step by step side by side lets the compiler use vector registers
//! (plain arrays, no `unsafe`) and gives about the throughput of several cores.

/// Messages hashed side by side.
pub const LANES: usize = 8;

const K: [u32; 64] = [
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
];

const S: [[u32; 4]; 4] = [[7, 12, 17, 22], [5, 9, 14, 20], [4, 11, 16, 23], [6, 10, 15, 21]];

const INIT: [u32; 4] = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476];

type Lanes = [u32; LANES];

/// Block `k` of `msg` after MD5 padding (`0x80`, zeros, the bit length), as 16 words.
fn padded_block(msg: &[u8], k: usize, words: &mut [u32; 16]) {
    let mut b = [0u8; 64];
    let start = 64 * k;
    if start < msg.len() {
        let end = msg.len().min(start + 64);
        b[..end - start].copy_from_slice(&msg[start..end]);
    }
    if (start..start + 64).contains(&msg.len()) {
        b[msg.len() - start] = 0x80;
    }
    if k + 1 == blocks(msg.len()) {
        b[56..].copy_from_slice(&((msg.len() as u64).wrapping_mul(8)).to_le_bytes());
    }
    for (w, c) in words.iter_mut().zip(b.chunks_exact(4)) {
        *w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    }
}

/// Padded blocks of a message of `len` bytes.
fn blocks(len: usize) -> usize {
    (len + 8) / 64 + 1
}

fn f0(b: u32, c: u32, d: u32) -> u32 {
    (b & c) | (!b & d)
}
fn f1(b: u32, c: u32, d: u32) -> u32 {
    (d & b) | (!d & c)
}
fn f2(b: u32, c: u32, d: u32) -> u32 {
    b ^ c ^ d
}
fn f3(b: u32, c: u32, d: u32) -> u32 {
    c ^ (b | !d)
}

/// One MD5 block on every lane. Written out step by step so that every shift and message
/// word is a constant and each step is one loop over the lanes (which vectorises).
fn compress(state: &mut [Lanes; 4], m: &[Lanes; 16]) {
    let [mut a, mut b, mut c, mut d] = *state;
    macro_rules! step {
        ($f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $g:expr, $s:expr, $k:expr) => {
            for l in 0..LANES {
                let x = $f($b[l], $c[l], $d[l])
                    .wrapping_add($a[l])
                    .wrapping_add($k)
                    .wrapping_add(m[$g][l]);
                $a[l] = $b[l].wrapping_add(x.rotate_left($s));
            }
        };
    }
    macro_rules! quad {
        ($f:ident, $i:expr, [$g0:expr, $g1:expr, $g2:expr, $g3:expr], $s:expr) => {
            step!($f, a, b, c, d, $g0, $s[0], K[$i]);
            step!($f, d, a, b, c, $g1, $s[1], K[$i + 1]);
            step!($f, c, d, a, b, $g2, $s[2], K[$i + 2]);
            step!($f, b, c, d, a, $g3, $s[3], K[$i + 3]);
        };
    }
    quad!(f0, 0, [0, 1, 2, 3], S[0]);
    quad!(f0, 4, [4, 5, 6, 7], S[0]);
    quad!(f0, 8, [8, 9, 10, 11], S[0]);
    quad!(f0, 12, [12, 13, 14, 15], S[0]);
    quad!(f1, 16, [1, 6, 11, 0], S[1]);
    quad!(f1, 20, [5, 10, 15, 4], S[1]);
    quad!(f1, 24, [9, 14, 3, 8], S[1]);
    quad!(f1, 28, [13, 2, 7, 12], S[1]);
    quad!(f2, 32, [5, 8, 11, 14], S[2]);
    quad!(f2, 36, [1, 4, 7, 10], S[2]);
    quad!(f2, 40, [13, 0, 3, 6], S[2]);
    quad!(f2, 44, [9, 12, 15, 2], S[2]);
    quad!(f3, 48, [0, 7, 14, 5], S[3]);
    quad!(f3, 52, [12, 3, 10, 1], S[3]);
    quad!(f3, 56, [8, 15, 6, 13], S[3]);
    quad!(f3, 60, [4, 11, 2, 9], S[3]);
    for (st, v) in state.iter_mut().zip([a, b, c, d]) {
        for l in 0..LANES {
            st[l] = st[l].wrapping_add(v[l]);
        }
    }
}

/// The MD5 digests of up to [`LANES`] messages (of any lengths), computed together.
pub fn digests(msgs: &[&[u8]]) -> Vec<[u8; 16]> {
    debug_assert!(msgs.len() <= LANES);
    let n_blocks: Vec<usize> = msgs.iter().map(|m| blocks(m.len())).collect();
    let most = n_blocks.iter().copied().max().unwrap_or(0);
    let mut state: [Lanes; 4] = INIT.map(|v| [v; LANES]);
    let mut words = [0u32; 16];
    for k in 0..most {
        let mut m = [[0u32; LANES]; 16];
        for (l, msg) in msgs.iter().enumerate() {
            if k < n_blocks[l] {
                padded_block(msg, k, &mut words);
                for (w, v) in m.iter_mut().zip(words) {
                    w[l] = v;
                }
            }
        }
        let before = state;
        compress(&mut state, &m);
        // A lane whose message has ended keeps its digest.
        for (l, &n) in n_blocks.iter().enumerate() {
            if k >= n {
                for (st, old) in state.iter_mut().zip(&before) {
                    st[l] = old[l];
                }
            }
        }
    }
    (0..msgs.len())
        .map(|l| {
            let mut out = [0u8; 16];
            for (o, st) in out.chunks_exact_mut(4).zip(&state) {
                o.copy_from_slice(&st[l].to_le_bytes());
            }
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use md5::{Digest, Md5};

    use super::*;

    fn reference(m: &[u8]) -> [u8; 16] {
        Md5::digest(m).into()
    }

    #[test]
    fn every_length_across_block_boundaries_matches_md5() {
        // Lengths around 55/56/64 (where padding spills into another block) and beyond.
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in 0..=200 {
            let m = &data[..len];
            assert_eq!(digests(&[m]), vec![reference(m)], "length {len}");
        }
    }

    #[test]
    fn mixed_lengths_in_one_batch_each_get_their_own_digest() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 13 + 1) as u8).collect();
        for first in [0, 1, 55, 56, 63, 64, 70, 119, 120, 250] {
            let msgs: Vec<&[u8]> =
                (0..LANES).map(|l| &data[l..l + (first + 29 * l) % 290]).collect();
            let want: Vec<[u8; 16]> = msgs.iter().map(|m| reference(m)).collect();
            assert_eq!(digests(&msgs), want, "first length {first}");
        }
        assert!(digests(&[]).is_empty());
    }

    #[test]
    fn known_vectors() {
        let hex = |d: [u8; 16]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let got = digests(&[b"", b"abc", b"message digest"]);
        assert_eq!(hex(got[0]), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex(got[1]), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(hex(got[2]), "f96b697d7cb7938d525a2f31aaf161d0");
    }
}
