//! sidecarsCheck through the plugin boundary: the built library, loaded as the host loads it.
#![allow(clippy::field_reassign_with_default)] // graphs are built up step by step

use plugin_api::compliance::{REQUESTED, labels, request};
use plugin_api::*;

plugin_api::appender_boundary_tests!("appender_sidecars_check");

fn w(ns: &str, name: &str, app: &str, version: &str, sidecar: bool) -> WorkloadInfo {
    WorkloadInfo {
        namespace: ns.into(),
        name: name.into(),
        kind: "Deployment".into(),
        labels: labels(&[("app", app), ("version", version)]),
        pod_count: 1,
        has_sidecar: sidecar,
        ..Default::default()
    }
}

#[test]
fn workloads_and_apps_missing_a_sidecar_are_flagged() {
    let ns = REQUESTED;
    let wl = |name: &str| {
        let mut n = Node::new(&format!("wl_{ns}_{name}"), NodeType::Workload, ns);
        n.workload = name.into();
        n
    };
    let app = |name: &str, version: &str| {
        let mut n = Node::new(&format!("app_{ns}_{name}_{version}"), NodeType::App, ns);
        n.app = name.into();
        n.version = version.into();
        n
    };
    let mut svc = Node::new(&format!("svc_{ns}_details"), NodeType::Service, ns);
    svc.service = "details".into();
    let mut dead = wl("details-v1");
    dead.id = "dead".into();
    dead.is_dead = true;
    let mut mesh = Node::new("wl_istio-system_gw", NodeType::Workload, "istio-system");
    mesh.workload = "gw".into();
    let mut g = Graph::default();
    g.nodes = vec![
        wl("productpage-v1"),
        wl("details-v1"),
        app("nopods", ""),
        app("reviews", ""),
        app("mixed", ""),
        app("mixed", "v1"),
        svc,
        dead,
        mesh,
    ]
    .into_iter()
    .collect();
    let workloads = vec![
        w(ns, "productpage-v1", "productpage", "v1", true),
        w(ns, "details-v1", "details", "v1", false),
        w(ns, "reviews-v1", "reviews", "v1", true),
        w(ns, "reviews-v2", "reviews", "v2", true),
        w(ns, "mixed-v1", "mixed", "v1", true),
        w(ns, "mixed-v2", "mixed", "v2", false),
        w("istio-system", "gw", "gw", "", false),
    ];
    let data = AppenderData {
        cluster: ClusterData { workloads: workloads.into_iter().collect(), ..Default::default() },
        ..Default::default()
    };
    let mut req = request(GraphType::Workload, false);
    req.namespaces.push("istio-system".into());
    apply(&req, &data, &mut g);
    let flagged: Vec<bool> = g.nodes.iter().map(|n| n.has_missing_sc).collect();
    assert_eq!(flagged, [false, true, false, false, true, false, false, false, false]);
}

#[test]
fn ambient_workloads_and_waypoints_are_not_missing_a_sidecar() {
    let ns = REQUESTED;
    let wl = |name: &str, field: Option<&str>| {
        let mut n = Node::new(&format!("wl_{ns}_{name}"), NodeType::Workload, ns);
        n.workload = name.into();
        if let Some(f) = field {
            n.set_field(f, Value::Bool(true));
        }
        n
    };
    let mut g = Graph::default();
    g.nodes = vec![
        wl("captured", Some("isAmbient")),
        wl("waypoint", Some("isWaypoint")),
        wl("bare", None),
    ]
    .into_iter()
    .collect();
    let workloads = vec![
        w(ns, "captured", "captured", "v1", false),
        w(ns, "waypoint", "", "", false),
        w(ns, "bare", "bare", "v1", false),
    ];
    let data = AppenderData {
        cluster: ClusterData { workloads: workloads.into_iter().collect(), ..Default::default() },
        ..Default::default()
    };
    apply(&request(GraphType::Workload, false), &data, &mut g);
    let flagged: Vec<bool> = g.nodes.iter().map(|n| n.has_missing_sc).collect();
    assert_eq!(flagged, [false, false, true], "only the uncaptured workload lacks one");
}
