//! `ambient` through the plugin boundary: the built library, loaded as the host loads it.
#![allow(clippy::field_reassign_with_default)] // graphs are built up step by step

use plugin_api::compliance::{REQUESTED, request};
use plugin_api::*;

plugin_api::appender_boundary_tests!("appender_ambient");

fn node(name: &str, waypoint: bool) -> Node {
    let mut n = Node::new(name, NodeType::Workload, REQUESTED);
    n.workload = name.into();
    if waypoint {
        n.set_field("isWaypoint", Value::Bool(true));
        n.set_field("isAmbient", Value::Bool(true));
    }
    n
}

fn ids(g: &Graph) -> Vec<String> {
    g.nodes.iter().map(|n| n.id.to_string()).collect()
}

fn edges(g: &Graph) -> Vec<(String, String, String)> {
    g.edges
        .iter()
        .map(|e| (e.source.to_string(), e.target.to_string(), e.protocol.to_string()))
        .collect()
}

#[test]
fn waypoints_their_edges_and_the_nodes_they_isolate_go() {
    // client -http-> server (the waypoint's own report), client -tcp-> waypoint -tcp->
    // server (ztunnel's halves), tcp-only -tcp-> waypoint -tcp-> tcp-server, and an
    // unrelated pair.
    let mut g = Graph::default();
    g.nodes = ["client", "server", "tcp-only", "tcp-server", "a", "b"]
        .iter()
        .map(|n| node(n, false))
        .chain([node("waypoint", true)])
        .collect();
    let e = |s: &str, t: &str, p: &str| Edge::new(s, t, p);
    g.edges = vec![
        e("client", "server", "http"),
        e("client", "waypoint", "tcp"),
        e("waypoint", "server", "tcp"),
        e("tcp-only", "waypoint", "tcp"),
        e("waypoint", "tcp-server", "tcp"),
        e("a", "b", "tcp"),
    ]
    .into_iter()
    .collect();
    apply(&request(GraphType::Workload, false), &AppenderData::default(), &mut g);
    assert_eq!(ids(&g), ["client", "server", "a", "b"]);
    let s = |v: &str| v.to_string();
    assert_eq!(edges(&g), [(s("client"), s("server"), s("http")), (s("a"), s("b"), s("tcp"))]);
}

#[test]
fn an_unused_waypoint_is_known_by_its_workload_label() {
    // unusedNode adds a waypoint that saw no traffic without the host's flag.
    let mut g = Graph::default();
    let mut unused = node("waypoint", false);
    unused.is_unused = true;
    g.nodes = [node("x", false), node("y", false), unused].into_iter().collect();
    g.edges = vec![Edge::new("x", "y", "http")].into_iter().collect();
    let wl = |name: &str, labels: &[(&str, &str)]| WorkloadInfo {
        namespace: REQUESTED.into(),
        name: name.into(),
        kind: "Deployment".into(),
        labels: plugin_api::compliance::labels(labels),
        pod_count: 1,
        has_sidecar: false,
        ..Default::default()
    };
    let data = AppenderData {
        cluster: ClusterData {
            workloads: vec![
                wl("waypoint", &[("gateway.istio.io/managed", "istio.io-mesh-controller")]),
                // A Gateway API gateway of another class is not a waypoint.
                wl("x", &[("gateway.istio.io/managed", "istio.io-gateway-controller")]),
            ]
            .into_iter()
            .collect(),
            ..Default::default()
        },
        ..Default::default()
    };
    apply(&request(GraphType::Workload, false), &data, &mut g);
    assert_eq!(ids(&g), ["x", "y"]);
}

#[test]
fn a_graph_without_waypoints_is_left_as_it_is() {
    let mut g = Graph::default();
    g.nodes = [node("x", false), node("y", false), node("lonely", false)].into_iter().collect();
    g.edges = vec![Edge::new("x", "y", "http")].into_iter().collect();
    let before = g.clone();
    apply(&request(GraphType::Workload, false), &AppenderData::default(), &mut g);
    assert_eq!(g, before);
}
