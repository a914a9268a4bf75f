//! securityPolicy through the plugin boundary: the built library, loaded as the host loads it.
#![allow(clippy::field_reassign_with_default)] // graphs are built up step by step

use plugin_api::abi_stable::std_types::RResult;
use plugin_api::compliance::{REQUESTED, labels, request};
use plugin_api::*;

plugin_api::appender_boundary_tests!("appender_security_policy");

fn series(policy: &str, v: f64) -> Series {
    Series {
        labels: labels(&[
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
    g.edges = if inject { vec![Edge::new(&src, &svc, "http"), Edge::new(&svc, &dst, "http")] } else { vec![Edge::new(&src, &dst, "http")] }
        .into_iter()
        .collect();
    g
}

fn data(s: Vec<Series>) -> AppenderData {
    AppenderData { results: vec![QueryResult { series: s.into_iter().collect() }, QueryResult::default()].into_iter().collect(), ..Default::default() }
}

#[test]
fn mutual_tls_edges_are_flagged_on_every_hop() {
    let req = request(GraphType::Workload, false);
    let inputs = match appender().inputs(&req) {
        RResult::ROk(i) => i,
        RResult::RErr(e) => panic!("{e}"),
    };
    assert_eq!(inputs.queries.len(), 2);
    assert!(inputs.queries.iter().all(|q| q.matchers.contains(&Matcher::eq("reporter", "destination"))));
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
