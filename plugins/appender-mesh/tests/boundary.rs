//! mesh through the plugin boundary: the built library, loaded as the host loads it.
#![allow(clippy::field_reassign_with_default)] // graphs are built up step by step

use plugin_api::abi_stable::std_types::RVec;
use plugin_api::compliance::{REQUESTED, labels, request};
use plugin_api::*;

plugin_api::appender_boundary_tests!("appender_mesh");

fn nodes() -> Graph {
    let ns = REQUESTED;
    let mut app = Node::new(&format!("app_{ns}_ratings"), NodeType::App, ns);
    app.app = "ratings".into();
    let mut v1 = Node::new(&format!("vapp_{ns}_ratings_v1"), NodeType::App, ns);
    v1.app = "ratings".into();
    v1.version = "v1".into();
    let mut v2 = v1.clone();
    v2.id = format!("vapp_{ns}_ratings_v2").into();
    v2.version = "v2".into();
    let mut svc = Node::new(&format!("svc_{ns}_ratings"), NodeType::Service, ns);
    svc.service = "ratings".into();
    let mut wl = Node::new(&format!("wl_{ns}_ratings-v1"), NodeType::Workload, ns);
    wl.workload = "ratings-v1".into();
    let mut g = Graph::default();
    for mut n in [app, v1, v2, svc, wl] {
        n.dest_services.push("ratings".into());
        g.nodes.push(n);
    }
    g
}

fn data(objects: Vec<(&str, &str)>) -> AppenderData {
    let objects = objects.into_iter().map(|(kind, spec)| ConfigObject {
        cluster: "Kubernetes".into(),
        kind: kind.into(),
        namespace: REQUESTED.into(),
        name: "ratings".into(),
        labels: RVec::new(),
        spec_json: spec.into(),
    });
    let services = vec![ServiceInfo {
        cluster: "Kubernetes".into(),
        namespace: REQUESTED.into(),
        name: "ratings".into(),
        labels: labels(&[("app", "ratings-app")]),
    }];
    AppenderData {
        cluster: ClusterData {
            objects: objects.collect(),
            services: services.into_iter().collect(),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn flags(g: &Graph, f: fn(&Node) -> bool) -> Vec<bool> {
    g.nodes.iter().map(f).collect()
}

#[test]
fn a_top_level_breaker_badges_every_version_and_the_service() {
    let req = request(GraphType::VersionedApp, false);
    let mut g = nodes();
    let host = format!("ratings.{REQUESTED}.svc.cluster.local");
    let dr = format!(
        r#"{{"host":"{host}","trafficPolicy":{{"connectionPool":{{"tcp":{{"maxConnections":1}}}}}},"subsets":[{{"name":"v1","labels":{{"version":"v1"}}}}]}}"#
    );
    apply(&req, &data(vec![("DestinationRule", dr.as_str())]), &mut g);
    assert_eq!(flags(&g, |n| n.has_cb), [true, true, true, true, false]);
    assert_eq!(flags(&g, |n| n.has_vs), [false; 5]);
    assert_eq!(
        g.nodes[3].app.as_str(),
        "ratings-app",
        "service nodes take their Service's app label"
    );
}

#[test]
fn a_subset_breaker_badges_only_its_version_and_a_vs_only_the_service() {
    let req = request(GraphType::VersionedApp, false);
    let mut g = nodes();
    let dr = r#"{"host":"ratings","subsets":[{"name":"v1","labels":{"version":"v1"},"trafficPolicy":{"outlierDetection":{}}},{"name":"v2","labels":{"version":"v2"}}]}"#;
    let vs = r#"{"hosts":["ratings"],"http":[{"route":[{"destination":{"host":"ratings"}}]}]}"#;
    apply(&req, &data(vec![("DestinationRule", dr), ("VirtualService", vs)]), &mut g);
    assert_eq!(flags(&g, |n| n.has_cb), [true, true, false, true, false]);
    assert_eq!(flags(&g, |n| n.has_vs), [false, false, false, true, false]);
}

#[test]
fn rules_for_other_hosts_change_nothing() {
    let req = request(GraphType::VersionedApp, false);
    let mut g = nodes();
    let dr = r#"{"host":"reviews","trafficPolicy":{"outlierDetection":{}}}"#;
    let vs = r#"{"hosts":["ratings.other.svc.cluster.local", "*"]}"#;
    apply(&req, &data(vec![("DestinationRule", dr), ("VirtualService", vs)]), &mut g);
    assert_eq!(flags(&g, |n| n.has_cb || n.has_vs), [false; 5]);
}

fn has_http_route(n: &Node) -> bool {
    n.extra.iter().any(|f| f.key.as_str() == "hasHTTPRoute" && f.value == Value::Bool(true))
}

#[test]
fn a_route_backend_badges_its_service_only() {
    let req = request(GraphType::VersionedApp, false);
    // The route's backends: ratings of its own namespace (kind and namespace defaulted),
    // and two look-alikes that are not this service (another namespace, not a Service).
    for kind in ["HTTPRoute", "GRPCRoute"] {
        let mut g = nodes();
        let route = r#"{"parentRefs":[{"name":"gw"}],"rules":[{"backendRefs":[{"name":"ratings","port":9080}]}]}"#;
        apply(&req, &data(vec![(kind, route)]), &mut g);
        assert_eq!(flags(&g, has_http_route), [false, false, false, true, false], "{kind}");
        assert_eq!(flags(&g, |n| n.has_vs), [false; 5], "a route is no VirtualService");
    }
    let mut g = nodes();
    let elsewhere = r#"{"rules":[{"backendRefs":[{"name":"ratings","namespace":"other"},{"group":"example.com","kind":"Bucket","name":"ratings"}]}]}"#;
    apply(&req, &data(vec![("HTTPRoute", elsewhere)]), &mut g);
    assert_eq!(flags(&g, has_http_route), [false; 5]);
    let mut g = nodes();
    let named = format!(
        r#"{{"rules":[{{"backendRefs":[{{"group":"","kind":"Service","name":"ratings","namespace":"{REQUESTED}"}}]}}]}}"#
    );
    apply(&req, &data(vec![("GRPCRoute", named.as_str())]), &mut g);
    assert_eq!(flags(&g, has_http_route), [false, false, false, true, false]);
}
