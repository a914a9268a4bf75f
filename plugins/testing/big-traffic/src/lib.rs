//! Test plugin: metrics backend `big_traffic`. The traffic query of a namespace graph from
//! inside the requested namespaces (`reporter="source"`, `source_workload_namespace=` or `=~`)
//! gets `series` series (`[metrics.big_traffic] series`, default 100,000): a chain of that
//! many workloads `w0-v1` → `w1-v1` → … in namespace `ns` (default `bookinfo`). Every other
//! query gets an empty answer. One graph over it is one long build, nothing else.
#![forbid(unsafe_code)]

use std::time::Duration;

use plugin_api::{
    BackendStatus, Label, MatchOp, MetricQuery, MetricsStore, PluginError, QueryResult, Sample,
    Series,
};

/// The backend: how many series, in which namespace.
pub struct BigTraffic {
    series: usize,
    namespace: String,
}

impl MetricsStore for BigTraffic {
    fn name(&self) -> &str {
        "big_traffic"
    }

    fn configure(&mut self, config: &serde_json::Value) -> Result<(), PluginError> {
        if let Some(n) = config.get("series") {
            let n = n.as_u64().ok_or_else(|| {
                PluginError::invalid("metrics.big_traffic.series must be a number")
            })?;
            self.series = usize::try_from(n)
                .map_err(|_| PluginError::invalid("metrics.big_traffic.series is too big"))?;
        }
        if let Some(ns) = config.get("namespace") {
            self.namespace = ns
                .as_str()
                .ok_or_else(|| PluginError::invalid("metrics.big_traffic.namespace must be text"))?
                .to_string();
        }
        Ok(())
    }

    fn query(&self, query: &MetricQuery, _: Duration) -> Result<QueryResult, PluginError> {
        let has = |name: &str, ops: &[MatchOp], value: Option<&str>| {
            query.matchers.iter().any(|m| {
                m.name.as_str() == name
                    && ops.contains(&m.op)
                    && value.is_none_or(|v| m.value.as_str() == v)
            })
        };
        // One namespace is matched with `=`, several with `=~`.
        let inside = query.metric.as_str() == "istio_requests_total"
            && has("reporter", &[MatchOp::Eq], Some("source"))
            && has("source_workload_namespace", &[MatchOp::Eq, MatchOp::Re], None);
        if !inside {
            return Ok(QueryResult::default());
        }
        let t = match query.time {
            plugin_api::QueryTime::Instant(t) => t as f64,
            plugin_api::QueryTime::Range { end, .. } => end as f64,
        };
        let ns = self.namespace.as_str();
        let series = (0..self.series)
            .map(|i| {
                let (sa, da) = (format!("w{i}"), format!("w{}", i + 1));
                let (sw, dw) = (format!("{sa}-v1"), format!("{da}-v1"));
                let labels = [
                    ("source_workload_namespace", ns),
                    ("source_workload", &sw),
                    ("source_app", &sa),
                    ("source_version", "v1"),
                    ("destination_service_namespace", ns),
                    ("destination_service_name", &da),
                    ("destination_workload_namespace", ns),
                    ("destination_workload", &dw),
                    ("destination_app", &da),
                    ("destination_version", "v1"),
                    ("request_protocol", "http"),
                    ("response_code", "200"),
                    ("grpc_response_status", ""),
                ];
                Series {
                    labels: labels.iter().map(|&(n, v)| Label::new(n, v)).collect(),
                    samples: vec![Sample { t, v: 1.0 }].into_iter().collect(),
                }
            })
            .collect();
        Ok(QueryResult { series })
    }

    fn status(&self) -> Result<BackendStatus, PluginError> {
        Ok(BackendStatus {
            name: "big traffic (test)".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            url: "".into(),
        })
    }
}

plugin_api::register_metrics_backend!(BigTraffic { series: 100_000, namespace: "bookinfo".into() });
plugin_api::export_plugin!(name: "big-traffic", version: env!("CARGO_PKG_VERSION"));
