//! The dashboard operations' query parameters as typed structs: [`BaseQuery`] (what
//! customDashboard, appDashboard and namespaceMetrics all read) and each operation's own
//! ([`CustomQuery`], [`AppQuery`], [`FiltersQuery`]). An operation reads the base struct and
//! its own from the same query string; [`crate::params`] checks the limits.
//!
//! A wrong value is a 400 `Bad request, cannot parse query parameter '{name}': {why}`;
//! repeated parameters are accepted as `name[]` and as `name`, in that order.

use std::str::FromStr;

use meshlens_params::query::{QueryError, each, first, parse_query};
use plugin_api::RangeFunc;
use serde::{Deserialize, de::DeserializeOwned};

use crate::{
    error::DashboardError,
    params::{Direction, Reporter, is_label_name, parse_duration_secs},
};

/// Reads one of this module's structs; the 400 names the parameter, not the value.
pub(crate) fn read<T: DeserializeOwned>(query: &str) -> Result<T, DashboardError> {
    parse_query(query).map_err(|QueryError { param, reason }| {
        DashboardError::BadRequest(format!(
            "Bad request, cannot parse query parameter '{param}': {reason}"
        ))
    })
}

/// The parameters every dashboard operation reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct BaseQuery {
    /// `avg`: fetch histogram averages (default true).
    #[serde(deserialize_with = "first")]
    pub avg: Option<Avg>,
    /// `byLabels[]`: group-by labels, one or comma-separated per value.
    #[serde(rename = "byLabels[]", deserialize_with = "each")]
    pub by_labels_bracket: Vec<LabelNames>,
    /// `byLabels`, the same without brackets.
    #[serde(rename = "byLabels", deserialize_with = "each")]
    pub by_labels: Vec<LabelNames>,
    /// `duration`: the period in seconds (default 1800).
    #[serde(deserialize_with = "first")]
    pub duration: Option<PositiveSeconds>,
    /// `quantiles[]`.
    #[serde(rename = "quantiles[]", deserialize_with = "each")]
    pub quantiles_bracket: Vec<QuantileText>,
    /// `quantiles`, the same without brackets.
    #[serde(rename = "quantiles", deserialize_with = "each")]
    pub quantiles: Vec<QuantileText>,
    /// `rateFunc`: rate (the default) or irate.
    #[serde(rename = "rateFunc", deserialize_with = "first")]
    pub rate_func: Option<RateFuncParam>,
    /// `rateInterval`: the window of rates and histograms (default 1m).
    #[serde(rename = "rateInterval", deserialize_with = "first")]
    pub rate_interval: Option<Window>,
    /// `step`: seconds between points (default 15).
    #[serde(deserialize_with = "first")]
    pub step: Option<PositiveSeconds>,
    /// `queryTime`: the end of the range (default now).
    #[serde(rename = "queryTime", deserialize_with = "first")]
    pub query_time: Option<UnixSeconds>,
}

/// customDashboard's own parameters.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct CustomQuery {
    /// `version`: only series of this version.
    #[serde(deserialize_with = "first")]
    pub version: Option<Version>,
}

/// appDashboard's (and namespaceMetrics') own parameters.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct AppQuery {
    /// `direction`: outbound (the default) or inbound.
    #[serde(deserialize_with = "first")]
    pub direction: Option<Direction>,
    /// `reporter`: source (the default) or destination.
    #[serde(deserialize_with = "first")]
    pub reporter: Option<Reporter>,
    /// `requestProtocol`: all when absent.
    #[serde(rename = "requestProtocol", deserialize_with = "first")]
    pub request_protocol: Option<Protocol>,
}

/// namespaceMetrics' own parameter, beyond appDashboard's: which metrics (names checked by
/// [`crate::NamespaceMetricsParams`], whose 400 lists the known ones).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct FiltersQuery {
    /// `filters[]`.
    #[serde(rename = "filters[]")]
    pub filters_bracket: Vec<String>,
    /// `filters`, the same without brackets.
    pub filters: Vec<String>,
}

/// `avg`: exactly `true` or `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Avg(pub bool);

impl FromStr for Avg {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "true" => Ok(Avg(true)),
            "false" => Ok(Avg(false)),
            _ => Err("expected true or false"),
        }
    }
}

/// One `byLabels` value: label names, comma-separated, blanks skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelNames(pub Vec<String>);

impl FromStr for LabelNames {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.split(',')
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(|l| {
                is_label_name(l)
                    .then(|| l.to_string())
                    .ok_or("expected label names (letters, digits, underscores)")
            })
            .collect::<Result<_, _>>()
            .map(LabelNames)
    }
}

/// A positive Prometheus duration in whole seconds, small enough to add to a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PositiveSeconds(pub i64);

impl FromStr for PositiveSeconds {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_duration_secs(s)
            .filter(|n| *n > 0 && *n <= i64::MAX as u64 / 2)
            .map(|n| PositiveSeconds(n as i64))
            .ok_or("expected a positive number of seconds")
    }
}

/// A quantile in [0, 1], kept as the client wrote it (trimmed): it is sent on as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantileText(pub String);

impl FromStr for QuantileText {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().parse::<f64>() {
            Ok(f) if (0.0..=1.0).contains(&f) => Ok(QuantileText(s.trim().to_string())),
            _ => Err("invalid quantile(s): should be between 0 and 1"),
        }
    }
}

/// `rateFunc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateFuncParam(pub RangeFunc);

impl FromStr for RateFuncParam {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "rate" => Ok(RateFuncParam(RangeFunc::Rate)),
            "irate" => Ok(RateFuncParam(RangeFunc::Irate)),
            _ => Err("expected rate or irate"),
        }
    }
}

/// A `rateInterval`: a Prometheus duration of at least one whole second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window(pub u64);

impl FromStr for Window {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_duration_secs(s)
            .filter(|n| *n > 0)
            .map(Window)
            .ok_or("expected a duration such as 1m or 30s")
    }
}

/// A `queryTime`: positive Unix seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnixSeconds(pub i64);

impl FromStr for UnixSeconds {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        meshlens_params::parse_unix_seconds(s).map(UnixSeconds).ok_or("expected Unix seconds")
    }
}

/// A `version`: not empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version(pub String);

impl FromStr for Version {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() { Err("must not be empty") } else { Ok(Version(s.to_string())) }
    }
}

impl FromStr for Direction {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "outbound" => Ok(Direction::Outbound),
            "inbound" => Ok(Direction::Inbound),
            _ => Err("expected inbound or outbound"),
        }
    }
}

impl FromStr for Reporter {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "source" => Ok(Reporter::Source),
            "destination" => Ok(Reporter::Destination),
            _ => Err("expected source or destination"),
        }
    }
}

/// A `requestProtocol`: a protocol name (letters, digits, `-`, `_`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protocol(pub String);

impl FromStr for Protocol {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() || s.chars().any(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')) {
            Err("expected a protocol name such as http or grpc")
        } else {
            Ok(Protocol(s.to_string()))
        }
    }
}
