//! The whole pipeline on hand-built samples shaped like the bundled demo's traffic.

use plugin_api::abi_stable::std_types::RVec;
use plugin_api::{Label, QueryResult, Sample, Series};
use serde_json::Value;

use crate::*;

mod clusters;
mod output;
mod scope;

const NS: &str = "bookinfo";

#[allow(clippy::too_many_arguments)]
fn s(
    src: (&str, &str, &str, &str),
    dst: (&str, &str, &str, &str, &str),
    proto: &str,
    code: &str,
    grpc: Option<&str>,
    v: f64,
) -> Series {
    let mut l = vec![
        ("source_workload_namespace", src.0),
        ("source_workload", src.1),
        ("source_app", src.2),
        ("source_version", src.3),
        ("destination_service_namespace", dst.0),
        ("destination_workload_namespace", dst.0),
        ("destination_service_name", dst.1),
        ("destination_workload", dst.2),
        ("destination_app", dst.3),
        ("destination_version", dst.4),
    ];
    if proto != "tcp" {
        l.push(("request_protocol", proto));
        l.push(("response_code", code));
    }
    if let Some(g) = grpc {
        l.push(("grpc_response_status", g));
    }
    Series {
        labels: l.into_iter().map(|(n, v)| Label::new(n, v)).collect(),
        samples: vec![Sample { t: 100.0, v }].into_iter().collect(),
    }
}

const GW: (&str, &str, &str, &str) =
    ("istio-system", "istio-ingressgateway", "istio-ingressgateway", "unknown");
const PP: (&str, &str, &str, &str) = (NS, "productpage-v1", "productpage", "v1");
const R2: (&str, &str, &str, &str) = (NS, "reviews-v2", "reviews", "v2");
const R3: (&str, &str, &str, &str) = (NS, "reviews-v3", "reviews", "v3");
const RA: (&str, &str, &str, &str) = (NS, "ratings-v1", "ratings", "v1");

fn d<'a>(
    t: &'a (&'static str, String, String, String, String),
) -> (&'a str, &'a str, &'a str, &'a str, &'a str) {
    (t.0, t.1.as_str(), t.2.as_str(), t.3.as_str(), t.4.as_str())
}

fn to(svc: &str, wl: &str, app: &str, ver: &str) -> (&'static str, String, String, String, String) {
    (NS, svc.into(), wl.into(), app.into(), ver.into())
}

/// Results for the namespace plan of `bookinfo`, in plan order (3 request families, 3 TCP).
fn bookinfo_results() -> Vec<QueryResult> {
    let (pp, det, r1, r2, r3, ra, mongo, books) = (
        to("productpage", "productpage-v1", "productpage", "v1"),
        to("details", "details-v1", "details", "v1"),
        to("reviews", "reviews-v1", "reviews", "v1"),
        to("reviews", "reviews-v2", "reviews", "v2"),
        to("reviews", "reviews-v3", "reviews", "v3"),
        to("ratings", "ratings-v1", "ratings", "v1"),
        to("mongodb", "mongodb-v1", "mongodb", "v1"),
        to("api.books.example.com", "unknown", "unknown", "unknown"),
    );
    let r = |v: Vec<Series>| QueryResult { series: v.into_iter().collect::<RVec<_>>() };
    vec![
        r(vec![]),
        r(vec![s(GW, d(&pp), "http", "200", None, 9.5), s(GW, d(&pp), "http", "500", None, 0.5)]),
        r(vec![
            s(PP, d(&det), "http", "200", None, 9.0),
            s(PP, d(&det), "http", "404", None, 1.0),
            s(PP, d(&r1), "http", "200", None, 5.0),
            s(PP, d(&r2), "http", "200", None, 3.0),
            s(PP, d(&r3), "http", "200", None, 1.8),
            s(PP, d(&r3), "http", "503", None, 0.2),
            s(R2, d(&ra), "http", "200", None, 2.7),
            s(R2, d(&ra), "http", "503", None, 0.3),
            s(R3, d(&ra), "grpc", "200", Some("0"), 1.9),
            s(R3, d(&ra), "grpc", "200", Some("14"), 0.1),
            s(PP, d(&books), "http", "200", None, 1.0),
        ]),
        r(vec![]),
        r(vec![]),
        r(vec![s(RA, d(&mongo), "tcp", "", None, 2000.0)]),
    ]
}

fn options(q: &[(&str, &str)]) -> GraphOptions {
    GraphOptions::parse(
        GraphTarget::Namespaces,
        &meshlens_params::query::query_string(q),
        1_700_000_000,
        &[],
        &GraphSettings::default(),
    )
    .unwrap()
}

fn json(q: &[(&str, &str)]) -> Value {
    let mut all = vec![("namespaces", NS)];
    all.extend_from_slice(q);
    let o = options(&all);
    let plan = traffic_plan(&o);
    let mut results = bookinfo_results();
    assert_eq!(plan.len(), results.len());
    round_results(&mut results);
    let mut g = build_graph(&o, &plan, &results);
    finish(&o, &mut g, &|_| true);
    serde_json::from_slice(&GraphOutput::new(&o, &g).to_json()).unwrap()
}

fn node<'a>(v: &'a Value, id: &str) -> &'a Value {
    let hash = md5_hex(id);
    v["elements"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| &n["data"])
        .find(|d| d["id"] == hash.as_str())
        .unwrap_or_else(|| panic!("no node {id}"))
}

fn edge<'a>(v: &'a Value, src: &str, dst: &str) -> &'a Value {
    let (s, t) = (md5_hex(src), md5_hex(dst));
    v["elements"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["data"])
        .find(|d| d["source"] == s.as_str() && d["target"] == t.as_str())
        .unwrap_or_else(|| panic!("no edge {src} -> {dst}"))
}

#[test]
fn ids_are_md5_of_kiali_internal_ids() {
    assert_eq!(md5_hex("unknown_source"), "b30b0078325bf2e1adb4d57c4c0c2665");
    assert_eq!(md5_hex("wl_bookinfo_productpage-v1"), "240c2314cefc993c5d9479a5c349fbd2");
    assert_eq!(md5_hex("box_bookinfo_reviews"), "4dbce17737348d2e200a0b22fea3145b");
}

#[test]
fn workload_graph_rates_and_percentages() {
    let v = json(&[]);
    assert_eq!(
        (v["timestamp"].as_i64(), v["duration"].as_i64(), v["graphType"].as_str()),
        (Some(1_700_000_000), Some(600), Some("workload"))
    );
    assert_eq!(v["elements"]["nodes"].as_array().unwrap().len(), 9);
    assert_eq!(v["elements"]["edges"].as_array().unwrap().len(), 9);
    let pp = node(&v, "wl_bookinfo_productpage-v1");
    assert_eq!(pp["nodeType"], "workload");
    assert_eq!(pp["destServices"], serde_json::json!({"productpage": true}));
    assert_eq!(
        pp["traffic"],
        serde_json::json!([{"protocol": "http", "rates": {"httpIn": "10.00", "httpIn5xx": "0.50", "httpOut": "21.00"}}])
    );
    let gw = node(&v, "wl_istio-system_istio-ingressgateway");
    assert_eq!(
        (gw["isOutside"].as_bool(), gw["isRoot"].as_bool(), gw.get("version")),
        (Some(true), Some(true), None)
    );
    let details = edge(&v, "wl_bookinfo_productpage-v1", "wl_bookinfo_details-v1");
    assert_eq!(
        details["traffic"],
        serde_json::json!({"protocol": "http", "rates": {"http": "10.00", "http4xx": "1.00", "httpPercentErr": "10.0", "httpPercentReq": "47.6"}})
    );
    let grpc = edge(&v, "wl_bookinfo_reviews-v3", "wl_bookinfo_ratings-v1");
    assert_eq!(
        grpc["traffic"],
        serde_json::json!({"protocol": "grpc", "rates": {"grpc": "2.00", "grpcErr": "0.10", "grpcPercentErr": "5.0", "grpcPercentReq": "100.0"}})
    );
    let ratings = node(&v, "wl_bookinfo_ratings-v1");
    assert_eq!(
        ratings["traffic"],
        serde_json::json!([
            {"protocol": "grpc", "rates": {"grpcIn": "2.00", "grpcInErr": "0.10"}},
            {"protocol": "http", "rates": {"httpIn": "3.00", "httpIn5xx": "0.30"}},
            {"protocol": "tcp", "rates": {"tcpOut": "2000.00"}}
        ])
    );
    let tcp = edge(&v, "wl_bookinfo_ratings-v1", "wl_bookinfo_mongodb-v1");
    assert_eq!(tcp["traffic"], serde_json::json!({"protocol": "tcp", "rates": {"tcp": "2000.00"}}));
    let books = node(&v, "svc_bookinfo_api.books.example.com");
    assert_eq!(
        (books["nodeType"].as_str(), books["service"].as_str()),
        (Some("service"), Some("api.books.example.com"))
    );
    // Outgoing shares of a node add up to 100.
    let src = md5_hex("wl_bookinfo_productpage-v1");
    let sum: f64 = v["elements"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["data"]["source"] == src.as_str())
        .map(|e| {
            e["data"]["traffic"]["rates"]["httpPercentReq"]
                .as_str()
                .unwrap()
                .parse::<f64>()
                .unwrap()
        })
        .sum();
    assert!((sum - 100.0).abs() < 0.2, "{sum}");
}

#[test]
fn nodes_and_edges_are_sorted() {
    let v = json(&[("groupBy", "app"), ("graphType", "versionedApp")]);
    let nodes: Vec<&Value> =
        v["elements"]["nodes"].as_array().unwrap().iter().map(|n| &n["data"]).collect();
    let key = |d: &Value| {
        let f = |k: &str| d[k].as_str().unwrap_or("").to_string();
        (
            f("namespace"),
            d["isGroup"].is_null(),
            f("app"),
            f("version"),
            f("service"),
            f("workload"),
        )
    };
    assert!(nodes.windows(2).all(|w| key(w[0]) <= key(w[1])));
    let edges: Vec<(String, String)> = v["elements"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["data"]["source"].as_str().unwrap().to_string(),
                e["data"]["target"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(edges.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn versioned_app_graph_with_boxes() {
    let v = json(&[("graphType", "versionedApp"), ("groupBy", "app")]);
    let b = node(&v, "box_bookinfo_reviews");
    assert_eq!(
        (b["isGroup"].as_str(), b["nodeType"].as_str(), b["app"].as_str()),
        (Some("app"), Some("app"), Some("reviews"))
    );
    for w in ["reviews-v1", "reviews-v2", "reviews-v3"] {
        let n = node(&v, &format!("vapp_bookinfo_{w}"));
        assert_eq!(n["parent"], b["id"]);
        assert_eq!(n["nodeType"], "app");
    }
    // A single-member app gets no box.
    assert!(node(&v, "vapp_bookinfo_details-v1").get("parent").is_none());
    let v = json(&[("graphType", "versionedApp"), ("groupBy", "version")]);
    assert_eq!(node(&v, "box_bookinfo_reviews")["isGroup"], "version");
    let v = json(&[("graphType", "app"), ("groupBy", "app")]);
    let r = node(&v, "app_bookinfo_reviews");
    assert!(r.get("parent").is_none() && r.get("version").is_none() && r.get("workload").is_none());
}

#[test]
fn injected_service_nodes_carry_both_hops() {
    let v = json(&[("injectServiceNodes", "true")]);
    let svc = node(&v, "svc_bookinfo_reviews");
    assert_eq!(
        svc["traffic"],
        serde_json::json!([{"protocol": "http", "rates": {"httpIn": "10.00", "httpIn5xx": "0.20", "httpOut": "10.00"}}])
    );
    let hop = edge(&v, "wl_bookinfo_productpage-v1", "svc_bookinfo_reviews");
    assert_eq!(hop["traffic"]["rates"]["httpPercentReq"], "47.6");
    let hop2 = edge(&v, "svc_bookinfo_reviews", "wl_bookinfo_reviews-v1");
    assert_eq!(hop2["traffic"]["rates"]["httpPercentReq"], "50.0");
    // An external service is already a service node: no second hop.
    assert!(
        v["elements"]["nodes"].as_array().unwrap().len() == 14,
        "9 nodes plus 5 injected services"
    );
}

#[test]
fn service_graph_is_reduced_to_services_and_roots() {
    let v = json(&[("graphType", "service")]);
    let types: Vec<&str> = v["elements"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["data"]["nodeType"].as_str().unwrap())
        .collect();
    assert_eq!(types.iter().filter(|t| **t == "service").count(), 6, "{types:?}");
    assert_eq!(types.len(), 7, "plus the root gateway");
    let e = edge(&v, "svc_bookinfo_reviews", "svc_bookinfo_ratings");
    assert_eq!(e["traffic"]["protocol"], "grpc");
    let shares: Vec<f64> =
        ["svc_bookinfo_details", "svc_bookinfo_reviews", "svc_bookinfo_api.books.example.com"]
            .iter()
            .map(|t| {
                edge(&v, "svc_bookinfo_productpage", t)["traffic"]["rates"]["httpPercentReq"]
                    .as_str()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
    assert_eq!(shares, [47.6, 47.6, 4.8]);
    assert_eq!(
        edge(&v, "svc_bookinfo_productpage", "svc_bookinfo_reviews")["traffic"]["rates"]["http"],
        "10.00"
    );
    assert_eq!(v["elements"]["edges"].as_array().unwrap().len(), 7);
}

#[test]
fn misconfigured_labels_are_flagged_but_not_for_a_trimmed_unknown_version() {
    let o = options(&[("namespaces", NS)]);
    let plan = traffic_plan(&o);
    let a = ("bookinfo", "a-v1", "a", "unknown");
    let b = ("bookinfo", "b", "b-v1", "b", "unknown");
    let b2 = ("bookinfo", "b", "b-v1", "b2", "v9");
    let mut results = vec![QueryResult::default(); plan.len()];
    results[2].series = vec![s(a, b, "http", "200", None, 1.0), s(a, b, "http", "500", None, 1.0)]
        .into_iter()
        .collect();
    let g = build_graph(&o, &plan, &results);
    assert!(g.nodes.iter().all(|n| n.is_misconfigured.is_empty()));
    results[2].series.push(s(a, b2, "http", "200", None, 1.0));
    let g = build_graph(&o, &plan, &results);
    let n = g.nodes.iter().find(|n| n.workload.as_str() == "b-v1").unwrap();
    assert_eq!(n.is_misconfigured.as_str(), "labels=[app version]");
}

#[test]
fn samples_without_required_labels_are_skipped() {
    let o = options(&[("namespaces", NS)]);
    let plan = traffic_plan(&o);
    let mut results = vec![QueryResult::default(); plan.len()];
    let mut broken = s(PP, ("bookinfo", "x", "x-v1", "x", "v1"), "http", "200", None, 1.0);
    broken.labels.retain(|n, _| n != "response_code");
    results[2].series = vec![broken].into_iter().collect();
    assert!(build_graph(&o, &plan, &results).nodes.is_empty());
}

#[test]
fn dot_output_has_clusters_nodes_and_labelled_edges() {
    let o = options(&[("namespaces", NS), ("graphType", "versionedApp"), ("groupBy", "app")]);
    let plan = traffic_plan(&o);
    let mut g = build_graph(&o, &plan, &bookinfo_results());
    finish(&o, &mut g, &|_| true);
    let dot = GraphOutput::new(&o, &g).to_dot();
    assert!(dot.starts_with("digraph"));
    assert!(dot.contains(&format!("subgraph \"cluster_{}\"", md5_hex("box_bookinfo_reviews"))));
    assert!(dot.contains("label=\"reviews (bookinfo)\""));
    assert!(dot.contains("label=\"productpage v1\\nbookinfo\""));
    assert!(dot.contains("label=\"grpc 2.00\""));
    assert!(dot.contains("label=\"tcp 2000.00\""));
    assert_eq!(dot.matches(" -> ").count(), g.edges.len());
}

/// Ambient: a waypoint is a workload node in every graph type (its app is dropped), no
/// service is injected next to it, it is flagged, and a server-side ztunnel report counts
/// only when it comes from a waypoint.
#[test]
fn ambient_series_build_waypoint_workload_nodes_and_keep_only_waypoint_halves() {
    let mut a = AmbientWorkloads::default();
    a.add_workload(NS, "front-v1");
    a.add_workload(NS, "back-v1");
    a.add_app(NS, "front");
    a.add_app(NS, "back");
    a.add_waypoint(NS, "waypoint");
    let front = (NS, "front-v1", "front", "v1");
    let wp = (NS, "waypoint", "waypoint", "latest");
    let to_wp = to("back", "waypoint", "waypoint", "latest");
    let to_back = to("back", "back-v1", "back", "v1");
    for graph_type in ["app", "workload"] {
        let mut o = options(&[
            ("namespaces", NS),
            ("graphType", graph_type),
            ("injectServiceNodes", "true"),
        ]);
        o.ambient = std::sync::Arc::new(a.clone());
        let plan = traffic_plan(&o);
        let half = plan
            .iter()
            .position(|p| p.source == SourceFilter::Waypoint)
            .expect("a server-side half query");
        let wp_req = plan
            .iter()
            .position(|p| p.source == SourceFilter::NoProxy)
            .expect("a waypoint request query");
        let inside_tcp = 5;
        let mut results: Vec<QueryResult> = plan.iter().map(|_| QueryResult::default()).collect();
        let r = |v: Vec<Series>| QueryResult { series: v.into_iter().collect::<RVec<_>>() };
        results[wp_req] = r(vec![s(front, d(&to_back), "http", "200", None, 5.0)]);
        results[inside_tcp] = r(vec![s(front, d(&to_wp), "tcp", "", None, 2000.0)]);
        results[half] = r(vec![
            s(wp, d(&to_back), "tcp", "", None, 1800.0),
            // The same query also returns direct hops' server-side reports: not counted.
            s(front, d(&to_back), "tcp", "", None, 999.0),
        ]);
        let g = build_graph(&o, &plan, &results);
        let mut ids: Vec<&str> = g.nodes.iter().map(|n| n.id.as_str()).collect();
        ids.sort_unstable();
        let (f, b) = if graph_type == "app" {
            ("app_bookinfo_front", "app_bookinfo_back")
        } else {
            ("wl_bookinfo_front-v1", "wl_bookinfo_back-v1")
        };
        // The HTTP edge gets an injected service node; the hops next to the waypoint do not.
        let mut want = [f, "svc_bookinfo_back", b, "wl_bookinfo_waypoint"];
        want.sort_unstable();
        assert_eq!(ids, want, "{graph_type}");
        let mut edges: Vec<(&str, &str, &str, f64)> = g
            .edges
            .iter()
            .map(|e| {
                (
                    e.source.as_str(),
                    e.target.as_str(),
                    e.protocol.as_str(),
                    e.rates.http + e.rates.tcp,
                )
            })
            .collect();
        edges.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let mut want = [
            (f, "svc_bookinfo_back", "http", 5.0),
            ("svc_bookinfo_back", b, "http", 5.0),
            (f, "wl_bookinfo_waypoint", "tcp", 2000.0),
            ("wl_bookinfo_waypoint", b, "tcp", 1800.0),
        ];
        want.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        assert_eq!(edges, want, "{graph_type}");
        let flag = |id: &str, k: &str| {
            g.nodes.iter().find(|n| n.id.as_str() == id).is_some_and(|n| {
                n.extra
                    .iter()
                    .any(|x| x.key.as_str() == k && x.value == plugin_api::Value::Bool(true))
            })
        };
        assert!(
            flag("wl_bookinfo_waypoint", IS_WAYPOINT) && flag("wl_bookinfo_waypoint", IS_AMBIENT)
        );
        assert!(flag(f, IS_AMBIENT) && flag(b, IS_AMBIENT) && !flag(f, IS_WAYPOINT));
        assert!(!flag("svc_bookinfo_back", IS_AMBIENT));
    }
}
