//! deadNode through the plugin boundary: the built library, loaded as the host loads it.
#![allow(clippy::field_reassign_with_default)] // graphs are built up step by step

use plugin_api::abi_stable::std_types::RResult;
use plugin_api::compliance::{REQUESTED, request};
use plugin_api::{
    AppenderData, ClusterData, Edge, Graph, GraphType, Label, Node, NodeType, WorkloadInfo,
};

plugin_api::appender_boundary_tests!("appender_dead_node");

fn wl(name: &str, http_in: f64) -> Node {
    let mut n = Node::new(&format!("wl_{REQUESTED}_{name}"), NodeType::Workload, REQUESTED);
    n.workload = name.into();
    n.rates.http_in = http_in;
    n
}

fn svc(name: &str) -> Node {
    let mut n = Node::new(&format!("svc_{REQUESTED}_{name}"), NodeType::Service, REQUESTED);
    n.service = name.into();
    n
}

#[test]
fn removes_artefacts_and_flags_workloads_without_pods() {
    let mut unknown = Node::new("unknown_source", NodeType::Unknown, "unknown");
    unknown.workload = "unknown".into();
    let mut ingress = wl("ingress", 0.0);
    ingress.rates.http_out = 3.0;
    let with_traffic = wl("no-deployment-with-traffic", 0.8);
    let no_traffic = wl("no-deployment-no-traffic", 0.0);
    let no_pods = wl("no-pods", 0.0);
    let mut se = svc("egress.io");
    se.is_service_entry = "MESH_EXTERNAL".into();
    let terminal = svc("egress.not.defined");
    let mut erroring = svc("erroring");
    erroring.rates.http_in = 1.0;
    erroring.rates.http_in_5xx = 1.0;
    let nodes = vec![unknown, ingress, with_traffic, no_traffic, no_pods, se, terminal, erroring];
    let mut g = Graph::default();
    for n in &nodes[2..] {
        g.edges.push(Edge::new(nodes[1].id.as_str(), n.id.as_str(), "http"));
    }
    g.nodes = nodes.into_iter().collect();
    let workloads = ["ingress", "no-pods"].map(|n| WorkloadInfo {
        namespace: REQUESTED.into(),
        name: n.into(),
        kind: "Deployment".into(),
        labels: vec![Label::new("app", n)].into_iter().collect(),
        pod_count: if n == "no-pods" { 0 } else { 1 },
        has_sidecar: true,
        ..Default::default()
    });
    let data = AppenderData {
        cluster: ClusterData { workloads: workloads.into_iter().collect(), ..Default::default() },
        ..Default::default()
    };
    let req = request(GraphType::Workload, false);
    assert!(matches!(appender().apply(&req, &data, &mut g), RResult::ROk(())));
    let mut ids: Vec<&str> = g.nodes.iter().map(|n| n.id.as_str()).collect();
    ids.sort();
    let ns = REQUESTED;
    let mut want = vec![
        format!("wl_{ns}_ingress"),
        format!("wl_{ns}_no-deployment-with-traffic"),
        format!("wl_{ns}_no-pods"),
        format!("svc_{ns}_egress.io"),
        format!("svc_{ns}_erroring"),
    ];
    want.sort();
    assert_eq!(ids, want);
    let dead: Vec<&str> =
        g.nodes.iter().filter(|n| n.is_dead).map(|n| n.workload.as_str()).collect();
    assert_eq!(dead, ["no-pods"]);
    assert_eq!(g.edges.len(), 4, "edges to removed nodes are dropped");
}

#[test]
fn a_node_is_judged_by_its_own_clusters_workloads() {
    // `no-pods` has no pods at home; west's workload of that name has one, and the node of
    // cluster `unknown` (telemetry without cluster labels) is the home one.
    let in_cluster = |cluster: &str, id: &str| {
        let mut n = wl("no-pods", 0.0);
        n.id = id.into();
        n.cluster = cluster.into();
        n
    };
    let home = in_cluster("Kubernetes", "a");
    let unknown = in_cluster("unknown", "b");
    let west = in_cluster("west", "c");
    let mut ingress = wl("ingress", 0.0);
    ingress.rates.http_out = 1.0;
    let mut g = Graph::default();
    g.nodes = vec![ingress, home, unknown, west].into_iter().collect();
    let workload = |cluster: &str, pods: u32| WorkloadInfo {
        cluster: cluster.into(),
        namespace: REQUESTED.into(),
        name: "no-pods".into(),
        kind: "Deployment".into(),
        pod_count: pods,
        ..Default::default()
    };
    let data = AppenderData {
        cluster: ClusterData {
            workloads: vec![workload("Kubernetes", 0), workload("west", 1)].into_iter().collect(),
            ..Default::default()
        },
        ..Default::default()
    };
    apply(&request(GraphType::Workload, false), &data, &mut g);
    let dead: Vec<(&str, bool)> =
        g.nodes.iter().skip(1).map(|n| (n.cluster.as_str(), n.is_dead)).collect();
    assert_eq!(dead, [("Kubernetes", true), ("unknown", true), ("west", false)]);
}
