//! The rate strings of the graph JSON (`"10.00"`, `"47.6"`): fixed decimals, formatted as
//! `format!("{v:.N}")` would (round half to even on the exact binary value), but without
//! the general float formatter, which was a fifth of the output time on large graphs.

use std::borrow::Cow;
use std::fmt;

/// A number shown with a fixed count of decimals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fixed {
    /// The value.
    pub value: f64,
    /// Decimals shown (0 to 3 take the fast path).
    pub decimals: u8,
}

impl Fixed {
    /// Two decimals (rates).
    pub fn rate(value: f64) -> Self {
        Fixed { value, decimals: 2 }
    }
    /// One decimal (percentages).
    pub fn percent(value: f64) -> Self {
        Fixed { value, decimals: 1 }
    }
    /// No decimals (milliseconds).
    pub fn whole(value: f64) -> Self {
        Fixed { value, decimals: 0 }
    }

    /// The digits when they can be found by scaling to an integer: the value is
    /// non-negative, small enough that scaling loses under 1e-7, and not within 1e-6 of a
    /// rounding tie (where only the exact expansion decides).
    fn fast<'b>(&self, buf: &'b mut [u8; 24]) -> Option<&'b str> {
        const SCALE: [f64; 4] = [1.0, 10.0, 100.0, 1000.0];
        let d = usize::from(self.decimals);
        let scale = *SCALE.get(d)?;
        if !(self.value.is_sign_positive() && self.value.is_finite()) {
            return None;
        }
        let x = self.value * scale;
        if x >= 1e9 {
            return None;
        }
        // x < 1e9: the integer part fits a u32, and adding 0.5 is exact (ulp(x) <= 2^-22).
        let whole = x as u32;
        if ((x - f64::from(whole)) - 0.5).abs() < 1e-6 {
            return None;
        }
        let mut r = (x + 0.5) as u32;
        // Digits from the right, with the point d places in and at least one integer digit.
        let mut i = buf.len();
        let mut written = 0;
        while r > 0 || written <= d {
            if written == d && d > 0 {
                i -= 1;
                buf[i] = b'.';
            }
            i -= 1;
            buf[i] = b'0' + (r % 10) as u8;
            r /= 10;
            written += 1;
        }
        std::str::from_utf8(&buf[i..]).ok()
    }
}

impl Fixed {
    /// The shown digits, in `buf` when the fast path applies.
    pub fn digits<'b>(&self, buf: &'b mut [u8; 24]) -> Cow<'b, str> {
        match self.fast(buf) {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Owned(format!("{:.*}", usize::from(self.decimals), self.value)),
        }
    }
}

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.digits(&mut [0u8; 24]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow(v: f64, d: u8) -> String {
        format!("{:.*}", usize::from(d), v)
    }

    #[test]
    fn agrees_with_the_float_formatter() {
        let mut cases: Vec<f64> = vec![
            0.0,
            -0.0,
            0.004,
            0.005,
            0.015,
            0.125,
            0.375,
            0.25,
            2.5,
            3.5,
            1.005,
            1.015,
            0.045,
            9.995,
            99.95,
            99.995,
            100.0,
            47.619047619,
            1e7,
            9_999_999.995,
            1e9,
            1e20,
            -1.5,
            f64::NAN,
            f64::INFINITY,
            1e-300,
        ];
        // A deterministic spread of magnitudes and fractions (xorshift, no extra crate).
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let mantissa = (seed >> 11) as f64 / (1u64 << 53) as f64;
            let exp = (seed % 12) as i32 - 4;
            cases.push(mantissa * 10f64.powi(exp));
            // Values near the ties of each decimal count.
            cases.push(((seed % 100_000) as f64 + 0.5) / 1000.0);
        }
        for &v in &cases {
            for d in 0..=3u8 {
                let f = Fixed { value: v, decimals: d };
                assert_eq!(f.to_string(), slow(v, d), "{v:e} with {d} decimals");
                assert_eq!(
                    serde_json::to_string(&f).unwrap(),
                    format!("\"{}\"", slow(v, d)),
                    "{v:e}"
                );
            }
        }
    }
}
