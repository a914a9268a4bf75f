//! Structured metric queries: what crosses the boundary instead of PromQL text.
//!
//! A backend renders a [`MetricQuery`] to its own language (the Prometheus backend to PromQL)
//! or evaluates it itself (the embedded store). The meaning is PromQL's:
//!
//! ```text
//! histogram = None:        sum by (group_by) (func(metric{matchers}[window]))
//! histogram = Avg:         sum by (g)(func(metric_sum{..}[w])) / sum by (g)(func(metric_count{..}[w]))
//! histogram = Quantile(q): histogram_quantile(q, sum by (le, g)(func(metric_bucket{..}[w])))
//! ```
//! With `group_by = None` no `sum` is applied (one series per input series).

use abi_stable::{
    StableAbi,
    std_types::{ROption, RString, RVec},
};

use crate::LabelSet;

/// How a label matcher compares.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatchOp {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `=~` (fully anchored RE2 regular expression)
    Re,
    /// `!~`
    Nre,
}

/// One label matcher (`name op "value"`). The value is raw text; backends escape it.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Matcher {
    /// Label name (`__name__` selects the metric name).
    pub name: RString,
    /// Comparison.
    pub op: MatchOp,
    /// Raw value or regular expression.
    pub value: RString,
}

impl Matcher {
    /// `name="value"`
    pub fn eq(name: &str, value: &str) -> Self {
        Matcher { name: name.into(), op: MatchOp::Eq, value: value.into() }
    }
    /// `name!="value"`
    pub fn ne(name: &str, value: &str) -> Self {
        Matcher { name: name.into(), op: MatchOp::Ne, value: value.into() }
    }
    /// `name=~"regex"`
    pub fn re(name: &str, value: &str) -> Self {
        Matcher { name: name.into(), op: MatchOp::Re, value: value.into() }
    }
    /// `name!~"regex"`
    pub fn nre(name: &str, value: &str) -> Self {
        Matcher { name: name.into(), op: MatchOp::Nre, value: value.into() }
    }
}

/// The range function applied over the window.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RangeFunc {
    /// No range function: the instant value (gauges, raw series).
    None,
    /// `rate()`
    Rate,
    /// `irate()`
    Irate,
    /// `increase()`
    Increase,
}

/// Which statistic of a histogram to compute (on `_bucket`, `_sum`, `_count`).
#[repr(C, u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq)]
pub enum HistogramStat {
    /// Not a histogram query.
    None,
    /// `sum(_sum) / sum(_count)`.
    Avg,
    /// `histogram_quantile(q, ...)`, q in [0, 1].
    Quantile(f64),
}

/// When the query is evaluated.
#[repr(C, u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueryTime {
    /// One evaluation at this Unix time (seconds).
    Instant(i64),
    /// Evaluations from `start` to `end` every `step` seconds (Unix seconds).
    Range {
        /// First evaluation time.
        start: i64,
        /// Last evaluation time (inclusive).
        end: i64,
        /// Seconds between evaluations (> 0).
        step: i64,
    },
}

/// A metric query in structured form.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct MetricQuery {
    /// Metric name; for histograms the base name without `_bucket`/`_sum`/`_count`.
    /// Empty when the matchers select the names (`__name__=~"..."`).
    pub metric: RString,
    /// Label matchers.
    pub matchers: RVec<Matcher>,
    /// Range function applied over `window_secs`.
    pub func: RangeFunc,
    /// Range window in seconds (ignored when `func` is `None`).
    pub window_secs: u64,
    /// `Some(labels)`: `sum by (labels)`; `Some([])`: plain `sum`; `None`: no aggregation.
    pub group_by: ROption<RVec<RString>>,
    /// Histogram statistic, if any.
    pub histogram: HistogramStat,
    /// Evaluation time.
    pub time: QueryTime,
}

impl MetricQuery {
    /// A key that is equal for equal queries (used to send identical queries once).
    pub fn cache_key(&self) -> String {
        format!("{self:?}")
    }
}

/// One sample: Unix time in seconds and a value.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Unix time, seconds (may carry milliseconds as a fraction).
    pub t: f64,
    /// The value (may be NaN or infinite, as in Prometheus).
    pub v: f64,
}

/// One result series: its labels and samples (one sample for instant queries).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Default)]
pub struct Series {
    /// Labels of the series after aggregation.
    pub labels: LabelSet,
    /// Samples in time order.
    pub samples: RVec<Sample>,
}

/// The answer to one [`MetricQuery`].
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Default)]
pub struct QueryResult {
    /// Result series, in no particular order.
    pub series: RVec<Series>,
}

/// What a metrics backend reports about itself and its store, for `/status`.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Default)]
pub struct BackendStatus {
    /// The store's product name, e.g. `Prometheus`.
    pub name: RString,
    /// The store's version, or empty when it reports none.
    pub version: RString,
    /// The store's address, or empty.
    pub url: RString,
}
