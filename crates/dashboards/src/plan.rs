//! Query plans: which structured queries a dashboard needs, and how their results become
//! the Dashboard JSON.

use std::future::Future;

use meshlens_params::DurationHistogram;
use plugin_api::{
    DashboardTemplate, DataType, HistogramStat, Matcher, MetricQuery, PluginError, QueryResult,
    QueryTime, RangeFunc,
};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::{
    error::DashboardError,
    params::{AppParams, BaseParams, CustomParams, Direction},
    shape::metric_series_divided,
};

/// Istio's request-duration histogram in milliseconds.
const DURATION_MS: &str = "istio_request_duration_milliseconds";

/// Request duration is always reported in seconds: what a query of the milliseconds
/// histogram returns in milliseconds (its average and quantiles, and the rate of its
/// `_sum`) is divided by this. Counts (`_count`, `_bucket`) are not durations.
pub fn duration_divisor(q: &MetricQuery) -> f64 {
    let m = q.metric.as_str();
    let in_ms = match m.strip_prefix(DURATION_MS) {
        Some("") => q.histogram != HistogramStat::None,
        Some("_sum") => true,
        _ => false,
    };
    if in_ms { 1000.0 } else { 1.0 }
}

/// A query's answer as a MetricSeries, durations in seconds.
pub(crate) fn query_series(q: Option<&MetricQuery>, r: &QueryResult) -> Value {
    metric_series_divided(r, q.map_or(1.0, duration_divisor))
}

/// An aggregation offered to the user (`{label, displayName}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Aggregation {
    /// Metric label.
    pub label: String,
    /// Shown name.
    #[serde(rename = "displayName")]
    pub display_name: String,
}

/// Where a chart's data comes from: indices into [`DashboardPlan::queries`].
#[derive(Debug, Clone, PartialEq)]
pub enum ChartData {
    /// One series set (`metric`).
    Metric(usize),
    /// One series set per statistic (`histogram`): `avg` and the quantiles as written.
    Histogram(Vec<(String, usize)>),
}

/// One chart of a planned dashboard.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartPlan {
    /// Chart title.
    pub name: String,
    /// Unit.
    pub unit: String,
    /// Grid columns.
    pub spans: u32,
    /// Its queries.
    pub data: ChartData,
}

/// A dashboard before its queries ran.
#[derive(Debug, Clone, PartialEq)]
pub struct DashboardPlan {
    /// Dashboard title.
    pub title: String,
    /// Aggregations offered.
    pub aggregations: Vec<Aggregation>,
    /// Charts in display order.
    pub charts: Vec<ChartPlan>,
    /// Every query, to run concurrently.
    pub queries: Vec<MetricQuery>,
}

impl DashboardPlan {
    /// Shapes the results (one per query, in order) into the Dashboard JSON. A store that is
    /// down is a 503; any other failed query a 500.
    pub fn assemble(
        &self,
        results: Vec<Result<QueryResult, PluginError>>,
    ) -> Result<Value, DashboardError> {
        if results.len() != self.queries.len() {
            return Err(DashboardError::Internal(format!(
                "{} results for {} queries",
                results.len(),
                self.queries.len()
            )));
        }
        // A 503 wins over a 500: an unreachable store explains the other failures.
        let errors: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
        if let Some(e) =
            errors.iter().find(|e| DashboardError::from_query(e).status() == 503).or(errors.first())
        {
            return Err(DashboardError::from_query(e));
        }
        let series = |i: usize| match &results[i] {
            Ok(r) => query_series(self.queries.get(i), r),
            Err(_) => json!({ "matrix": null }),
        };
        let charts: Vec<Value> = self
            .charts
            .iter()
            .map(|c| {
                let mut o = Map::new();
                o.insert("name".into(), json!(c.name));
                o.insert("unit".into(), json!(c.unit));
                o.insert("spans".into(), json!(c.spans));
                match &c.data {
                    ChartData::Metric(i) => {
                        o.insert("metric".into(), series(*i));
                    }
                    ChartData::Histogram(stats) => {
                        let h: Map<String, Value> =
                            stats.iter().map(|(k, i)| (k.clone(), series(*i))).collect();
                        o.insert("histogram".into(), Value::Object(h));
                    }
                }
                Value::Object(o)
            })
            .collect();
        Ok(json!({ "title": self.title, "aggregations": self.aggregations, "charts": charts }))
    }

    /// Runs every query concurrently through `run` and assembles the result.
    pub async fn execute<F, Fut>(&self, run: F) -> Result<Value, DashboardError>
    where
        F: Fn(MetricQuery) -> Fut,
        Fut: Future<Output = Result<QueryResult, PluginError>>,
    {
        let results = futures::future::join_all(self.queries.iter().cloned().map(run)).await;
        self.assemble(results)
    }
}

/// Adds the queries of one chart to `queries` and says where they are.
pub(crate) fn chart_queries(
    queries: &mut Vec<MetricQuery>,
    metric: &str,
    data_type: DataType,
    matchers: &[Matcher],
    base: &BaseParams,
    time: QueryTime,
) -> ChartData {
    let group_by =
        Some(base.by_labels.iter().map(|l| l.as_str().into()).collect::<Vec<_>>().into()).into();
    let q = |func: RangeFunc, histogram: HistogramStat| MetricQuery {
        metric: metric.into(),
        matchers: matchers.to_vec().into(),
        func,
        window_secs: if func == RangeFunc::None { 0 } else { base.rate_interval },
        group_by: Clone::clone(&group_by),
        histogram,
        time,
    };
    let mut push = |mq: MetricQuery| {
        queries.push(mq);
        queries.len() - 1
    };
    match data_type {
        DataType::Raw => ChartData::Metric(push(q(RangeFunc::None, HistogramStat::None))),
        DataType::Rate => ChartData::Metric(push(q(base.rate_func, HistogramStat::None))),
        DataType::Histogram => {
            let mut stats = Vec::new();
            if base.avg {
                stats.push(("avg".to_string(), push(q(base.rate_func, HistogramStat::Avg))));
            }
            for qs in &base.quantiles {
                // Validated in params; the key stays the client's text, as Kiali does.
                let v: f64 = qs.parse().unwrap_or(0.5);
                stats.push((qs.clone(), push(q(base.rate_func, HistogramStat::Quantile(v)))));
            }
            ChartData::Histogram(stats)
        }
    }
}

/// The plan of customDashboard: series selected by the pod labels `namespace`, `app` and
/// optionally `version`; aggregations are the union over charts, de-duplicated by
/// displayName and sorted by it. No cluster matcher, as in Kiali v2 (business/dashboards.go,
/// `buildLabelsQueryString`): an app's own metrics carry no Istio cluster labels.
pub fn custom_dashboard_plan(
    template: &DashboardTemplate,
    namespace: &str,
    app: &str,
    params: &CustomParams,
    now: i64,
) -> DashboardPlan {
    let mut matchers = vec![Matcher::eq("namespace", namespace), Matcher::eq("app", app)];
    if let Some(v) = &params.version {
        matchers.push(Matcher::eq("version", v));
    }
    let time = params.base.range(now);
    let mut queries = Vec::new();
    let mut aggregations: Vec<Aggregation> = Vec::new();
    let mut charts = Vec::new();
    for c in template.charts.iter() {
        for a in c.aggregations.iter() {
            if !aggregations.iter().any(|x| x.display_name == a.display_name.as_str()) {
                aggregations.push(Aggregation {
                    label: a.label.to_string(),
                    display_name: a.display_name.to_string(),
                });
            }
        }
        let first = queries.len();
        let data =
            chart_queries(&mut queries, &c.metric_name, c.data_type, &matchers, &params.base, time);
        // A chart of request durations is in seconds whatever histogram the store holds.
        let seconds = queries[first..].iter().any(|q| duration_divisor(q) != 1.0);
        let unit = if seconds { "s".to_string() } else { c.unit.to_string() };
        charts.push(ChartPlan { name: c.name.to_string(), unit, spans: c.spans, data });
    }
    aggregations.sort_by(|a, b| a.display_name.cmp(&b.display_name));
    DashboardPlan { title: template.title.to_string(), aggregations, charts, queries }
}

/// Whose dashboard an Istio metrics dashboard is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DashboardTarget<'a> {
    /// An app: `{side}_app`.
    App(&'a str),
    /// A workload: `{side}_workload`.
    Workload(&'a str),
    /// A service: `destination_service_name` (inbound only).
    Service(&'a str),
}

/// The plan of appDashboard: Kiali's fixed Inbound/Outbound Metrics dashboard over Istio's
/// metrics, selected by reporter, the app's side (`source_*` outbound, `destination_*`
/// inbound) and optionally the request protocol.
pub fn app_dashboard_plan(
    namespace: &str,
    app: &str,
    params: &AppParams,
    duration: DurationHistogram,
    now: i64,
) -> DashboardPlan {
    istio_dashboard_plan(namespace, DashboardTarget::App(app), params, duration, now)
}

/// The plan of appDashboard, workloadDashboard and serviceDashboard: the same six charts,
/// selected as Kiali's `buildLabelStrings` (prometheus/metrics.go, v0.14) selects them: a
/// service by `destination_service_name` and `destination_service_namespace`; an app or a
/// workload by its side's `{side}_workload_namespace` and `{side}_app` / `{side}_workload`.
pub fn istio_dashboard_plan(
    namespace: &str,
    target: DashboardTarget<'_>,
    params: &AppParams,
    duration: DurationHistogram,
    now: i64,
) -> DashboardPlan {
    let direction = match target {
        DashboardTarget::Service(_) => Direction::Inbound,
        _ => params.direction,
    };
    let (local, remote) = match direction {
        Direction::Outbound => ("source", "destination"),
        Direction::Inbound => ("destination", "source"),
    };
    let mut matchers = vec![Matcher::eq("reporter", params.reporter.as_str())];
    match target {
        DashboardTarget::App(app) => {
            matchers.push(Matcher::eq(&format!("{local}_workload_namespace"), namespace));
            matchers.push(Matcher::eq(&format!("{local}_app"), app));
        }
        DashboardTarget::Workload(w) => {
            matchers.push(Matcher::eq(&format!("{local}_workload_namespace"), namespace));
            matchers.push(Matcher::eq(&format!("{local}_workload"), w));
        }
        DashboardTarget::Service(s) => {
            matchers.push(Matcher::eq("destination_service_name", s));
            matchers.push(Matcher::eq("destination_service_namespace", namespace));
        }
    }
    if let Some(p) = &params.request_protocol {
        matchers.push(Matcher::eq("request_protocol", p));
    }
    // A service's side is always the destination (`local`: its direction is inbound).
    if let Some(c) = &params.cluster {
        matchers.push(Matcher::eq(&format!("{local}_cluster"), c));
    }
    let time = params.base.range(now);
    let charts_def: [(&str, &str, &str, DataType); 6] = [
        ("Request volume", "ops", "istio_requests_total", DataType::Rate),
        // Always charted in seconds: the milliseconds histogram's values are divided by
        // `duration_divisor`.
        ("Request duration", "s", duration.metric(), DataType::Histogram),
        ("Request size", "B", "istio_request_bytes", DataType::Histogram),
        ("Response size", "B", "istio_response_bytes", DataType::Histogram),
        ("TCP received", "bps", "istio_tcp_received_bytes_total", DataType::Rate),
        ("TCP sent", "bps", "istio_tcp_sent_bytes_total", DataType::Rate),
    ];
    let mut queries = Vec::new();
    let charts = charts_def
        .iter()
        .map(|(name, unit, metric, dt)| ChartPlan {
            name: name.to_string(),
            unit: unit.to_string(),
            spans: 6,
            data: chart_queries(&mut queries, metric, *dt, &matchers, &params.base, time),
        })
        .collect();
    let agg =
        |label: String, display: &str| Aggregation { label, display_name: display.to_string() };
    DashboardPlan {
        title: match direction {
            Direction::Inbound => "Inbound Metrics".into(),
            Direction::Outbound => "Outbound Metrics".into(),
        },
        aggregations: vec![
            agg(format!("{local}_version"), "Local version"),
            agg(format!("{remote}_app"), "Remote app"),
            agg(format!("{remote}_version"), "Remote version"),
            agg("response_code".into(), "Response code"),
        ],
        charts,
        queries,
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
