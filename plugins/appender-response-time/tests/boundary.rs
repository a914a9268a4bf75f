//! responseTime through the plugin boundary: the built library, loaded as the host loads it.
#![allow(clippy::field_reassign_with_default)] // graphs are built up step by step

use plugin_api::abi_stable::std_types::RResult;
use plugin_api::compliance::{REQUESTED, label_set, request};
use plugin_api::*;

plugin_api::appender_boundary_tests!("appender_response_time");

fn series(src: (&str, &str, &str), dst: (&str, &str, &str), svc: &str, seconds: f64) -> Series {
    Series {
        labels: label_set(&[
            ("source_workload_namespace", REQUESTED),
            ("source_workload", src.0),
            ("source_app", src.1),
            ("source_version", src.2),
            ("destination_service_namespace", REQUESTED),
            ("destination_service_name", svc),
            ("destination_workload", dst.0),
            ("destination_app", dst.1),
            ("destination_version", dst.2),
        ]),
        samples: vec![Sample { t: 0.0, v: seconds }].into_iter().collect(),
    }
}

fn vapp(wl: &str) -> String {
    format!("vapp_{REQUESTED}_{wl}")
}

#[test]
fn edges_get_the_quantile_in_milliseconds_or_zero() {
    let mut req = request(GraphType::VersionedApp, false);
    req.duration_metric = "istio_request_duration_seconds".into();
    req.duration_to_ms = 1000.0;
    req.response_time_quantile = 0.5;
    let inputs = match appender().inputs(&req) {
        RResult::ROk(i) => i,
        RResult::RErr(e) => panic!("{e}"),
    };
    assert_eq!(inputs.queries.len(), 3);
    for q in inputs.queries.iter() {
        assert_eq!(q.metric.as_str(), "istio_request_duration_seconds");
        assert_eq!(q.histogram, HistogramStat::Quantile(0.5));
        assert_eq!((q.window_secs, q.time), (600, QueryTime::Instant(1_700_000_000)));
    }
    let pp = ("productpage-v1", "productpage", "v1");
    let r1 = ("reviews-v1", "reviews", "v1");
    let r2 = ("reviews-v2", "reviews", "v2");
    let ra = ("ratings-v1", "ratings", "v1");
    let results = vec![
        QueryResult {
            series: vec![series(pp, r1, "reviews", 0.020), series(pp, r2, "reviews", 0.020)]
                .into_iter()
                .collect(),
        },
        QueryResult::default(),
        QueryResult {
            series: vec![series(r1, ra, "ratings", 0.030), series(r2, ra, "ratings", f64::NAN)]
                .into_iter()
                .collect(),
        },
    ];
    let mut g = Graph::default();
    for id in ["productpage-v1", "reviews-v1", "reviews-v2", "ratings-v1", "mongodb-v1"] {
        g.nodes.push(Node::new(&vapp(id), NodeType::App, REQUESTED));
    }
    for (s, t, p) in [
        ("productpage-v1", "reviews-v1", "http"),
        ("productpage-v1", "reviews-v2", "http"),
        ("reviews-v1", "ratings-v1", "http"),
        ("reviews-v2", "ratings-v1", "http"),
        ("ratings-v1", "mongodb-v1", "tcp"),
    ] {
        g.edges.push(Edge::new(&vapp(s), &vapp(t), p));
    }
    let data = AppenderData { results: results.into_iter().collect(), ..Default::default() };
    apply(&req, &data, &mut g);
    let rt: Vec<Option<f64>> = g.edges.iter().map(|e| e.response_time.into_option()).collect();
    assert_eq!(rt, [Some(20.0), Some(20.0), Some(30.0), Some(0.0), Some(0.0)]);
}

#[test]
fn series_that_meet_on_one_app_edge_give_the_slowest() {
    let req = request(GraphType::App, false);
    let src = format!("app_{REQUESTED}_productpage");
    let dst = format!("app_{REQUESTED}_reviews");
    let mut g = Graph::default();
    g.nodes =
        vec![Node::new(&src, NodeType::App, REQUESTED), Node::new(&dst, NodeType::App, REQUESTED)]
            .into_iter()
            .collect();
    g.edges = vec![Edge::new(&src, &dst, "http")].into_iter().collect();
    let pp = ("productpage-v1", "productpage", "v1");
    for order in [[20.0, 50.0, 30.0], [50.0, 30.0, 20.0]] {
        let series: Vec<Series> = ["reviews-v1", "reviews-v2", "reviews-v3"]
            .iter()
            .zip(order)
            .map(|(w, v)| series(pp, (w, "reviews", "v1"), "reviews", v))
            .collect();
        let data = AppenderData {
            results: vec![QueryResult { series: series.into_iter().collect() }]
                .into_iter()
                .collect(),
            ..Default::default()
        };
        let mut g = g.clone();
        apply(&req, &data, &mut g);
        assert_eq!(g.edges[0].response_time.into_option(), Some(50.0));
    }
}

#[test]
fn with_service_nodes_only_the_service_hop_gets_a_value() {
    let mut req = request(GraphType::Workload, false);
    req.inject_service_nodes = true;
    let src = format!("wl_{REQUESTED}_productpage-v1");
    let svc = format!("svc_{REQUESTED}_reviews");
    let dst = format!("wl_{REQUESTED}_reviews-v1");
    let mut g = Graph::default();
    g.nodes = vec![
        Node::new(&src, NodeType::Workload, REQUESTED),
        Node::new(&svc, NodeType::Service, REQUESTED),
        Node::new(&dst, NodeType::Workload, REQUESTED),
    ]
    .into_iter()
    .collect();
    g.edges =
        vec![Edge::new(&src, &svc, "http"), Edge::new(&svc, &dst, "http")].into_iter().collect();
    let s = series(
        ("productpage-v1", "productpage", "v1"),
        ("reviews-v1", "reviews", "v1"),
        "reviews",
        12.0,
    );
    let data = AppenderData {
        results: vec![QueryResult { series: vec![s].into_iter().collect() }].into_iter().collect(),
        ..Default::default()
    };
    apply(&req, &data, &mut g);
    assert_eq!(g.edges[0].response_time.into_option(), Some(0.0));
    assert_eq!(g.edges[1].response_time.into_option(), Some(12.0));
}

/// Results big enough to be matched on several threads: every edge still gets exactly its
/// own slowest quantile, wherever its series fell in the result.
#[test]
fn a_big_result_gives_every_edge_its_own_slowest_quantile() {
    let req = request(GraphType::VersionedApp, false);
    let n = 3000;
    let wl = |i: usize| format!("w{i}-v1");
    let app = |i: usize| format!("w{i}");
    let mut g = Graph::default();
    g.nodes = (0..=n).map(|i| Node::new(&vapp(&wl(i)), NodeType::App, REQUESTED)).collect();
    g.edges = (0..n).map(|i| Edge::new(&vapp(&wl(i)), &vapp(&wl(i + 1)), "http")).collect();
    // Two series per edge, the slower one first for even edges and second for odd ones,
    // spread over the result so that they land in different chunks.
    let one = |i: usize, secs: f64| {
        let (s, d) = ((wl(i), app(i)), (wl(i + 1), app(i + 1)));
        series((&s.0, &s.1, "v1"), (&d.0, &d.1, "v1"), &d.1, secs)
    };
    let slow = |i: usize| 1.0 + i as f64;
    let fast = |i: usize| 0.5 + i as f64;
    let first: Vec<Series> =
        (0..n).map(|i| if i % 2 == 0 { one(i, slow(i)) } else { one(i, fast(i)) }).collect();
    let second: Vec<Series> =
        (0..n).map(|i| if i % 2 == 0 { one(i, fast(i)) } else { one(i, slow(i)) }).collect();
    let results = vec![QueryResult { series: first.into_iter().chain(second).collect() }];
    let data = AppenderData { results: results.into_iter().collect(), ..Default::default() };
    apply(&req, &data, &mut g);
    for (i, e) in g.edges.iter().enumerate() {
        assert_eq!(e.response_time.into_option(), Some(slow(i)), "edge {i}");
    }
}
