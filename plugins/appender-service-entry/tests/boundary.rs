//! serviceEntry through the plugin boundary: the built library, loaded as the host loads it.
#![allow(clippy::field_reassign_with_default)] // graphs are built up step by step

use plugin_api::abi_stable::std_types::{RResult, RVec};
use plugin_api::compliance::{REQUESTED, request};
use plugin_api::*;

plugin_api::appender_boundary_tests!("appender_service_entry");

fn svc(name: &str) -> Node {
    let mut n = Node::new(&format!("svc_{REQUESTED}_{name}"), NodeType::Service, REQUESTED);
    n.service = name.into();
    n
}

#[test]
fn terminal_service_nodes_named_by_an_entry_get_its_location() {
    let mut src = Node::new(&format!("wl_{REQUESTED}_src"), NodeType::Workload, REQUESTED);
    src.workload = "src".into();
    let mut dst = Node::new(&format!("wl_{REQUESTED}_dst"), NodeType::Workload, REQUESTED);
    dst.workload = "dst".into();
    let (ext, int, not) =
        (svc("ExternalServiceEntry"), svc("InternalServiceEntry"), svc("NotServiceEntry"));
    let mut g = Graph::default();
    for t in [&ext, &int, &not] {
        g.edges.push(Edge::new(src.id.as_str(), t.id.as_str(), "http"));
    }
    g.edges.push(Edge::new(not.id.as_str(), dst.id.as_str(), "http"));
    g.nodes = vec![src, dst, ext, int, not].into_iter().collect();
    let se = |name: &str, spec: &str| ConfigObject {
        cluster: "Kubernetes".into(),
        kind: "ServiceEntry".into(),
        namespace: "elsewhere".into(),
        name: name.into(),
        labels: RVec::new(),
        spec_json: spec.into(),
    };
    let objects = vec![
        se("ext", r#"{"hosts":["ExternalServiceEntry"],"location":"MESH_EXTERNAL"}"#),
        se(
            "int",
            r#"{"hosts":["InternalServiceEntry","NotServiceEntry"],"location":"MESH_INTERNAL"}"#,
        ),
    ];
    let data = AppenderData {
        cluster: ClusterData { objects: objects.into_iter().collect(), ..Default::default() },
        ..Default::default()
    };
    let req = request(GraphType::Workload, false);
    match appender().inputs(&req) {
        RResult::ROk(i) => assert_eq!(i.cluster.as_slice(), [ClusterKind::ServiceEntries]),
        RResult::RErr(e) => panic!("{e}"),
    }
    apply(&req, &data, &mut g);
    let got: Vec<(&str, &str)> =
        g.nodes.iter().map(|n| (n.id.as_str(), n.is_service_entry.as_str())).collect();
    let ns = REQUESTED;
    assert!(got.contains(&(&format!("svc_{ns}_ExternalServiceEntry"), "MESH_EXTERNAL")));
    assert!(got.contains(&(&format!("svc_{ns}_InternalServiceEntry"), "MESH_INTERNAL")));
    assert!(
        got.contains(&(&format!("svc_{ns}_NotServiceEntry"), "")),
        "a service node with outgoing edges is not an entry"
    );
    assert_eq!(g.nodes.iter().filter(|n| !n.is_service_entry.is_empty()).count(), 2);
}

#[test]
fn an_entry_marks_service_nodes_of_its_own_cluster_only() {
    let node = |cluster: &str, id: &str| {
        let mut n = svc("api.example.com");
        n.id = id.into();
        n.cluster = cluster.into();
        n
    };
    let mut g = Graph::default();
    g.nodes = vec![node("Kubernetes", "home"), node("unknown", "unknown"), node("west", "west")]
        .into_iter()
        .collect();
    let entry = ConfigObject {
        cluster: "west".into(),
        kind: "ServiceEntry".into(),
        namespace: REQUESTED.into(),
        name: "api".into(),
        labels: RVec::new(),
        spec_json: r#"{"hosts":["api.example.com"],"location":"MESH_EXTERNAL"}"#.into(),
    };
    let data = AppenderData {
        cluster: ClusterData { objects: vec![entry].into_iter().collect(), ..Default::default() },
        ..Default::default()
    };
    apply(&request(GraphType::Workload, false), &data, &mut g);
    let marked: Vec<(&str, &str)> =
        g.nodes.iter().map(|n| (n.id.as_str(), n.is_service_entry.as_str())).collect();
    assert_eq!(marked, [("home", ""), ("unknown", ""), ("west", "MESH_EXTERNAL")]);
}
