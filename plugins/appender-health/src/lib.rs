//! `health`: sets each app, service and workload node's `healthStatus` (`healthy`,
//! `degraded`, `failure` or `na`), judged by the `[health]` rules on the node's own traffic
//! over the graph's window, as Kiali's health appender does
//! (graph/telemetry/istio/appender/health.go: node health from the edges' responses, not from
//! the health cache's fixed window).
//!
//! Its queries are the graph's own request queries (same matchers, grouping and window), so
//! the metrics engine coalesces them with the traffic plan's: no extra backend work.
#![forbid(unsafe_code)]

use appender_support::labels::{CODE, DST_WL_NS, GRPC_STATUS, PROTOCOL};
use appender_support::{
    EdgeIndex, FastMap, FastSet, HashMapExt, OnHops, edge_group_by, node_positions,
};
use appender_support::{is_ok, lookup_cluster, request_families};
use meshlens_health::{RateRule, RequestCodes, Rules, Status, series_rate, workload_status};
use plugin_api::abi_stable::std_types::{ROption, RString};
use plugin_api::{
    AppenderData, AppenderInputs, ClusterKind, Graph, GraphAppender, GraphRequest, HistogramStat,
    MetricQuery, Node, NodeType, PluginError, QueryTime, RangeFunc, Value,
};

/// The `health` appender.
#[derive(Default)]
pub struct Health {
    rules: Rules,
}

impl GraphAppender for Health {
    fn name(&self) -> &str {
        "health"
    }
    /// `{"rate": [...]}`: the host hands over `[health].rate` (the same rules as the API).
    fn configure(&mut self, config: &serde_json::Value) -> Result<(), PluginError> {
        let Some(table) = config.as_object() else {
            return Err(PluginError::invalid("expected a table"));
        };
        if let Some(k) = table.keys().find(|k| *k != "rate") {
            return Err(PluginError::invalid(format!("unknown key `{k}`")));
        }
        let rate: Vec<RateRule> = match table.get("rate") {
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| PluginError::invalid(format!("rate: {e}")))?,
            None => Vec::new(),
        };
        self.rules = Rules::compile(&rate).map_err(|problems| {
            let text: Vec<String> =
                problems.iter().map(|p| format!("{}: {}", p.key, p.reason)).collect();
            PluginError::invalid(text.join("; "))
        })?;
        Ok(())
    }
    fn inputs(&self, req: &GraphRequest) -> Result<AppenderInputs, PluginError> {
        // The traffic plan's grouping: the edge labels, the workload namespace, the codes.
        let group: Vec<RString> = edge_group_by(&[DST_WL_NS, PROTOCOL, CODE, GRPC_STATUS])
            .into_iter()
            .map(RString::from)
            .collect();
        let queries = request_families(req)
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
        Ok(AppenderInputs { cluster: vec![ClusterKind::Workloads].into_iter().collect(), queries })
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
        let mut codes: Vec<RequestCodes> = vec![RequestCodes::default(); graph.nodes.len()];
        {
            let index = EdgeIndex::new(graph);
            let nodes = node_positions(graph);
            // Each series' protocol, code and rate are read where it is matched (on all
            // cores), once for both of its ends.
            let hits = index.hits(
                &data.results,
                req.graph_type,
                req.inject_service_nodes,
                req.home_cluster.as_str(),
                OnHops::Every,
                |s, _| Some(series_rate(s)),
            );
            for (e, (protocol, code, v)) in hits {
                let edge = &graph.edges[e];
                // The index finds every protocol of a pair; a series counts on its own.
                if protocol != edge.protocol.as_str() {
                    continue;
                }
                if let Some(&i) = nodes.get(edge.source.as_str()) {
                    codes[i].outbound.add(protocol, code, v);
                }
                if let Some(&i) = nodes.get(edge.target.as_str()) {
                    codes[i].inbound.add(protocol, code, v);
                }
            }
        }
        let home = req.home_cluster.as_str();
        // By app only where an app node stands for several workloads.
        let apps = graph.nodes.iter().any(|n| n.node_type == NodeType::App);
        let pods = workload_pods(data, req.app_label.as_str(), home, apps);
        // A set: scanning 1,000 requested namespaces for each of 10,000 nodes was a third
        // of this appender's time on the 1,000-namespace graph.
        let requested: FastSet<&str> = req.namespaces.iter().map(|s| s.as_str()).collect();
        for (n, rc) in graph.nodes.iter_mut().zip(codes) {
            // Kiali judges outsider nodes too; meshlens appenders leave other namespaces'
            // nodes alone.
            if !requested.contains(n.namespace.as_str()) {
                continue;
            }
            if let Some(status) = self.node_status(n, &rc, &pods, home) {
                n.set_field("healthStatus", Value::Text(status.as_str().into()));
            }
        }
        Ok(())
    }
}

/// The replica status of each workload, by (cluster, namespace, workload), and the worst of
/// each app's: a node is judged by its own cluster's workloads.
struct Pods<'a> {
    by_workload: FastMap<(&'a str, &'a str, &'a str), Status>,
    by_app: FastMap<(&'a str, &'a str, &'a str), Status>,
}

fn workload_pods<'a>(
    data: &'a AppenderData,
    app_label: &str,
    home: &'a str,
    apps: bool,
) -> Pods<'a> {
    let n = data.cluster.workloads.len();
    let mut p = Pods { by_workload: FastMap::with_capacity(n), by_app: FastMap::default() };
    for w in data.cluster.workloads.iter() {
        let status = workload_status(i64::from(w.replicas), i64::from(w.available_replicas));
        let c = lookup_cluster(w.cluster.as_str(), home);
        p.by_workload.insert((c, w.namespace.as_str(), w.name.as_str()), status);
        if !apps {
            continue;
        }
        if let Some(app) = w.labels.iter().find(|l| l.name.as_str() == app_label) {
            let worst = p.by_app.entry((c, w.namespace.as_str(), app.value.as_str()));
            let worst = worst.or_insert(Status::Na);
            *worst = worst.worst(status);
        }
    }
    p
}

impl Health {
    /// The node's status: its request status merged with its workloads' replica status, as
    /// the health API computes it (Kiali's calculateHealthStatus in the health appender; a
    /// versioned app node there carries no replica status, here its own workload's).
    /// Unknown and inaccessible nodes get none.
    fn node_status(
        &self,
        n: &Node,
        rc: &RequestCodes,
        pods: &Pods<'_>,
        home: &str,
    ) -> Option<Status> {
        if n.is_inaccessible {
            return None;
        }
        let ns = n.namespace.as_str();
        let c = lookup_cluster(n.cluster.as_str(), home);
        // `na` where no workload is known: the worst of `na` and any status is that status.
        let workload = |w: &str| pods.by_workload.get(&(c, ns, w)).copied().unwrap_or(Status::Na);
        let (kind, name, workloads) = match n.node_type {
            NodeType::Workload => ("workload", n.workload.as_str(), workload(n.workload.as_str())),
            // A versioned app node stands for one workload.
            NodeType::App if is_ok(n.workload.as_str()) => {
                ("app", n.app.as_str(), workload(n.workload.as_str()))
            }
            NodeType::App => {
                let p = pods.by_app.get(&(c, ns, n.app.as_str())).copied();
                ("app", n.app.as_str(), p.unwrap_or(Status::Na))
            }
            NodeType::Service => ("service", n.service.as_str(), Status::Na),
            NodeType::Unknown => return None,
        };
        if name.is_empty() {
            return None;
        }
        Some(self.rules.request_status(ns, kind, name, rc).worst(workloads))
    }
}

plugin_api::register_appender!(Health::default());
plugin_api::export_plugin!(name: "appender-health", version: env!("CARGO_PKG_VERSION"));
