//! securityPolicy through the plugin boundary: the built library, loaded as the host loads it.
#![allow(clippy::field_reassign_with_default)] // graphs are built up step by step

use plugin_api::abi_stable::std_types::RResult;
use plugin_api::compliance::{REQUESTED, label_set, request};
use plugin_api::*;

plugin_api::appender_boundary_tests!("appender_security_policy");

fn series(policy: &str, v: f64) -> Series {
    Series {
        labels: label_set(&[
            ("source_workload_namespace", "istio-system"),
            ("source_workload", "istio-ingressgateway"),
            ("source_app", "istio-ingressgateway"),
            ("source_version", "unknown"),
            ("destination_service_namespace", REQUESTED),
            ("destination_service_name", "productpage"),
            ("destination_workload", "productpage-v1"),
            ("destination_app", "productpage"),
            ("destination_version", "v1"),
            ("connection_security_policy", policy),
        ]),
        samples: vec![Sample { t: 0.0, v }].into_iter().collect(),
    }
}

fn graph(inject: bool) -> Graph {
    let src = "wl_istio-system_istio-ingressgateway".to_string();
    let svc = format!("svc_{REQUESTED}_productpage");
    let dst = format!("wl_{REQUESTED}_productpage-v1");
    let mut g = Graph::default();
    g.nodes = vec![
        Node::new(&src, NodeType::Workload, "istio-system"),
        Node::new(&svc, NodeType::Service, REQUESTED),
        Node::new(&dst, NodeType::Workload, REQUESTED),
    ]
    .into_iter()
    .collect();
    g.edges = if inject {
        vec![Edge::new(&src, &svc, "http"), Edge::new(&svc, &dst, "http")]
    } else {
        vec![Edge::new(&src, &dst, "http")]
    }
    .into_iter()
    .collect();
    g
}

fn data(s: Vec<Series>) -> AppenderData {
    AppenderData {
        results: vec![QueryResult { series: s.into_iter().collect() }, QueryResult::default()]
            .into_iter()
            .collect(),
        ..Default::default()
    }
}

#[test]
fn mutual_tls_edges_are_flagged_on_every_hop() {
    let req = request(GraphType::Workload, false);
    let inputs = match appender().inputs(&req) {
        RResult::ROk(i) => i,
        RResult::RErr(e) => panic!("{e}"),
    };
    assert_eq!(inputs.queries.len(), 2);
    assert!(
        inputs.queries.iter().all(|q| q.matchers.contains(&Matcher::eq("reporter", "destination")))
    );
    let mut g = graph(false);
    apply(&req, &data(vec![series("mutual_tls", 9.5)]), &mut g);
    assert!(g.edges[0].is_mtls);

    let mut req = req;
    req.inject_service_nodes = true;
    let mut g = graph(true);
    apply(&req, &data(vec![series("mutual_tls", 9.5)]), &mut g);
    assert!(g.edges.iter().all(|e| e.is_mtls));
}

#[test]
fn plain_or_idle_connections_are_not_flagged() {
    let req = request(GraphType::Workload, false);
    let mut g = graph(false);
    apply(&req, &data(vec![series("none", 9.5), series("mutual_tls", 0.0)]), &mut g);
    assert!(!g.edges[0].is_mtls);
}

/// Results big enough to be matched on several threads: exactly the edges with an mTLS
/// series are marked, wherever that series fell in the result.
#[test]
fn a_big_result_marks_exactly_the_mtls_edges() {
    let req = request(GraphType::Workload, false);
    let n = 6000;
    let id = |i: usize| format!("wl_{REQUESTED}_w{i}-v1");
    let mut g = Graph::default();
    g.nodes = (0..=n).map(|i| Node::new(&id(i), NodeType::Workload, REQUESTED)).collect();
    g.edges = (0..n).map(|i| Edge::new(&id(i), &id(i + 1), "http")).collect();
    let one = |i: usize, policy: &str| {
        let (s, d) = (format!("w{i}-v1"), format!("w{}-v1", i + 1));
        let mut x = series(policy, 1.0);
        x.labels = x
            .labels
            .iter()
            .map(|(n, v)| match n {
                "source_workload_namespace" => (n, REQUESTED),
                "source_workload" => (n, s.as_str()),
                "destination_workload" => (n, d.as_str()),
                _ => (n, v),
            })
            .collect();
        x
    };
    let mtls = |i: usize| i.is_multiple_of(3);
    let results: Vec<Series> =
        (0..n).rev().map(|i| one(i, if mtls(i) { "mutual_tls" } else { "unknown" })).collect();
    let data = AppenderData {
        results: vec![QueryResult { series: results.into_iter().collect() }].into_iter().collect(),
        ..Default::default()
    };
    apply(&req, &data, &mut g);
    for (i, e) in g.edges.iter().enumerate() {
        assert_eq!(e.is_mtls, mtls(i), "edge {i}");
    }
}

#[test]
fn a_call_into_another_cluster_is_found_by_its_clusters_ids() {
    // The gateway at home calls productpage in west: the edge's target id names west, and
    // the series' cluster labels lead to it (not to the home productpage).
    let mut s = series("mutual_tls", 1.0);
    s.labels.push("source_cluster", "Kubernetes");
    s.labels.push("destination_cluster", "west");
    let mut g = graph(false);
    let west = format!("wl_west_{REQUESTED}_productpage-v1");
    g.nodes.push(Node::new(&west, NodeType::Workload, REQUESTED));
    g.edges.push(Edge::new("wl_istio-system_istio-ingressgateway", &west, "http"));
    apply(&request(GraphType::Workload, false), &data(vec![s]), &mut g);
    let mtls: Vec<(&str, bool)> = g.edges.iter().map(|e| (e.target.as_str(), e.is_mtls)).collect();
    assert_eq!(mtls, [(&*format!("wl_{REQUESTED}_productpage-v1"), false), (&*west, true)]);
}
