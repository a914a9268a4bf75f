//! A health rule's pattern: most are "anything" or a few literal words (`http|grpc`, `5XX`),
//! which need no regular expression. On the 1,000-namespace graph the health appender
//! judges 10,000 nodes, each on a dozen patterns; through the regex engine that was most
//! of its time.

use regex::Regex;

/// A compiled pattern, matched against the whole value.
#[derive(Clone, Debug)]
pub(crate) enum Pattern {
    /// Unset, empty or `.*`.
    Any,
    /// Alternatives of plain words; in a code pattern `X`/`x` stands for an ASCII digit.
    Words { words: Vec<String>, digits: bool, regex: Regex },
    /// Anything else.
    Regex(Regex),
}

/// True for a byte that is itself in a regex: no metacharacter, no escape.
fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

impl Pattern {
    /// The pattern `p` (already unset → `.*`), with `regex` its compiled whole-value form.
    /// `digits`: a code pattern, whose `X` was rewritten to `\d` in `regex`.
    pub(crate) fn new(p: &str, digits: bool, regex: Regex) -> Pattern {
        if p == ".*" {
            return Pattern::Any;
        }
        // `^a$|b`: anchors on a part add nothing once the whole value must match.
        let words: Option<Vec<String>> = p
            .split('|')
            .map(|w| {
                let w = w.strip_prefix('^').unwrap_or(w);
                let w = w.strip_suffix('$').unwrap_or(w);
                (!w.is_empty() && w.bytes().all(plain)).then(|| w.to_string())
            })
            .collect();
        match words {
            Some(words) => Pattern::Words { words, digits, regex },
            None => Pattern::Regex(regex),
        }
    }

    pub(crate) fn is_match(&self, value: &str) -> bool {
        match self {
            Pattern::Any => true,
            // `\d` is any Unicode digit: a value beyond ASCII goes to the regex.
            Pattern::Words { regex, .. } if !value.is_ascii() => regex.is_match(value),
            Pattern::Words { words, digits, .. } => {
                words.iter().any(|w| word_matches(w.as_bytes(), value.as_bytes(), *digits))
            }
            Pattern::Regex(r) => r.is_match(value),
        }
    }
}

fn word_matches(word: &[u8], value: &[u8], digits: bool) -> bool {
    word.len() == value.len()
        && word.iter().zip(value).all(|(w, v)| match w {
            // A code's `X` is a digit only, never the letter itself.
            b'X' | b'x' if digits => v.is_ascii_digit(),
            _ => w == v,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast forms against the regex they stand for (the reference).
    #[test]
    fn fast_patterns_match_what_their_regex_matches() {
        let patterns = [
            (".*", false),
            ("http", false),
            ("http|grpc", false),
            ("^-$", true),
            ("5XX", true),
            ("4xx|5XX", true),
            ("503", true),
            ("^[1-9]$|^1[0-6]$", true),
            ("review.*", false),
            ("X", false),
            ("inbound", false),
            ("a|", false),
        ];
        let values = [
            "", "http", "grpc", "https", "http2", "-", "500", "5000", "50", "503", "404", "4x4",
            "X", "x", "1", "16", "17", "reviews", "review", "inbound", "outbound", "a", "٥00",
            "5٥٥",
        ];
        for (p, digits) in patterns {
            let text = if digits { p.replace(['X', 'x'], "\\d") } else { p.to_string() };
            let regex = Regex::new(&format!("^(?:{text})$")).expect("pattern");
            let fast = Pattern::new(p, digits, regex.clone());
            for v in values {
                assert_eq!(fast.is_match(v), regex.is_match(v), "pattern {p:?} on {v:?}");
            }
        }
        assert!(matches!(Pattern::new(".*", false, Regex::new("").unwrap()), Pattern::Any));
        let words = |p: &str| {
            matches!(Pattern::new(p, true, Regex::new("").unwrap()), Pattern::Words { .. })
        };
        assert!(words("5XX") && words("http|grpc") && words("^-$"));
        assert!(!words("^[1-9]$|^1[0-6]$") && !words("a|") && !words("review.*"));
    }
}
