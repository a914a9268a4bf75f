//! unusedNode through the plugin boundary: the built library, loaded as the host loads it.
#![allow(clippy::field_reassign_with_default)] // graphs are built up step by step

use plugin_api::compliance::{REQUESTED, labels, request};
use plugin_api::*;

plugin_api::appender_boundary_tests!("appender_unused_node");

fn workloads() -> AppenderData {
    let w = |name: &str, app: &str, version: &str| WorkloadInfo {
        namespace: REQUESTED.into(),
        name: name.into(),
        kind: "Deployment".into(),
        labels: labels(&[("app", app), ("version", version)]),
        pod_count: 1,
        has_sidecar: true,
        ..Default::default()
    };
    let list = vec![
        w("customer-v1", "customer", "v1"),
        w("preference-v1", "preference", "v1"),
        w("recommendation-v1", "recommendation", "v1"),
        w("recommendation-v2", "recommendation", "v2"),
    ];
    AppenderData {
        cluster: ClusterData { workloads: list.into_iter().collect(), ..Default::default() },
        ..Default::default()
    }
}

fn vapp(wl: &str) -> String {
    format!("vapp_{REQUESTED}_{wl}")
}

fn node(wl: &str, app: &str) -> Node {
    let mut n = Node::new(&vapp(wl), NodeType::App, REQUESTED);
    n.workload = wl.into();
    n.app = app.into();
    n.version = "v1".into();
    n
}

#[test]
fn an_empty_graph_gets_every_workload_as_unused() {
    let req = request(GraphType::VersionedApp, false);
    let mut g = Graph::default();
    apply(&req, &workloads(), &mut g);
    assert_eq!(g.nodes.len(), 4);
    assert!(
        g.nodes
            .iter()
            .all(|n| n.is_unused && n.node_type == NodeType::App && !n.rates.has_traffic())
    );
    assert!(g.edges.is_empty());
}

#[test]
fn unused_versions_get_edges_from_callers_of_their_app() {
    let req = request(GraphType::VersionedApp, false);
    let mut g = Graph::default();
    let unknown = Node::new("unknown_source", NodeType::Unknown, "unknown");
    let nodes = vec![
        unknown,
        node("customer-v1", "customer"),
        node("preference-v1", "preference"),
        node("recommendation-v1", "recommendation"),
    ];
    for w in nodes.windows(2) {
        g.edges.push(Edge::new(w[0].id.as_str(), w[1].id.as_str(), "http"));
    }
    g.nodes = nodes.into_iter().collect();
    apply(&req, &workloads(), &mut g);
    assert_eq!(g.nodes.len(), 5);
    let unused: Vec<&str> = g.nodes.iter().filter(|n| n.is_unused).map(|n| n.id.as_str()).collect();
    assert_eq!(unused, [vapp("recommendation-v2")]);
    let to_unused: Vec<(&str, &str)> = g
        .edges
        .iter()
        .filter(|e| e.target.as_str() == vapp("recommendation-v2"))
        .map(|e| (e.source.as_str(), e.protocol.as_str()))
        .collect();
    assert_eq!(to_unused, [(vapp("preference-v1").as_str(), "")]);
}

#[test]
fn service_graphs_and_node_graphs_are_left_alone() {
    for req in [request(GraphType::Service, false), request(GraphType::VersionedApp, true)] {
        let mut g = Graph::default();
        apply(&req, &workloads(), &mut g);
        assert!(g.nodes.is_empty());
    }
}
