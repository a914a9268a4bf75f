//! Reading OpenMetrics and Prometheus text exposition files with timestamps.
//!
//! What is accepted:
//! - **OpenMetrics** (the file's last non-blank line is `# EOF`): timestamps are seconds,
//!   possibly fractional (what `promtool tsdb create-blocks-from openmetrics` reads).
//! - **Prometheus text format** (no `# EOF`): timestamps are integer milliseconds.
//! - A sample without a timestamp gets the file's modification time.
//! - `# TYPE`, `# HELP`, `# UNIT` and other comment lines are skipped; so are OpenMetrics
//!   exemplars (`... # {trace_id="x"} 1 123`). Values may be `NaN`, `+Inf`, `-Inf`.
//! - Label values may use the escapes `\\`, `\"` and `\n`.
//! - Samples of one series must be in time order; a sample that is not after the previous
//!   one of its series is dropped (and counted), as Prometheus's TSDB does.

use std::{
    fs::File,
    io::{BufRead, BufReader, Read, Seek, SeekFrom},
    path::Path,
};

use crate::store::Store;

/// A parse failure with its line number.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A line is not valid exposition text.
    #[error("{path}:{line}: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// Whether the file ends with `# EOF` (OpenMetrics) — decided from its last bytes.
fn is_openmetrics(file: &mut File) -> std::io::Result<bool> {
    let len = file.metadata()?.len();
    let tail = len.min(256);
    file.seek(SeekFrom::Start(len - tail))?;
    let mut buf = Vec::with_capacity(tail as usize);
    file.take(tail).read_to_end(&mut buf)?;
    file.seek(SeekFrom::Start(0))?;
    let text = String::from_utf8_lossy(&buf);
    Ok(text.lines().rev().find(|l| !l.trim().is_empty()).is_some_and(|l| l.trim() == "# EOF"))
}

/// Loads a whole file into a new store.
pub fn load(path: &Path) -> Result<Store, LoadError> {
    let shown = path.display().to_string();
    let io = |source| LoadError::Io { path: shown.clone(), source };
    let mut file = File::open(path).map_err(io)?;
    let openmetrics = is_openmetrics(&mut file).map_err(io)?;
    let mtime_ms = file
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0);
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut store = Store::default();
    let mut parser = LineParser { openmetrics, mtime_ms, last_head: String::new(), last_series: 0 };
    let mut line = String::new();
    let mut number = 0usize;
    loop {
        line.clear();
        if reader.read_line(&mut line).map_err(io)? == 0 {
            break;
        }
        number += 1;
        parser
            .line(&mut store, line.trim_end_matches(['\n', '\r']))
            .map_err(|message| LoadError::Syntax { path: shown.clone(), line: number, message })?;
    }
    if store.dropped_out_of_order > 0 {
        tracing::warn!(file = %shown, dropped = store.dropped_out_of_order, "samples out of time order were dropped");
    }
    store.finish();
    Ok(store)
}

/// Parses text held in memory (tests and benchmarks); `openmetrics` as detected for files.
pub fn load_str(text: &str, openmetrics: bool) -> Result<Store, String> {
    let mut store = Store::default();
    let mut parser =
        LineParser { openmetrics, mtime_ms: 0.0, last_head: String::new(), last_series: 0 };
    for (i, line) in text.lines().enumerate() {
        parser.line(&mut store, line).map_err(|m| format!("line {}: {m}", i + 1))?;
    }
    store.finish();
    Ok(store)
}

struct LineParser {
    openmetrics: bool,
    mtime_ms: f64,
    /// The `name{labels}` text of the previous sample line and its series: consecutive lines
    /// of one series skip label parsing.
    last_head: String,
    last_series: u32,
}

impl LineParser {
    fn line(&mut self, store: &mut Store, line: &str) -> Result<(), String> {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            return Ok(());
        }
        let head_end = head_len(line)?;
        let (head, rest) = line.split_at(head_end);
        let series = if head == self.last_head && !self.last_head.is_empty() {
            self.last_series
        } else {
            let id = parse_head(store, head)?;
            self.last_head.clear();
            self.last_head.push_str(head);
            self.last_series = id;
            id
        };
        // Drop an exemplar: everything after " # ".
        let rest = rest.split(" # ").next().unwrap_or("");
        let mut fields = rest.split_ascii_whitespace();
        let value = parse_value(fields.next().ok_or("missing value")?)?;
        let t_ms = match fields.next() {
            None => self.mtime_ms,
            Some(ts) if self.openmetrics => {
                let secs: f64 = ts.parse().map_err(|_| format!("bad timestamp {ts:?}"))?;
                // Whole milliseconds, as Prometheus stores them.
                (secs * 1000.0).round()
            }
            Some(ts) => {
                ts.parse::<i64>().map_err(|_| format!("bad millisecond timestamp {ts:?}"))? as f64
            }
        };
        if !t_ms.is_finite() {
            return Err("timestamp is not finite".into());
        }
        store.push(series, t_ms, value);
        Ok(())
    }
}

fn parse_value(text: &str) -> Result<f64, String> {
    match text {
        "NaN" | "nan" => Ok(f64::NAN),
        "+Inf" | "Inf" | "+inf" | "inf" => Ok(f64::INFINITY),
        "-Inf" | "-inf" => Ok(f64::NEG_INFINITY),
        t => t.parse().map_err(|_| format!("bad value {t:?}")),
    }
}

/// Length of `name{...}` (or just `name`) at the start of the line.
fn head_len(line: &str) -> Result<usize, String> {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() && !matches!(bytes[i], b'{' | b' ' | b'\t') {
        i += 1;
    }
    if i == 0 {
        return Err("missing metric name".into());
    }
    if i < bytes.len() && bytes[i] == b'{' {
        let mut in_str = false;
        let mut esc = false;
        while i < bytes.len() {
            let c = bytes[i];
            i += 1;
            if in_str {
                if esc {
                    esc = false;
                } else if c == b'\\' {
                    esc = true;
                } else if c == b'"' {
                    in_str = false;
                }
            } else if c == b'"' {
                in_str = true;
            } else if c == b'}' {
                return Ok(i);
            }
        }
        return Err("unterminated label set".into());
    }
    Ok(i)
}

fn parse_head(store: &mut Store, head: &str) -> Result<u32, String> {
    let (name, labels_text) = match head.find('{') {
        Some(i) => (&head[..i], &head[i + 1..head.len() - 1]),
        None => (head, ""),
    };
    if !valid_name(name, true) {
        return Err(format!("invalid metric name {name:?}"));
    }
    let name_id = store.intern(name);
    let mut labels = Vec::new();
    let bytes = labels_text.as_bytes();
    let mut i = 0;
    let mut value = String::new();
    loop {
        while i < bytes.len() && matches!(bytes[i], b' ' | b',') {
            i += 1;
        }
        if i >= bytes.len() {
            break;
        }
        let start = i;
        while i < bytes.len() && bytes[i] != b'=' {
            i += 1;
        }
        let lname = labels_text[start..i].trim();
        if !valid_name(lname, false) {
            return Err(format!("invalid label name {lname:?}"));
        }
        i += 1;
        if i >= bytes.len() || bytes[i] != b'"' {
            return Err(format!("label {lname} has no quoted value"));
        }
        i += 1;
        value.clear();
        loop {
            let Some(&c) = bytes.get(i) else { return Err("unterminated label value".into()) };
            match c {
                b'"' => {
                    i += 1;
                    break;
                }
                b'\\' => {
                    match bytes.get(i + 1) {
                        Some(b'n') => value.push('\n'),
                        Some(b'\\') => value.push('\\'),
                        Some(b'"') => value.push('"'),
                        _ => return Err("bad escape in label value".into()),
                    }
                    i += 2;
                }
                _ => {
                    // Copy a run of plain bytes at once (keeps UTF-8 intact).
                    let run = i;
                    while i < bytes.len() && !matches!(bytes[i], b'"' | b'\\') {
                        i += 1;
                    }
                    value.push_str(&labels_text[run..i]);
                }
            }
        }
        // Prometheus treats an empty label value as an absent label.
        if !value.is_empty() && lname != "__name__" {
            let n = store.intern(lname);
            let v = store.intern(&value);
            labels.push((n, v));
        }
    }
    Ok(store.series_id(name_id, labels))
}

fn valid_name(name: &str, metric: bool) -> bool {
    let mut chars = name.chars();
    let ok_first = |c: char| c.is_ascii_alphabetic() || c == '_' || (metric && c == ':');
    matches!(chars.next(), Some(c) if ok_first(c))
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (metric && c == ':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_seconds_and_text_milliseconds() {
        let om = "# TYPE m counter\nm_total{a=\"x\"} 1 100\nm_total{a=\"x\"} 2 115.5 # {trace_id=\"t\"} 1 115\n# EOF\n";
        let s = load_str(om, true).unwrap();
        let ids = s.named("m_total");
        assert_eq!(ids.len(), 1);
        assert_eq!(s.series[ids[0] as usize].samples, vec![(100_000.0, 1.0), (115_500.0, 2.0)]);
        let text = "m{a=\"x\"} 1 100000\nm{a=\"x\"} +Inf 115000\n";
        let s = load_str(text, false).unwrap();
        assert_eq!(s.series[0].samples, vec![(100_000.0, 1.0), (115_000.0, f64::INFINITY)]);
    }

    #[test]
    fn escapes_and_label_sets() {
        let s = load_str(
            "m{b=\"q\\\"\\\\\\n\",a=\"{,}\"} 1 1\nm{a=\"{,}\",b=\"q\\\"\\\\\\n\"} 2 2\n",
            true,
        )
        .unwrap();
        assert_eq!(s.series.len(), 1, "the same labels in another order are one series");
        let sd = &s.series[0];
        let a = s.sym("a").unwrap();
        let b = s.sym("b").unwrap();
        assert_eq!(s.text(sd.label(a).unwrap()), "{,}");
        assert_eq!(s.text(sd.label(b).unwrap()), "q\"\\\n");
        assert_eq!(sd.samples.len(), 2);
    }

    #[test]
    fn out_of_order_samples_are_dropped_and_syntax_errors_named() {
        let s = load_str("m 1 10\nm 2 5\nm 3 20\n", true).unwrap();
        assert_eq!(s.series[0].samples, vec![(10_000.0, 1.0), (20_000.0, 3.0)]);
        assert_eq!(s.dropped_out_of_order, 1);
        let e = load_str("m 1 10\nm{a=1} 2 20\n", true).err().unwrap();
        assert!(e.starts_with("line 2"), "{e}");
        assert!(load_str("m x 10\n", true).is_err());
    }
}
