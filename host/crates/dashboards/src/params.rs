//! Query parameters of customDashboard (spec §4.4) and appDashboard (§4.5).
//!
//! Every parse error is a [`DashboardError::BadRequest`] naming the parameter and the value.

use plugin_api::{QueryTime, RangeFunc};

use crate::error::DashboardError;

/// Access to the request's query parameters (first value, or all values of a repeated one).
pub trait QueryLookup {
    /// Every value of `name`, in request order.
    fn all(&self, name: &str) -> Vec<String>;
    /// The first value of `name`.
    fn first(&self, name: &str) -> Option<String> {
        self.all(name).into_iter().next()
    }
}

impl QueryLookup for [(String, String)] {
    fn all(&self, name: &str) -> Vec<String> {
        self.iter().filter(|(k, _)| k == name).map(|(_, v)| v.clone()).collect()
    }
}

impl QueryLookup for Vec<(String, String)> {
    fn all(&self, name: &str) -> Vec<String> {
        self.as_slice().all(name)
    }
}

impl<F: Fn(&str) -> Vec<String>> QueryLookup for F {
    fn all(&self, name: &str) -> Vec<String> {
        self(name)
    }
}

/// Most points a range query may ask for (Prometheus refuses more than 11,000).
pub const MAX_POINTS: i64 = 11_000;

/// What one dashboard or namespaceMetrics request may ask for (`[limits]` in the service's
/// configuration), and the clock `queryTime` is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamLimits {
    /// Most `quantiles[]` values.
    pub max_quantiles: usize,
    /// Most `byLabels[]` values.
    pub max_by_labels: usize,
    /// Longest `duration` and `rateInterval`, seconds.
    pub max_window_secs: u64,
    /// How far `queryTime` may be past `now`, seconds.
    pub max_future_secs: u64,
    /// Most points per range series (`duration / step`).
    pub max_points: i64,
    /// The current Unix time.
    pub now: i64,
}

impl Default for ParamLimits {
    /// The contract's defaults, at the current time.
    fn default() -> Self {
        let now = meshlens_params::now();
        ParamLimits {
            max_quantiles: 10,
            max_by_labels: 10,
            max_window_secs: 30 * 86_400,
            max_future_secs: 300,
            max_points: MAX_POINTS,
            now,
        }
    }
}

/// The 400 for a request over a limit: names the parameter, the limit and its config key.
fn over(name: &str, what: &str, key: &str) -> DashboardError {
    DashboardError::BadRequest(format!(
        "Bad request, query parameter '{name}': {what} (limits.{key})"
    ))
}

/// The parameters both dashboards share.
#[derive(Debug, Clone, PartialEq)]
pub struct BaseParams {
    /// Fetch histogram averages (`avg`, default true).
    pub avg: bool,
    /// Group-by labels (`byLabels[]`), validated label names.
    pub by_labels: Vec<String>,
    /// Query period in seconds (`duration`, default 1800).
    pub duration: i64,
    /// Quantiles as the client wrote them (`quantiles[]`), each in [0, 1].
    pub quantiles: Vec<String>,
    /// `rate` or `irate` (`rateFunc`, default rate).
    pub rate_func: RangeFunc,
    /// Window of rates and histograms in seconds (`rateInterval`, default 1m).
    pub rate_interval: u64,
    /// Seconds between points (`step`, default 15).
    pub step: i64,
    /// End of the range, Unix seconds (`queryTime`, default now).
    pub query_time: Option<i64>,
}

/// customDashboard parameters (§4.4).
#[derive(Debug, Clone, PartialEq)]
pub struct CustomParams {
    /// The shared ones.
    pub base: BaseParams,
    /// Only series of this version (`version`).
    pub version: Option<String>,
}

/// Whose traffic an app dashboard shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Requests the app receives.
    Inbound,
    /// Requests the app sends (the default).
    Outbound,
}

/// Which proxy's report is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reporter {
    /// The client's proxy (the default).
    Source,
    /// The server's proxy.
    Destination,
}

impl Reporter {
    /// The `reporter` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Reporter::Source => "source",
            Reporter::Destination => "destination",
        }
    }
}

/// appDashboard parameters (§4.5).
#[derive(Debug, Clone, PartialEq)]
pub struct AppParams {
    /// The shared ones.
    pub base: BaseParams,
    /// `direction`, default outbound.
    pub direction: Direction,
    /// `requestProtocol`, default all.
    pub request_protocol: Option<String>,
    /// `reporter`, default source.
    pub reporter: Reporter,
}

/// The value itself is not echoed: messages name the parameter and what it accepts.
fn bad(name: &str, _value: &str, why: &str) -> DashboardError {
    DashboardError::BadRequest(format!("Bad request, cannot parse query parameter '{name}': {why}"))
}

/// Whether `s` is a Prometheus label name.
pub fn is_label_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses a Prometheus duration (`90s`, `1m`, `1h30m`, `2d`) into seconds; a bare number
/// is seconds. Milliseconds must add up to whole seconds.
pub fn parse_duration_secs(text: &str) -> Option<u64> {
    meshlens_params::parse_prometheus_duration(text)
        .filter(|d| d.subsec_nanos() == 0)
        .map(|d| d.as_secs())
}

fn parse_positive(
    q: &(impl QueryLookup + ?Sized),
    name: &str,
    default: i64,
) -> Result<i64, DashboardError> {
    match q.first(name) {
        None => Ok(default),
        Some(v) => match parse_duration_secs(&v) {
            Some(n) if n > 0 && n <= i64::MAX as u64 / 2 => Ok(n as i64),
            _ => Err(bad(name, &v, "expected a positive number of seconds")),
        },
    }
}

/// Every value of a repeated parameter, accepting `name[]` and `name`.
fn repeated(q: &(impl QueryLookup + ?Sized), name: &str) -> Vec<(String, String)> {
    let bracket = format!("{name}[]");
    let mut out: Vec<(String, String)> =
        q.all(&bracket).into_iter().map(|v| (bracket.clone(), v)).collect();
    out.extend(q.all(name).into_iter().map(|v| (name.to_string(), v)));
    out
}

impl BaseParams {
    /// Parses the shared parameters under the default limits.
    pub fn parse(q: &(impl QueryLookup + ?Sized)) -> Result<Self, DashboardError> {
        Self::parse_with(q, &ParamLimits::default())
    }

    /// Parses the shared parameters; a request over a limit is a 400 naming it.
    pub fn parse_with(
        q: &(impl QueryLookup + ?Sized),
        limits: &ParamLimits,
    ) -> Result<Self, DashboardError> {
        let avg = match q.first("avg").as_deref() {
            None => true,
            Some("true") => true,
            Some("false") => false,
            Some(v) => return Err(bad("avg", v, "expected true or false")),
        };
        let mut by_labels = Vec::new();
        for (name, v) in repeated(q, "byLabels") {
            // A comma-separated list in one value is accepted too.
            for l in v.split(',').map(str::trim).filter(|l| !l.is_empty()) {
                if !is_label_name(l) {
                    return Err(bad(
                        &name,
                        &v,
                        "expected label names (letters, digits, underscores)",
                    ));
                }
                if !by_labels.iter().any(|b| b == l) {
                    by_labels.push(l.to_string());
                }
            }
        }
        if by_labels.len() > limits.max_by_labels {
            return Err(over(
                "byLabels[]",
                &format!("at most {} labels are accepted", limits.max_by_labels),
                "max_by_labels",
            ));
        }
        let mut quantiles = Vec::new();
        for (name, v) in repeated(q, "quantiles") {
            match v.trim().parse::<f64>() {
                Ok(f) if (0.0..=1.0).contains(&f) => quantiles.push(v.trim().to_string()),
                _ => return Err(bad(&name, &v, "invalid quantile(s): should be between 0 and 1")),
            }
            if quantiles.len() > limits.max_quantiles {
                return Err(over(
                    "quantiles[]",
                    &format!("at most {} quantiles are accepted", limits.max_quantiles),
                    "max_quantiles",
                ));
            }
        }
        let rate_func = match q.first("rateFunc").as_deref() {
            None | Some("rate") => RangeFunc::Rate,
            Some("irate") => RangeFunc::Irate,
            Some(v) => return Err(bad("rateFunc", v, "expected rate or irate")),
        };
        let rate_interval = match q.first("rateInterval") {
            None => 60,
            Some(v) => match parse_duration_secs(&v) {
                Some(n) if n > 0 => n,
                _ => return Err(bad("rateInterval", &v, "expected a duration such as 1m or 30s")),
            },
        };
        let max_window = limits.max_window_secs;
        if rate_interval > max_window {
            return Err(over(
                "rateInterval",
                &format!("at most {max_window}s is accepted"),
                "max_window",
            ));
        }
        let duration = parse_positive(q, "duration", 1800)?;
        if duration as u64 > max_window {
            return Err(over(
                "duration",
                &format!("at most {max_window}s is accepted"),
                "max_window",
            ));
        }
        let step = parse_positive(q, "step", 15)?;
        if duration / step > limits.max_points {
            return Err(DashboardError::BadRequest(format!(
                "Bad request, query parameters 'duration' ({duration}) and 'step' ({step}) ask for more than {} points per series (limits.max_points)",
                limits.max_points
            )));
        }
        let query_time = match q.first("queryTime") {
            None => None,
            Some(v) => match v.trim().parse::<i64>() {
                Ok(t) if t > 0 => Some(t),
                _ => return Err(bad("queryTime", &v, "expected Unix seconds")),
            },
        };
        if let Some(t) = query_time
            && t > limits
                .now
                .saturating_add(i64::try_from(limits.max_future_secs).unwrap_or(i64::MAX))
        {
            let skew = limits.max_future_secs;
            return Err(over(
                "queryTime",
                &format!("at most {skew}s past the server's clock is accepted"),
                "max_query_time_skew",
            ));
        }
        Ok(BaseParams {
            avg,
            by_labels,
            duration,
            quantiles,
            rate_func,
            rate_interval,
            step,
            query_time,
        })
    }

    /// The range to query, given the current Unix time: end = queryTime or now, start =
    /// end - duration floored to a multiple of step.
    pub fn range(&self, now: i64) -> QueryTime {
        let end = self.query_time.unwrap_or(now);
        let start = end - self.duration;
        let start = start - start.rem_euclid(self.step);
        QueryTime::Range { start, end, step: self.step }
    }
}

impl CustomParams {
    /// Parses §4.4 under the default limits.
    pub fn parse(q: &(impl QueryLookup + ?Sized)) -> Result<Self, DashboardError> {
        Self::parse_with(q, &ParamLimits::default())
    }

    /// Parses §4.4 under `limits`.
    pub fn parse_with(
        q: &(impl QueryLookup + ?Sized),
        limits: &ParamLimits,
    ) -> Result<Self, DashboardError> {
        let base = BaseParams::parse_with(q, limits)?;
        let version = match q.first("version") {
            None => None,
            Some(v) if v.is_empty() => return Err(bad("version", &v, "must not be empty")),
            Some(v) => Some(v),
        };
        Ok(CustomParams { base, version })
    }
}

impl AppParams {
    /// Parses §4.5 under the default limits.
    pub fn parse(q: &(impl QueryLookup + ?Sized)) -> Result<Self, DashboardError> {
        Self::parse_with(q, &ParamLimits::default())
    }

    /// Parses §4.5 under `limits`.
    pub fn parse_with(
        q: &(impl QueryLookup + ?Sized),
        limits: &ParamLimits,
    ) -> Result<Self, DashboardError> {
        let base = BaseParams::parse_with(q, limits)?;
        let direction = match q.first("direction").as_deref() {
            None | Some("outbound") => Direction::Outbound,
            Some("inbound") => Direction::Inbound,
            Some(v) => return Err(bad("direction", v, "expected inbound or outbound")),
        };
        let reporter = match q.first("reporter").as_deref() {
            None | Some("source") => Reporter::Source,
            Some("destination") => Reporter::Destination,
            Some(v) => return Err(bad("reporter", v, "expected source or destination")),
        };
        let request_protocol = match q.first("requestProtocol") {
            None => None,
            Some(v)
                if v.is_empty()
                    || v.chars().any(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')) =>
            {
                return Err(bad(
                    "requestProtocol",
                    &v,
                    "expected a protocol name such as http or grpc",
                ));
            }
            Some(v) => Some(v),
        };
        Ok(AppParams { base, direction, request_protocol, reporter })
    }
}

#[cfg(test)]
#[path = "params_tests.rs"]
mod tests;
