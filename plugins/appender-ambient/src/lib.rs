//! `ambient`: hides waypoint proxies (Istio's ambient L7 proxies) from the graph.
//!
//! The host flags waypoint nodes `isWaypoint` while it builds the graph (it knows them from
//! their pods' `gateway.istio.io/managed` label). This appender removes those nodes, every
//! edge into or out of them, and any node the removal leaves with no edge at all, as Kiali's
//! `graph/telemetry/istio/appender/ambient.go` (`handleWaypoints`) does with
//! `waypoints=false`. The hops through a waypoint are not redrawn as client → server edges:
//! the waypoint's own request reports already give those edges.
//!
//! A waypoint that saw no traffic is not in the telemetry, so the host cannot flag it; the
//! `unusedNode` appender may add it as an unused workload node. Such nodes are recognised by
//! their workload's pod template label `gateway.istio.io/managed: istio.io-mesh-controller`
//! (the workloads are this appender's one input) and hidden too.
//!
//! With `waypoints=true` the host does not run it (Kiali's appender then only adds
//! bidirectional-edge hints for its console, which ours does not use).
#![forbid(unsafe_code)]

use appender_support::{FastSet, lookup_cluster};
use plugin_api::{
    AppenderData, AppenderInputs, ClusterKind, Graph, GraphAppender, GraphRequest, NodeType,
    PluginError, Value, label_value,
};

/// The node field that marks a waypoint.
pub const IS_WAYPOINT: &str = "isWaypoint";
/// The pod label Istio puts on the proxies it deploys for Gateway objects ...
pub const GATEWAY_MANAGED: &str = "gateway.istio.io/managed";
/// ... and its value on waypoints (Gateways of class `istio-waypoint`).
pub const WAYPOINT_CONTROLLER: &str = "istio.io-mesh-controller";

/// The `ambient` appender.
pub struct Ambient;

fn is_waypoint(n: &plugin_api::Node) -> bool {
    n.extra.iter().any(|f| f.key.as_str() == IS_WAYPOINT && f.value == Value::Bool(true))
}

/// Removes waypoints (flagged nodes, and workload nodes of the `(cluster, namespace,
/// workload)` triples in `by_label`, the cluster as [`lookup_cluster`] gives it with `home`
/// the home cluster), their edges and the nodes left without any edge by that.
pub fn hide_waypoints(graph: &mut Graph, by_label: &FastSet<(&str, &str, &str)>, home: &str) {
    let labelled = |n: &plugin_api::Node| {
        n.node_type == NodeType::Workload && {
            let c = lookup_cluster(n.cluster.as_str(), home);
            by_label.contains(&(c, n.namespace.as_str(), n.workload.as_str()))
        }
    };
    let waypoints: FastSet<String> = graph
        .nodes
        .iter()
        .filter(|n| is_waypoint(n) || labelled(n))
        .map(|n| n.id.to_string())
        .collect();
    if waypoints.is_empty() {
        return;
    }
    let mut neighbours: FastSet<String> = FastSet::default();
    graph.edges.retain(|e| {
        let (s, t) = (e.source.as_str(), e.target.as_str());
        let touches = waypoints.contains(s) || waypoints.contains(t);
        if touches {
            for end in [s, t] {
                if !waypoints.contains(end) {
                    neighbours.insert(end.to_string());
                }
            }
        }
        !touches
    });
    // A neighbour that still has an edge stays; one the removal isolated goes.
    for e in graph.edges.iter() {
        neighbours.remove(e.source.as_str());
        neighbours.remove(e.target.as_str());
    }
    graph.nodes.retain(|n| {
        let id = n.id.as_str();
        !waypoints.contains(id) && !neighbours.contains(id)
    });
}

impl GraphAppender for Ambient {
    fn name(&self) -> &str {
        "ambient"
    }
    fn inputs(&self, _req: &GraphRequest) -> Result<AppenderInputs, PluginError> {
        Ok(AppenderInputs {
            cluster: vec![ClusterKind::Workloads].into_iter().collect(),
            ..Default::default()
        })
    }
    fn apply(
        &self,
        req: &GraphRequest,
        data: &AppenderData,
        graph: &mut Graph,
    ) -> Result<(), PluginError> {
        let home = req.home_cluster.as_str();
        let by_label: FastSet<(&str, &str, &str)> = data
            .cluster
            .workloads
            .iter()
            .filter(|w| label_value(&w.labels, GATEWAY_MANAGED) == Some(WAYPOINT_CONTROLLER))
            .map(|w| {
                (lookup_cluster(w.cluster.as_str(), home), w.namespace.as_str(), w.name.as_str())
            })
            .collect();
        hide_waypoints(graph, &by_label, home);
        Ok(())
    }
}

plugin_api::register_appender!(Ambient);
plugin_api::export_plugin!(name: "appender-ambient", version: env!("CARGO_PKG_VERSION"));
