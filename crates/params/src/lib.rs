//! Request parameters and time: typed query strings ([`query`]), the two duration grammars
//! users write, Go booleans, and the server clock. Every crate that reads a user's text value
//! or the time uses these.
//!
//! Two duration grammars are deliberate: Kiali's graph `duration` is parsed by Go's
//! `time.ParseDuration` ([`parse_go_duration`]); `rateInterval`, dashboard windows and the
//! configuration's durations are Prometheus durations ([`parse_prometheus_duration`]).

#![forbid(unsafe_code)]

mod histogram;
pub mod query;

pub use histogram::{DurationHistogram, duration_histogram_setting};

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Go's `time.ParseDuration` as Kiali's graph accepts it: one or more `<decimal><unit>` parts,
/// units `ns`, `us`/`µs`, `ms`, `s`, `m`, `h` (`600s`, `1h30m`, `1.5h`). No sign, no bare number.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let s = text.trim();
    if s.is_empty() {
        return None;
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let factor = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += n * factor;
    }
    Duration::try_from_secs_f64(total).ok()
}

/// Prometheus's duration grammar: one or more `<integer><unit>` parts, units `ms`, `s`, `m`,
/// `h`, `d`, `w`, `y` (`10m`, `1h30m`, `250ms`); a bare integer is seconds (as the HTTP API's
/// `step`). No fractions, no sign.
pub fn parse_prometheus_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    if t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse::<u64>().ok().map(Duration::from_secs);
    }
    let mut total: u128 = 0;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let n: u128 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let millis_per: u128 = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "w" => 604_800_000,
            "y" => 31_536_000_000,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total = total.checked_add(n.checked_mul(millis_per)?)?;
    }
    u64::try_from(total).ok().map(Duration::from_millis)
}

/// Formats a duration so that [`parse_prometheus_duration`] reads it back (`90s`, `10m`, `2h`).
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) {
        format!("{ms}ms")
    } else {
        let s = ms / 1000;
        if s.is_multiple_of(3600) && s > 0 {
            format!("{}h", s / 3600)
        } else if s.is_multiple_of(60) && s > 0 {
            format!("{}m", s / 60)
        } else {
            format!("{s}s")
        }
    }
}

/// A configuration duration: written as a Prometheus duration (`10s`, `24h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        parse_prometheus_duration(&text).map(HumanDuration).ok_or_else(|| {
            serde::de::Error::custom("expected a duration such as \"10s\", \"5m\" or \"24h\"")
        })
    }
}

/// Parses a boolean the way Go's `strconv.ParseBool` does (Kiali's clients send these forms).
pub fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// A `queryTime`: positive Unix seconds (surrounding blanks allowed, as Kiali's clients send).
pub fn parse_unix_seconds(text: &str) -> Option<i64> {
    text.trim().parse::<i64>().ok().filter(|t| *t > 0)
}

/// The server's clock in Unix seconds (what `queryTime` and windows are checked against).
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Option<Duration> {
        Some(Duration::from_millis(n))
    }

    /// One table for both grammars: input, Go's answer, Prometheus's answer.
    #[test]
    fn both_duration_grammars() {
        let table: &[(&str, Option<Duration>, Option<Duration>)] = &[
            ("600s", ms(600_000), ms(600_000)),
            ("10m", ms(600_000), ms(600_000)),
            ("1h30m", ms(5_400_000), ms(5_400_000)),
            ("250ms", ms(250), ms(250)),
            (" 10m ", ms(600_000), ms(600_000)),
            ("1.5h", ms(5_400_000), None),
            ("1500us", ms(1), None),
            ("1500µs", ms(1), None),
            ("90", None, ms(90_000)),
            ("1d", None, ms(86_400_000)),
            ("2w", None, ms(1_209_600_000)),
            ("1y", None, ms(31_536_000_000)),
            ("", None, None),
            ("m", None, None),
            ("10x", None, None),
            ("-5m", None, None),
            ("+5", None, None),
            ("5 m", None, None),
            ("soon", None, None),
            ("99999999999999999999y", None, None),
        ];
        for (input, go, prom) in table {
            let round =
                |d: Option<Duration>| d.map(|d| Duration::from_millis(d.as_millis() as u64));
            assert_eq!(round(parse_go_duration(input)), *go, "go {input:?}");
            assert_eq!(parse_prometheus_duration(input), *prom, "prometheus {input:?}");
        }
    }

    #[test]
    fn durations_format_back() {
        for (d, text) in [(600, "10m"), (17, "17s"), (7200, "2h"), (0, "0s")] {
            assert_eq!(format_duration(Duration::from_secs(d)), text);
            assert_eq!(parse_prometheus_duration(text), Some(Duration::from_secs(d)));
        }
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn bools_parse_like_go() {
        for t in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_bool(t), Some(true), "{t}");
        }
        for f in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_bool(f), Some(false), "{f}");
        }
        for bad in ["yes", "tRUE", "", " true"] {
            assert_eq!(parse_bool(bad), None, "{bad}");
        }
    }

    #[test]
    fn query_times_are_positive_unix_seconds() {
        assert_eq!(parse_unix_seconds(" 1523364061 "), Some(1_523_364_061));
        for bad in ["0", "-5", "now", "1.5", ""] {
            assert_eq!(parse_unix_seconds(bad), None, "{bad}");
        }
    }

    #[test]
    fn clock_is_unix_seconds() {
        assert!(now() > 1_600_000_000);
    }
}
