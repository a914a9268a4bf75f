//! health through the plugin boundary: the built library, loaded as the host loads it.

use plugin_api::compliance::{REQUESTED, request};
use plugin_api::{
    AppenderData, ClusterData, Edge, Graph, GraphType, Label, Node, NodeType, QueryResult, Sample,
    Series, Value, WorkloadInfo,
};

plugin_api::appender_boundary_tests!("appender_health");

fn wl(name: &str) -> Node {
    let mut n = Node::new(&format!("wl_{REQUESTED}_{name}"), NodeType::Workload, REQUESTED);
    n.workload = name.into();
    n.app = name.into();
    n
}

/// One source-reported series from `src` to `dst` with `code`.
fn series(src: &str, dst: &str, protocol: &str, code: &str, grpc: &str, v: f64) -> Series {
    let labels: Vec<(&str, &str)> = vec![
        ("source_workload_namespace", REQUESTED),
        ("source_workload", src),
        ("source_app", src),
        ("source_version", "unknown"),
        ("destination_service_namespace", REQUESTED),
        ("destination_service_name", dst),
        ("destination_workload_namespace", REQUESTED),
        ("destination_workload", dst),
        ("destination_app", dst),
        ("destination_version", "unknown"),
        ("request_protocol", protocol),
        ("response_code", code),
        ("grpc_response_status", grpc),
    ];
    Series { labels: labels.into_iter().collect(), samples: vec![Sample { t: 0.0, v }].into() }
}

fn status(g: &Graph, name: &str) -> Option<String> {
    let n = g.nodes.iter().find(|n| n.workload.as_str() == name)?;
    n.extra.iter().find(|f| f.key.as_str() == "healthStatus").map(|f| match &f.value {
        Value::Text(t) => t.to_string(),
        other => panic!("healthStatus is {other:?}"),
    })
}

#[test]
fn nodes_are_judged_on_their_own_traffic_per_direction() {
    let mut g = Graph::default();
    for n in ["caller", "flaky", "grpc", "idle", "gone"] {
        g.nodes.push(wl(n));
    }
    let id = |n: &str| format!("wl_{REQUESTED}_{n}");
    g.edges.push(Edge::new(&id("caller"), &id("flaky"), "http"));
    g.edges.push(Edge::new(&id("caller"), &id("grpc"), "grpc"));
    let results = vec![QueryResult {
        series: vec![
            series("caller", "flaky", "http", "200", "-", 8.5),
            series("caller", "flaky", "http", "503", "-", 1.5),
            // gRPC errors are in grpc_response_status: 2 % of status 14 is degraded.
            series("caller", "grpc", "grpc", "200", "0", 98.0),
            series("caller", "grpc", "grpc", "200", "14", 2.0),
        ]
        .into(),
    }];
    let workloads = ["caller", "flaky", "grpc", "idle", "gone"].map(|n| WorkloadInfo {
        cluster: "Kubernetes".into(),
        namespace: REQUESTED.into(),
        name: n.into(),
        kind: "Deployment".into(),
        labels: vec![Label::new("app", n)].into_iter().collect(),
        pod_count: if n == "gone" { 0 } else { 2 },
        has_sidecar: true,
        replicas: 2,
        available_replicas: match n {
            "gone" => 0,
            "grpc" => 1,
            _ => 2,
        },
    });
    let data = AppenderData {
        cluster: ClusterData { workloads: workloads.into_iter().collect(), ..Default::default() },
        results: results.into(),
    };
    apply(&request(GraphType::Workload, false), &data, &mut g);
    assert_eq!(status(&g, "flaky").as_deref(), Some("failure"), "15 % 503 inbound");
    assert_eq!(status(&g, "grpc").as_deref(), Some("degraded"), "2 % grpc 14, 1 of 2 up");
    // The caller saw both on its outbound calls: the worst of them.
    assert_eq!(status(&g, "caller").as_deref(), Some("failure"));
    assert_eq!(status(&g, "idle").as_deref(), Some("healthy"), "no traffic, replicas up");
    assert_eq!(status(&g, "gone").as_deref(), Some("failure"), "none of 2 available");
}

#[test]
fn configured_rules_replace_the_defaults_for_their_objects() {
    let a = appender();
    let rules = r#"{"rate":[{"namespace":".*","kind":"workload","name":"picky",
        "tolerance":[{"code":"503","protocol":"http","degraded":20,"failure":30}]}]}"#;
    let configured = a.configure(rules.into());
    assert!(configured.is_ok(), "{configured:?}");
    let bad = a.configure(r#"{"rate":[{"name":"("}]}"#.into());
    assert!(bad.is_err(), "a bad rule is refused");
    let mut g = Graph::default();
    g.nodes.push(wl("caller"));
    g.nodes.push(wl("picky"));
    g.edges.push(Edge::new(
        &format!("wl_{REQUESTED}_caller"),
        &format!("wl_{REQUESTED}_picky"),
        "http",
    ));
    let data = AppenderData {
        results: vec![QueryResult {
            series: vec![
                series("caller", "picky", "http", "200", "-", 8.5),
                series("caller", "picky", "http", "503", "-", 1.5),
            ]
            .into(),
        }]
        .into(),
        ..Default::default()
    };
    apply(&request(GraphType::Workload, false), &data, &mut g);
    assert_eq!(status(&g, "picky").as_deref(), Some("healthy"), "15 % is under its 20 %");
    assert_eq!(status(&g, "caller").as_deref(), Some("failure"), "the default rule");
    assert!(a.configure("{}".into()).is_ok());
}
