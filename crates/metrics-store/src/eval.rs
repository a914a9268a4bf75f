//! Evaluating a structured query over the store with PromQL's semantics (as of Prometheus
//! 2.42, the version the comparison tests run against):
//!
//! - instant selectors take the newest sample at most 5 minutes old (the lookback delta);
//! - range windows hold the samples with `t - window <= ts <= t`;
//! - `rate`/`increase` follow `extrapolatedRate`: counter resets add the previous value,
//!   the result is extrapolated to the window edges when the first/last sample lies within
//!   1.1 average intervals of them (otherwise by half an average interval), and never below
//!   the counter's zero point; `irate` uses the last two samples;
//! - range functions drop the metric name; `sum by` keeps only the grouping labels;
//! - `histogram_quantile` follows `bucketQuantile` (needs a `+Inf` bucket, coalesces equal
//!   bounds, forces monotonic counts, interpolates linearly, the lowest bucket starts at 0).
//!
//! An evaluation stops early ([`Stop`]) past its deadline or once the host cancelled it,
//! checked at every step and every 4,096 series.

use std::{collections::HashMap, time::Instant};

use plugin_api::{
    Cancel, HistogramStat, MatchOp, MetricQuery, PluginError, QueryResult, QueryTime, RangeFunc,
    Sample, Series,
};
use regex::Regex;

use crate::store::{NAME, SeriesData, Store};

/// Prometheus's lookback delta for instant selectors.
const LOOKBACK_MS: f64 = 300_000.0;
/// Prometheus's limit on points per series in a range query.
const MAX_POINTS: i64 = 11_000;

type Key = Vec<(u32, u32)>;

/// When an evaluation gives up: past its deadline, or once the host set its flag (nobody
/// waits for the answer any more).
#[derive(Clone, Copy)]
pub struct Stop<'a> {
    /// The call's deadline.
    pub deadline: Instant,
    /// The host's cancellation flag, when the call came with one.
    pub cancel: Option<&'a Cancel>,
}

impl<'a> Stop<'a> {
    /// Only a deadline.
    pub fn at(deadline: Instant) -> Stop<'static> {
        Stop { deadline, cancel: None }
    }

    /// A call's: `timeout` from now, or once the host sets `cancel`.
    pub fn within(timeout: std::time::Duration, cancel: &'a Cancel) -> Stop<'a> {
        Stop { deadline: Instant::now() + timeout, cancel: Some(cancel) }
    }

    fn check(&self) -> Result<(), PluginError> {
        if self.cancel.is_some_and(Cancel::is_cancelled) {
            return Err(PluginError::cancelled());
        }
        if Instant::now() > self.deadline { Err(timeout()) } else { Ok(()) }
    }
}

enum Test {
    Eq(String),
    Ne(String),
    Re(Regex),
    Nre(Regex),
}

struct CompiledMatcher {
    /// Label symbol; `None` when no series has that label (its value is then "").
    name: Option<u32>,
    test: Test,
}

impl CompiledMatcher {
    fn matches(&self, store: &Store, s: &SeriesData) -> bool {
        let value = self.name.and_then(|n| s.label(n)).map(|v| store.text(v)).unwrap_or("");
        match &self.test {
            Test::Eq(x) => value == x,
            Test::Ne(x) => value != x,
            Test::Re(r) => r.is_match(value),
            Test::Nre(r) => !r.is_match(value),
        }
    }
}

fn compile(store: &Store, q: &MetricQuery) -> Result<Vec<CompiledMatcher>, PluginError> {
    q.matchers
        .iter()
        .map(|m| {
            let anchored = |re: &str| {
                Regex::new(&format!("^(?:{re})$")).map_err(|e| {
                    PluginError::invalid(format!("invalid regular expression {re:?}: {e}"))
                })
            };
            let test = match m.op {
                MatchOp::Eq => Test::Eq(m.value.to_string()),
                MatchOp::Ne => Test::Ne(m.value.to_string()),
                MatchOp::Re => Test::Re(anchored(m.value.as_str())?),
                MatchOp::Nre => Test::Nre(anchored(m.value.as_str())?),
            };
            Ok(CompiledMatcher { name: store.sym(m.name.as_str()), test })
        })
        .collect()
}

/// Series ids selected by `metric` (may be empty: then `__name__` matchers decide) and the matchers.
fn select(store: &Store, metric: &str, matchers: &[CompiledMatcher]) -> Vec<u32> {
    let keep = |id: &u32| {
        let s = &store.series[*id as usize];
        matchers.iter().all(|m| m.matches(store, s))
    };
    if metric.is_empty() {
        (0..store.series.len() as u32).filter(keep).collect()
    } else {
        store.named(metric).iter().copied().filter(keep).collect()
    }
}

/// The samples with `from <= t <= to`.
fn window(samples: &[(f64, f64)], from: f64, to: f64) -> &[(f64, f64)] {
    let a = samples.partition_point(|(t, _)| *t < from);
    let b = samples.partition_point(|(t, _)| *t <= to);
    if a >= b { &[] } else { &samples[a..b] }
}

/// Prometheus's `extrapolatedRate` (2.42).
fn extrapolated_rate(
    points: &[(f64, f64)],
    range_start: f64,
    range_end: f64,
    is_rate: bool,
) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let (first_t, first_v) = points[0];
    let (last_t, last_v) = points[points.len() - 1];
    let mut result = last_v - first_v;
    let mut last_value = 0.0;
    for &(_, v) in points {
        if v < last_value {
            result += last_value;
        }
        last_value = v;
    }
    let mut duration_to_start = (first_t - range_start) / 1000.0;
    let duration_to_end = (range_end - last_t) / 1000.0;
    let sampled_interval = (last_t - first_t) / 1000.0;
    let average = sampled_interval / (points.len() - 1) as f64;
    if result > 0.0 && first_v >= 0.0 {
        let duration_to_zero = sampled_interval * (first_v / result);
        if duration_to_zero < duration_to_start {
            duration_to_start = duration_to_zero;
        }
    }
    let threshold = average * 1.1;
    let mut extrapolate_to = sampled_interval;
    extrapolate_to += if duration_to_start < threshold { duration_to_start } else { average / 2.0 };
    extrapolate_to += if duration_to_end < threshold { duration_to_end } else { average / 2.0 };
    let mut value = result * (extrapolate_to / sampled_interval);
    if is_rate {
        value /= (range_end - range_start) / 1000.0;
    }
    Some(value)
}

/// Prometheus's `instantValue` for `irate`.
fn instant_rate(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let (last_t, last_v) = points[points.len() - 1];
    let (prev_t, prev_v) = points[points.len() - 2];
    let delta = if last_v < prev_v { last_v } else { last_v - prev_v };
    let interval = last_t - prev_t;
    if interval == 0.0 {
        return None;
    }
    Some(delta / (interval / 1000.0))
}

/// The value of one series at `t_ms` under the query's range function.
fn series_value(s: &SeriesData, func: RangeFunc, window_ms: f64, t_ms: f64) -> Option<f64> {
    match func {
        RangeFunc::None => {
            let i = s.samples.partition_point(|(t, _)| *t <= t_ms);
            let (t, v) = *s.samples.get(i.checked_sub(1)?)?;
            (t >= t_ms - LOOKBACK_MS).then_some(v)
        }
        RangeFunc::Rate => extrapolated_rate(
            window(&s.samples, t_ms - window_ms, t_ms),
            t_ms - window_ms,
            t_ms,
            true,
        ),
        RangeFunc::Increase => extrapolated_rate(
            window(&s.samples, t_ms - window_ms, t_ms),
            t_ms - window_ms,
            t_ms,
            false,
        ),
        RangeFunc::Irate => instant_rate(window(&s.samples, t_ms - window_ms, t_ms)),
    }
}

/// How output keys are formed from a series.
struct Grouping {
    /// `None`: every label (except the name when `keep_name` is false).
    by: Option<Vec<u32>>,
    keep_name: bool,
}

impl Grouping {
    fn key(&self, s: &SeriesData) -> Key {
        match &self.by {
            Some(names) => names.iter().filter_map(|n| s.label(*n).map(|v| (*n, v))).collect(),
            None => {
                let mut k: Key = s.labels.to_vec();
                if self.keep_name {
                    k.push((NAME, s.name));
                }
                k
            }
        }
    }
}

/// `sum by` (or the identity when not grouping) over the selected series at one time.
fn vector(
    store: &Store,
    ids: &[u32],
    q: &MetricQuery,
    grouping: &Grouping,
    t_ms: f64,
    stop: Stop<'_>,
) -> Result<HashMap<Key, f64>, PluginError> {
    let window_ms = q.window_secs as f64 * 1000.0;
    let mut out: HashMap<Key, f64> = HashMap::new();
    for (n, id) in ids.iter().enumerate() {
        if n % 4096 == 4095 {
            stop.check()?;
        }
        let s = &store.series[*id as usize];
        let Some(v) = series_value(s, q.func, window_ms, t_ms) else { continue };
        let key = grouping.key(s);
        if grouping.by.is_some() {
            *out.entry(key).or_insert(0.0) += v;
        } else if out.insert(key, v).is_some() {
            return Err(PluginError::invalid(
                "vector cannot contain metrics with the same labelset",
            ));
        }
    }
    Ok(out)
}

fn timeout() -> PluginError {
    PluginError::timeout("the query did not finish within its deadline")
}

/// Prometheus's `bucketQuantile`.
pub fn bucket_quantile(q: f64, buckets: &mut [(f64, f64)]) -> f64 {
    if q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    if buckets.last().is_none_or(|b| b.0 != f64::INFINITY) {
        return f64::NAN;
    }
    // Coalesce equal upper bounds.
    let mut merged: Vec<(f64, f64)> = Vec::with_capacity(buckets.len());
    for &(ub, c) in buckets.iter() {
        match merged.last_mut() {
            Some(last) if last.0 == ub => last.1 += c,
            _ => merged.push((ub, c)),
        }
    }
    // Force monotonic counts.
    let mut max = f64::NEG_INFINITY;
    for b in merged.iter_mut() {
        if b.1 > max {
            max = b.1;
        } else if b.1 < max {
            b.1 = max;
        }
    }
    if merged.len() < 2 {
        return f64::NAN;
    }
    let observations = merged[merged.len() - 1].1;
    if observations == 0.0 {
        return f64::NAN;
    }
    let mut rank = q * observations;
    let b = merged[..merged.len() - 1].partition_point(|x| x.1 < rank);
    if b == merged.len() - 1 {
        return merged[merged.len() - 2].0;
    }
    if b == 0 && merged[0].0 <= 0.0 {
        return merged[0].0;
    }
    let mut start = 0.0;
    let end = merged[b].0;
    let mut count = merged[b].1;
    if b > 0 {
        start = merged[b - 1].0;
        count -= merged[b - 1].1;
        rank -= merged[b - 1].1;
    }
    start + (end - start) * (rank / count)
}

/// Parses an `le` value as Prometheus does (Go's ParseFloat accepts `+Inf`).
fn parse_le(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        t => t.parse().ok(),
    }
}

/// Evaluates a query.
pub fn evaluate(
    store: &Store,
    q: &MetricQuery,
    deadline: Instant,
) -> Result<QueryResult, PluginError> {
    evaluate_capped(store, q, deadline, usize::MAX)
}

/// Evaluates a query, stopping with an error as soon as the answer would hold more than
/// `max_series` series (the host's `limits.max_answer_series`).
pub fn evaluate_capped(
    store: &Store,
    q: &MetricQuery,
    deadline: Instant,
    max_series: usize,
) -> Result<QueryResult, PluginError> {
    evaluate_until(store, q, Stop::at(deadline), max_series)
}

/// Like [`evaluate_capped`], and also stops once `stop`'s flag is set.
pub fn evaluate_until(
    store: &Store,
    q: &MetricQuery,
    stop: Stop<'_>,
    max_series: usize,
) -> Result<QueryResult, PluginError> {
    let times: Vec<i64> = match q.time {
        QueryTime::Instant(t) => vec![t],
        QueryTime::Range { start, end, step } => {
            if step <= 0 || end < start {
                return Err(PluginError::invalid(format!(
                    "bad range: start {start}, end {end}, step {step}"
                )));
            }
            if (end - start) / step >= MAX_POINTS {
                return Err(PluginError::invalid(
                    "exceeded maximum resolution of 11,000 points per timeseries; try decreasing the query resolution",
                ));
            }
            (0..=(end - start) / step).map(|i| start + i * step).collect()
        }
    };
    if q.func != RangeFunc::None && q.window_secs == 0 {
        return Err(PluginError::invalid("a range function needs a window of at least 1 s"));
    }
    let matchers = compile(store, q)?;
    let by = q.group_by.as_ref().into_option().map(|g| {
        let mut names: Vec<u32> = g.iter().filter_map(|n| store.sym(n.as_str())).collect();
        names.dedup();
        names
    });
    let le = store.sym("le");
    let base = q.metric.as_str();
    if q.histogram != HistogramStat::None && base.is_empty() {
        return Err(PluginError::invalid("a histogram query needs the metric's base name"));
    }

    let mut result: Vec<(Key, Vec<Sample>)> = Vec::new();
    let mut index: HashMap<Key, usize> = HashMap::new();
    let mut emit = |key: Key, t: i64, v: f64| -> Result<(), PluginError> {
        let i = match index.get(&key) {
            Some(i) => *i,
            None if result.len() >= max_series => {
                return Err(PluginError::internal(format!(
                    "the answer was too large: more than {max_series} series (limits.max_answer_series)"
                )));
            }
            None => {
                index.insert(key.clone(), result.len());
                result.push((key, Vec::new()));
                result.len() - 1
            }
        };
        result[i].1.push(Sample { t: t as f64, v });
        Ok(())
    };

    match q.histogram {
        HistogramStat::None => {
            let ids = select(store, base, &matchers);
            let grouping = Grouping { by, keep_name: q.func == RangeFunc::None };
            for &t in &times {
                stop.check()?;
                for (k, v) in vector(store, &ids, q, &grouping, t as f64 * 1000.0, stop)? {
                    emit(k, t, v)?;
                }
            }
        }
        HistogramStat::Avg => {
            let sums = select(store, &format!("{base}_sum"), &matchers);
            let counts = select(store, &format!("{base}_count"), &matchers);
            // Binary operators match on the labels without the metric name.
            let grouping = Grouping { by, keep_name: false };
            for &t in &times {
                stop.check()?;
                let num = vector(store, &sums, q, &grouping, t as f64 * 1000.0, stop)?;
                let den = vector(store, &counts, q, &grouping, t as f64 * 1000.0, stop)?;
                for (k, n) in num {
                    if let Some(d) = den.get(&k) {
                        emit(k, t, n / d)?;
                    }
                }
            }
        }
        HistogramStat::Quantile(p) => {
            let ids = select(store, &format!("{base}_bucket"), &matchers);
            let Some(le) = le else { return Ok(QueryResult::default()) };
            let by = by.map(|mut names| {
                if !names.contains(&le) {
                    names.insert(0, le);
                }
                names
            });
            let grouping = Grouping { by, keep_name: false };
            for &t in &times {
                stop.check()?;
                let mut groups: HashMap<Key, Vec<(f64, f64)>> = HashMap::new();
                for (mut k, v) in vector(store, &ids, q, &grouping, t as f64 * 1000.0, stop)? {
                    let Some(pos) = k.iter().position(|(n, _)| *n == le) else { continue };
                    let (_, bound) = k.remove(pos);
                    let Some(bound) = parse_le(store.text(bound)) else { continue };
                    groups.entry(k).or_default().push((bound, v));
                }
                for (k, mut buckets) in groups {
                    emit(k, t, bucket_quantile(p, &mut buckets))?;
                }
            }
        }
    }

    let series = result
        .into_iter()
        .map(|(key, samples)| {
            let mut labels: Vec<(&str, &str)> =
                key.iter().map(|(n, v)| (store.text(*n), store.text(*v))).collect();
            labels.sort();
            Series { labels: labels.into_iter().collect(), samples: samples.into() }
        })
        .collect();
    Ok(QueryResult { series })
}

#[cfg(test)]
mod tests;
