//! `securityPolicy`: flags edges whose requests used mutual TLS (`isMTLS`), as Kiali
//! v0.14's `graph/appender/security_policy.go`.
//!
//! The policy is only on destination reports, so these queries read `reporter="destination"`;
//! they only ask which connections were mTLS, not how many requests there were.
#![forbid(unsafe_code)]

use appender_support::{
    EdgeIndex, OnHops, edge_group_by, excludes_mesh, labels, ns_in, ns_not_in, requested_namespaces,
};
use plugin_api::abi_stable::std_types::{ROption, RString};
use plugin_api::{
    AppenderData, AppenderInputs, Graph, GraphAppender, GraphRequest, HistogramStat, Matcher,
    MetricQuery, PluginError, QueryTime, RangeFunc,
};

/// The `securityPolicy` appender.
pub struct SecurityPolicy;

impl GraphAppender for SecurityPolicy {
    fn name(&self) -> &str {
        "securityPolicy"
    }
    fn inputs(&self, req: &GraphRequest) -> Result<AppenderInputs, PluginError> {
        let ns = requested_namespaces(req);
        let common = || {
            vec![
                Matcher::eq(labels::REPORTER, "destination"),
                Matcher::ne(labels::SECURITY, "none"),
                Matcher::re(labels::CODE, "[2345][0-9][0-9]"),
            ]
        };
        let mut into = common();
        into.extend([ns_not_in(labels::SRC_NS, &ns), ns_in(labels::DST_SVC_NS, &ns)]);
        let mut inside = common();
        inside.push(ns_in(labels::SRC_NS, &ns));
        if excludes_mesh(req) {
            inside.push(Matcher::ne(labels::DST_SVC_NS, req.mesh_namespace.as_str()));
        }
        let group: Vec<RString> =
            edge_group_by(&[labels::SECURITY]).into_iter().map(RString::from).collect();
        let queries = [into, inside]
            .into_iter()
            .map(|m| MetricQuery {
                metric: "istio_requests_total".into(),
                matchers: m.into_iter().collect(),
                func: RangeFunc::Rate,
                window_secs: req.duration_secs,
                group_by: ROption::RSome(group.iter().cloned().collect()),
                histogram: HistogramStat::None,
                time: QueryTime::Instant(req.query_time),
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
        let index = EdgeIndex::new(graph);
        let hits = index.hits(
            &data.results,
            req.graph_type,
            req.inject_service_nodes,
            req.home_cluster.as_str(),
            OnHops::Every,
            |s, sl| {
                let positive = s.samples.last().is_some_and(|p| p.v > 0.0);
                (positive && sl.security == Some("mutual_tls")).then_some(())
            },
        );
        let mut mtls = vec![false; graph.edges.len()];
        for &(e, ()) in &hits {
            mtls[e] = true;
        }
        for (e, m) in graph.edges.iter_mut().zip(mtls) {
            if m {
                e.is_mtls = true;
            }
        }
        Ok(())
    }
}

plugin_api::register_appender!(SecurityPolicy);
plugin_api::export_plugin!(name: "appender-security-policy", version: env!("CARGO_PKG_VERSION"));
