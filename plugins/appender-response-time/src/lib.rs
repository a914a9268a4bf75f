//! `responseTime`: sets each edge's `responseTime` (milliseconds) from the request-duration
//! histogram's quantile over successful requests, as Kiali v0.14's
//! `graph/appender/response_time.go`.
#![forbid(unsafe_code)]

use appender_support::{EdgeIndex, OnHops, edge_group_by, labels, request_families};
use plugin_api::abi_stable::std_types::{ROption, RString};
use plugin_api::{
    AppenderData, AppenderInputs, Graph, GraphAppender, GraphRequest, HistogramStat, Matcher,
    MetricQuery, PluginError, QueryTime, RangeFunc,
};

/// The `responseTime` appender.
pub struct ResponseTime;

impl GraphAppender for ResponseTime {
    fn name(&self) -> &str {
        "responseTime"
    }
    fn inputs(&self, req: &GraphRequest) -> Result<AppenderInputs, PluginError> {
        let q = if req.response_time_quantile > 0.0 && req.response_time_quantile < 1.0 {
            req.response_time_quantile
        } else {
            0.95
        };
        let group: Vec<RString> = edge_group_by(&[]).into_iter().map(RString::from).collect();
        let queries = request_families(req)
            .into_iter()
            .map(|mut m| {
                // Only successful requests: HTTP 2xx, or gRPC status 0 on old telemetry.
                m.push(Matcher::re(labels::CODE, "2[0-9]{2}|0"));
                MetricQuery {
                    metric: req.duration_metric.clone(),
                    matchers: m.into_iter().collect(),
                    func: RangeFunc::Rate,
                    window_secs: req.duration_secs,
                    group_by: ROption::RSome(group.iter().cloned().collect()),
                    histogram: HistogramStat::Quantile(q),
                    time: QueryTime::Instant(req.query_time),
                }
            })
            .collect();
        Ok(AppenderInputs { queries, ..Default::default() })
    }
    fn apply(
        &self,
        req: &GraphRequest,
        data: &AppenderData,
        graph: &mut Graph,
    ) -> Result<(), PluginError> {
        if graph.nodes.is_empty() {
            return Ok(());
        }
        let to_ms = if req.duration_to_ms > 0.0 { req.duration_to_ms } else { 1.0 };
        let index = EdgeIndex::new(graph);
        // With service nodes only the service → workload hop gets a value: quantiles of
        // different destinations cannot be added up for the caller → service hop.
        let hits = index.hits(
            &data.results,
            req.graph_type,
            req.inject_service_nodes,
            req.home_cluster.as_str(),
            OnHops::Last,
            |s, _| s.samples.last().map(|p| p.v).filter(|v| v.is_finite()).map(|v| v * to_ms),
        );
        // Several series can land on one edge (an app node gathers its workloads' series);
        // quantiles do not add up, so the edge shows the slowest of them — and the answer
        // does not depend on the order the store returned them in.
        let mut times: Vec<Option<f64>> = vec![None; graph.edges.len()];
        for &(e, ms) in &hits {
            let t = &mut times[e];
            *t = Some(t.map_or(ms, |t| t.max(ms)));
        }
        for (e, t) in graph.edges.iter_mut().zip(times) {
            e.response_time = ROption::RSome(t.unwrap_or(0.0));
        }
        Ok(())
    }
}

plugin_api::register_appender!(ResponseTime);
plugin_api::export_plugin!(name: "appender-response-time", version: env!("CARGO_PKG_VERSION"));
