//! Query parameters of customDashboard and appDashboard (README, The API): the typed
//! structs of [`crate::query`], checked against the limits and given their defaults.
//!
//! Every error is a [`DashboardError::BadRequest`] naming the parameter, never its value.

use plugin_api::{QueryTime, RangeFunc};

use crate::{
    error::DashboardError,
    query::{AppQuery, BaseQuery, CustomQuery, read},
};

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

/// customDashboard parameters.
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

/// appDashboard parameters.
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
    /// Only this cluster's telemetry: `{side}_cluster`, the side being the target's (Kiali
    /// v2's `MetricsLabelsBuilder.Cluster`, business/metrics_labels_builder.go). Not read from
    /// the query string: the host sets it from `clusterName` on an instance that reads
    /// several clusters, and leaves it `None` on a single-cluster one (older telemetry has no
    /// cluster labels).
    pub cluster: Option<String>,
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

impl BaseParams {
    /// Parses the shared parameters of a query string under the default limits.
    pub fn parse(query: &str) -> Result<Self, DashboardError> {
        Self::parse_with(query, &ParamLimits::default())
    }

    /// Parses the shared parameters; a request over a limit is a 400 naming it.
    pub fn parse_with(query: &str, limits: &ParamLimits) -> Result<Self, DashboardError> {
        Self::from_query(read(query)?, limits)
    }

    /// Gives the typed parameters their defaults and checks them against `limits`.
    pub fn from_query(q: BaseQuery, limits: &ParamLimits) -> Result<Self, DashboardError> {
        let mut by_labels: Vec<String> = Vec::new();
        for l in q.by_labels_bracket.into_iter().chain(q.by_labels).flat_map(|l| l.0) {
            if !by_labels.contains(&l) {
                by_labels.push(l);
            }
        }
        if by_labels.len() > limits.max_by_labels {
            return Err(over(
                "byLabels[]",
                &format!("at most {} labels are accepted", limits.max_by_labels),
                "max_by_labels",
            ));
        }
        let quantiles: Vec<String> =
            q.quantiles_bracket.into_iter().chain(q.quantiles).map(|t| t.0).collect();
        if quantiles.len() > limits.max_quantiles {
            return Err(over(
                "quantiles[]",
                &format!("at most {} quantiles are accepted", limits.max_quantiles),
                "max_quantiles",
            ));
        }
        let rate_interval = q.rate_interval.map_or(60, |w| w.0);
        let max_window = limits.max_window_secs;
        if rate_interval > max_window {
            return Err(over(
                "rateInterval",
                &format!("at most {max_window}s is accepted"),
                "max_window",
            ));
        }
        let duration = q.duration.map_or(1800, |d| d.0);
        if duration as u64 > max_window {
            return Err(over(
                "duration",
                &format!("at most {max_window}s is accepted"),
                "max_window",
            ));
        }
        let step = q.step.map_or(15, |s| s.0);
        if duration / step > limits.max_points {
            return Err(DashboardError::BadRequest(format!(
                "Bad request, query parameters 'duration' ({duration}) and 'step' ({step}) ask for more than {} points per series (limits.max_points)",
                limits.max_points
            )));
        }
        let query_time = q.query_time.map(|t| t.0);
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
            avg: q.avg.is_none_or(|a| a.0),
            by_labels,
            duration,
            quantiles,
            rate_func: q.rate_func.map_or(RangeFunc::Rate, |f| f.0),
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
    /// Parses customDashboard's parameters under the default limits.
    pub fn parse(query: &str) -> Result<Self, DashboardError> {
        Self::parse_with(query, &ParamLimits::default())
    }

    /// Parses customDashboard's parameters under `limits`: [`BaseQuery`] and [`CustomQuery`].
    pub fn parse_with(query: &str, limits: &ParamLimits) -> Result<Self, DashboardError> {
        let base = BaseParams::parse_with(query, limits)?;
        let own: CustomQuery = read(query)?;
        Ok(CustomParams { base, version: own.version.map(|v| v.0) })
    }
}

impl AppParams {
    /// Parses appDashboard's parameters under the default limits.
    pub fn parse(query: &str) -> Result<Self, DashboardError> {
        Self::parse_with(query, &ParamLimits::default())
    }

    /// Parses appDashboard's parameters under `limits`: [`BaseQuery`] and [`AppQuery`].
    pub fn parse_with(query: &str, limits: &ParamLimits) -> Result<Self, DashboardError> {
        let base = BaseParams::parse_with(query, limits)?;
        let own: AppQuery = read(query)?;
        Ok(AppParams {
            base,
            direction: own.direction.unwrap_or(Direction::Outbound),
            request_protocol: own.request_protocol.map(|p| p.0),
            reporter: own.reporter.unwrap_or(Reporter::Source),
            cluster: None,
        })
    }

    /// Parses serviceDashboard's parameters: as appDashboard's, but the direction defaults
    /// to inbound and outbound is a 400. Kiali selects a service's series by
    /// `destination_service_*` only (prometheus/metrics.go, `buildLabelStrings`), so an
    /// "outbound" service dashboard would silently chart inbound traffic.
    pub fn parse_service_with(query: &str, limits: &ParamLimits) -> Result<Self, DashboardError> {
        let base = BaseParams::parse_with(query, limits)?;
        let own: AppQuery = read(query)?;
        if own.direction == Some(Direction::Outbound) {
            return Err(DashboardError::BadRequest(
                "direction: a service dashboard is inbound only".into(),
            ));
        }
        Ok(AppParams {
            base,
            direction: Direction::Inbound,
            request_protocol: own.request_protocol.map(|p| p.0),
            reporter: own.reporter.unwrap_or(Reporter::Source),
            cluster: None,
        })
    }
}

#[cfg(test)]
#[path = "params_tests.rs"]
mod tests;
