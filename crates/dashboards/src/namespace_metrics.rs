//! namespaceMetrics: Istio's request, TCP and histogram metrics of a whole namespace, as
//! `{metrics: {name: MetricSeries}, histograms: {name: {stat: MetricSeries}}}`.

use meshlens_params::DurationHistogram;
use plugin_api::{DataType, Matcher, MetricQuery, PluginError, QueryResult, QueryTime};
use serde_json::{Map, Value, json};

use crate::{
    error::DashboardError,
    params::{AppParams, Direction, ParamLimits},
    plan::{ChartData, chart_queries, query_series},
    query::{FiltersQuery, read},
};

/// The metric names a client can ask for in `filters[]`, in answer order.
pub const NAMESPACE_METRICS: [&str; 7] = [
    "request_count",
    "request_error_count",
    "tcp_received",
    "tcp_sent",
    "request_duration",
    "request_size",
    "response_size",
];

/// namespaceMetrics parameters: appDashboard's plus `filters[]`.
#[derive(Debug, Clone, PartialEq)]
pub struct NamespaceMetricsParams {
    /// direction, reporter, requestProtocol and the base parameters.
    pub app: AppParams,
    /// The metrics to fetch (all when the client named none).
    pub filters: Vec<&'static str>,
}

impl NamespaceMetricsParams {
    /// Parses the parameters; an unknown filter is a 400 listing the known ones.
    pub fn parse(query: &str) -> Result<Self, DashboardError> {
        Self::parse_with(query, &ParamLimits::default())
    }

    /// [`NamespaceMetricsParams::parse`] under `limits`: appDashboard's parameters and
    /// [`FiltersQuery`].
    pub fn parse_with(query: &str, limits: &ParamLimits) -> Result<Self, DashboardError> {
        let app = AppParams::parse_with(query, limits)?;
        let own: FiltersQuery = read(query)?;
        let mut filters = Vec::new();
        for v in own.filters_bracket.iter().chain(&own.filters) {
            for name in v.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let known = NAMESPACE_METRICS.iter().find(|m| **m == name).ok_or_else(|| {
                    DashboardError::BadRequest(format!(
                        "Bad request, query parameter 'filters[]' accepts: {}",
                        NAMESPACE_METRICS.join(", ")
                    ))
                })?;
                if !filters.contains(known) {
                    filters.push(*known);
                }
            }
        }
        if filters.is_empty() {
            filters = NAMESPACE_METRICS.to_vec();
        }
        Ok(NamespaceMetricsParams { app, filters })
    }
}

/// The planned queries and where each metric's results are.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsPlan {
    /// Every query, to run concurrently.
    pub queries: Vec<MetricQuery>,
    entries: Vec<(&'static str, ChartData)>,
}

/// Plans namespaceMetrics. `created` is the namespace's creation time: the rate interval
/// shrinks to the namespace's age and the range never starts before the namespace did.
pub fn namespace_metrics_plan(
    namespace: &str,
    params: &NamespaceMetricsParams,
    duration: DurationHistogram,
    created: Option<i64>,
    now: i64,
) -> Result<MetricsPlan, DashboardError> {
    let mut base = params.app.base.clone();
    let end = base.query_time.unwrap_or(now);
    let mut start = end - base.duration;
    if let Some(c) = created {
        if end - (base.rate_interval as i64) < c {
            base.rate_interval = (end - c).max(1) as u64;
        }
        start = start.max(c);
    }
    if start > end {
        return Err(DashboardError::BadRequest(
            "Bad request, after checks, query start time is after end time".into(),
        ));
    }
    let start = start - start.rem_euclid(base.step);
    let time = QueryTime::Range { start, end, step: base.step };
    let side = match params.app.direction {
        Direction::Outbound => "source",
        Direction::Inbound => "destination",
    };
    let mut matchers = vec![
        Matcher::eq("reporter", params.app.reporter.as_str()),
        Matcher::eq(&format!("{side}_workload_namespace"), namespace),
    ];
    if let Some(p) = &params.app.request_protocol {
        matchers.push(Matcher::eq("request_protocol", p));
    }
    if let Some(c) = &params.app.cluster {
        matchers.push(Matcher::eq(&format!("{side}_cluster"), c));
    }
    let mut errors = matchers.clone();
    errors.push(Matcher::re("response_code", "[45].*"));
    let mut queries = Vec::new();
    let mut entries = Vec::new();
    for name in &params.filters {
        let (metric, dt, m) = match *name {
            "request_count" => ("istio_requests_total", DataType::Rate, &matchers),
            "request_error_count" => ("istio_requests_total", DataType::Rate, &errors),
            "tcp_received" => ("istio_tcp_received_bytes_total", DataType::Rate, &matchers),
            "tcp_sent" => ("istio_tcp_sent_bytes_total", DataType::Rate, &matchers),
            "request_duration" => (duration.metric(), DataType::Histogram, &matchers),
            "request_size" => ("istio_request_bytes", DataType::Histogram, &matchers),
            _ => ("istio_response_bytes", DataType::Histogram, &matchers),
        };
        entries.push((*name, chart_queries(&mut queries, metric, dt, m, &base, time)));
    }
    Ok(MetricsPlan { queries, entries })
}

impl MetricsPlan {
    /// Shapes the results (one per query, in order). A store that is down is a 503.
    pub fn assemble(
        &self,
        results: Vec<Result<QueryResult, PluginError>>,
    ) -> Result<Value, DashboardError> {
        if let Some(e) = results.iter().filter_map(|r| r.as_ref().err()).next() {
            return Err(DashboardError::from_query(e));
        }
        let series = |i: usize| {
            results
                .get(i)
                .and_then(|r| r.as_ref().ok())
                .map(|r| query_series(self.queries.get(i), r))
                .unwrap_or(json!({"matrix": null}))
        };
        let mut metrics = Map::new();
        let mut histograms = Map::new();
        for (name, data) in &self.entries {
            match data {
                ChartData::Metric(i) => {
                    metrics.insert((*name).into(), series(*i));
                }
                ChartData::Histogram(stats) => {
                    let h: Map<String, Value> =
                        stats.iter().map(|(k, i)| (k.clone(), series(*i))).collect();
                    histograms.insert((*name).into(), Value::Object(h));
                }
            }
        }
        Ok(json!({ "metrics": metrics, "histograms": histograms }))
    }
}

#[cfg(test)]
mod tests {
    use plugin_api::RangeFunc;

    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Result<NamespaceMetricsParams, DashboardError> {
        NamespaceMetricsParams::parse(&meshlens_params::query::query_string(pairs))
    }

    #[test]
    fn all_metrics_by_default_with_kiali_selectors() {
        let p = params(&[]).unwrap();
        assert_eq!(p.filters.len(), 7);
        let plan =
            namespace_metrics_plan("bookinfo", &p, DurationHistogram::Milliseconds, None, 10_000)
                .unwrap();
        // 4 counters + 3 histograms with avg (no quantiles asked).
        assert_eq!(plan.queries.len(), 7);
        let q = &plan.queries[0];
        assert_eq!(q.metric.as_str(), "istio_requests_total");
        assert_eq!(q.func, RangeFunc::Rate);
        assert!(
            q.matchers.iter().any(|m| m.name.as_str() == "source_workload_namespace"
                && m.value.as_str() == "bookinfo")
        );
        assert!(plan.queries[1].matchers.iter().any(|m| m.name.as_str() == "response_code"));
        assert_eq!(plan.queries[4].metric.as_str(), "istio_request_duration_milliseconds");
    }

    #[test]
    fn inbound_selects_the_destination_side_and_filters_limit_the_set() {
        let p = params(&[
            ("direction", "inbound"),
            ("filters[]", "request_count"),
            ("filters[]", "request_duration"),
            ("quantiles[]", "0.5"),
        ])
        .unwrap();
        let plan =
            namespace_metrics_plan("ns", &p, DurationHistogram::Seconds, None, 10_000).unwrap();
        assert_eq!(plan.queries.len(), 3);
        assert!(
            plan.queries[0]
                .matchers
                .iter()
                .any(|m| m.name.as_str() == "destination_workload_namespace")
        );
        assert_eq!(plan.queries[1].metric.as_str(), "istio_request_duration_seconds");
    }

    #[test]
    fn a_cluster_counts_its_side_only() {
        let mut p = params(&[("filters[]", "request_count"), ("filters[]", "request_error_count")])
            .unwrap();
        let plan = |p: &NamespaceMetricsParams| {
            namespace_metrics_plan("ns", p, DurationHistogram::Seconds, None, 10_000).unwrap()
        };
        let none = plan(&p);
        assert!(
            none.queries
                .iter()
                .flat_map(|q| q.matchers.iter())
                .all(|m| !m.name.contains("cluster"))
        );
        p.app.cluster = Some("west".into());
        let out = plan(&p);
        assert!(
            out.queries.iter().all(|q| q.matchers.contains(&Matcher::eq("source_cluster", "west")))
        );
        p.app.direction = Direction::Inbound;
        let inb = plan(&p);
        assert!(
            inb.queries
                .iter()
                .all(|q| q.matchers.contains(&Matcher::eq("destination_cluster", "west")))
        );
    }

    #[test]
    fn the_window_respects_the_namespace_age() {
        let p = params(&[
            ("rateInterval", "35m"),
            ("duration", "1000"),
            ("step", "10"),
            ("queryTime", "1523364061"),
        ])
        .unwrap();
        let plan = namespace_metrics_plan(
            "ns",
            &p,
            DurationHistogram::Milliseconds,
            Some(1523364061 - 31 * 60),
            0,
        )
        .unwrap();
        assert_eq!(plan.queries[0].window_secs, 1860);
        let p =
            params(&[("duration", "1000"), ("step", "10"), ("queryTime", "1523364061")]).unwrap();
        let plan =
            namespace_metrics_plan("ns", &p, DurationHistogram::Milliseconds, None, 0).unwrap();
        assert_eq!(
            plan.queries[0].time,
            QueryTime::Range { start: 1523363060, end: 1523364061, step: 10 }
        );
    }

    #[test]
    fn bad_filters_are_400s_listing_the_known_names() {
        let e = params(&[("filters[]", "cpu")]).unwrap_err();
        assert!(
            matches!(&e, DashboardError::BadRequest(m) if m.contains("request_count") && !m.contains("cpu")),
            "{e:?}"
        );
        assert!(params(&[("direction", "sideways")]).is_err());
        assert!(params(&[("reporter", "both")]).is_err());
        assert!(params(&[("step", "0")]).is_err());
    }
}
