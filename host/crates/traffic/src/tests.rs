//! The whole pipeline on hand-built samples shaped like the bundled demo's traffic.

use std::collections::HashMap;

use plugin_api::abi_stable::std_types::RVec;
use plugin_api::{Label, QueryResult, Sample, Series};
use serde_json::Value;

use crate::*;

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
    let m: HashMap<String, String> =
        q.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    GraphOptions::parse(
        GraphTarget::Namespaces,
        |k| m.get(k).cloned(),
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
    broken.labels.retain(|l| l.name.as_str() != "response_code");
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

/// The direct JSON writer and serde_json over the `Serialize` impls agree byte for byte, on
/// every graph type and grouping, with open fields and names that need escaping.
#[test]
fn json_writer_matches_serde_byte_for_byte() {
    use plugin_api::Value as V;
    for gt in ["app", "versionedApp", "workload", "service"] {
        for (group, inject) in [("app", "true"), ("version", "false"), ("none", "true")] {
            let o = options(&[
                ("namespaces", NS),
                ("graphType", gt),
                ("groupBy", group),
                ("injectServiceNodes", inject),
            ]);
            let plan = traffic_plan(&o);
            let mut results = bookinfo_results();
            round_results(&mut results);
            let mut g = build_graph(&o, &plan, &results);
            finish(&o, &mut g, &|_| true);
            let odd = "q\"uote\\ back\nline\ttab\u{1}\u{1f}\u{7f} é 名";
            if let Some(n) = g.nodes.iter_mut().next() {
                n.is_misconfigured = odd.into();
                n.set_field("k\"ey\n", V::Text(odd.into()));
                n.set_field("nan", V::Number(f64::NAN));
                n.set_field("big", V::Number(1e21));
                n.set_field("tenth", V::Number(0.1));
                n.set_field("no", V::Bool(false));
                n.set_field("id", V::Text("reserved, ignored".into()));
                n.dest_services.push(odd.into());
            }
            for (i, e) in g.edges.iter_mut().enumerate() {
                e.response_time = plugin_api::abi_stable::std_types::ROption::RSome(i as f64 * 2.5);
                e.set_field("mark", V::Bool(i % 2 == 0));
            }
            let out = GraphOutput::new(&o, &g);
            let direct = String::from_utf8(out.to_json()).unwrap();
            let serde = String::from_utf8(serde_json::to_vec_pretty(&out).unwrap()).unwrap();
            assert_eq!(direct, serde, "graphType={gt} groupBy={group}");
            assert!(
                direct.contains("\\u0001") && direct.contains("\\\"uote"),
                "escapes were exercised"
            );
        }
    }
    let o = options(&[("namespaces", NS)]);
    let empty = plugin_api::Graph::default();
    let out = GraphOutput::new(&o, &empty);
    assert_eq!(out.to_json(), serde_json::to_vec_pretty(&out).unwrap());
}

/// A graph big enough that ids and JSON are made on several threads: every id still belongs
/// to its own element, in order, and the JSON is still serde's.
#[test]
fn a_graph_split_across_threads_keeps_ids_order_and_bytes() {
    let (namespaces, workloads) = (100, 60);
    let mut series = RVec::new();
    for n in 0..namespaces {
        let ns = format!("ns-{n}");
        for w in 0..workloads {
            let (src, dst) = ((w + 1) % workloads, w);
            let (sw, dw, sa, da) =
                (format!("w{src}-v1"), format!("w{dst}-v1"), format!("w{src}"), format!("w{dst}"));
            series.push(s(
                (&ns, &sw, &sa, "v1"),
                (&ns, &da, &dw, &da, "v1"),
                "http",
                "200",
                None,
                1.0 + w as f64,
            ));
        }
    }
    let o = options(&[
        ("namespaces", "ns-0"),
        ("graphType", "workload"),
        ("injectServiceNodes", "false"),
    ]);
    let mut g = requests_graph(&o, series);
    // Series were resolved on several threads: each edge still carries its own series' rate.
    assert_eq!(g.edges.len(), namespaces * workloads);
    for e in g.edges.iter() {
        let w: f64 = e
            .target
            .as_str()
            .rsplit("_w")
            .next()
            .and_then(|t| t.strip_suffix("-v1"))
            .and_then(|t| t.parse().ok())
            .unwrap();
        assert_eq!(e.rates.http, 1.0 + w, "{}", e.target);
    }
    finish(&o, &mut g, &|_| true);
    let out = GraphOutput::new(&o, &g);
    assert!(
        out.nodes.len() >= 6000 && out.edges.len() >= 6000,
        "{} nodes, {} edges",
        out.nodes.len(),
        out.edges.len()
    );
    for n in &out.nodes {
        let node = n.node.expect("no boxes in a workload graph");
        assert_eq!(n.id.as_str(), md5_hex(node.id.as_str()));
    }
    for e in &out.edges {
        assert_eq!(e.source.as_str(), md5_hex(e.edge.source.as_str()));
        assert_eq!(e.target.as_str(), md5_hex(e.edge.target.as_str()));
        assert_eq!(
            e.id.as_str(),
            md5_hex(&format!("{}.{}.{}", e.source, e.target, e.edge.protocol))
        );
    }
    for w in out.edges.windows(2) {
        assert!(
            (&w[0].source, &w[0].target, &w[0].id) < (&w[1].source, &w[1].target, &w[1].id),
            "edges sorted by source, target, id"
        );
    }
    assert_eq!(out.to_json(), serde_json::to_vec_pretty(&out).unwrap());
}

/// Two protocols between the same ends: two edges, ordered by their own ids.
#[test]
fn edges_with_the_same_ends_are_ordered_by_id() {
    let src = ("bookinfo", "productpage-v1", "productpage", "v1");
    let dst = ("bookinfo", "reviews", "reviews-v1", "reviews", "v1");
    let series: RVec<Series> =
        ["http", "grpc"].iter().map(|p| s(src, dst, p, "200", None, 1.0)).collect();
    let o = options(&[
        ("namespaces", "bookinfo"),
        ("graphType", "workload"),
        ("injectServiceNodes", "false"),
    ]);
    let mut g = requests_graph(&o, series);
    finish(&o, &mut g, &|_| true);
    let out = GraphOutput::new(&o, &g);
    let got: Vec<(String, &str)> =
        out.edges.iter().map(|e| (e.id.to_string(), e.edge.protocol.as_str())).collect();
    let mut want: Vec<(String, &str)> = ["grpc", "http"]
        .iter()
        .map(|p| {
            (
                md5_hex(&format!(
                    "{}.{}.{p}",
                    md5_hex("wl_bookinfo_productpage-v1"),
                    md5_hex("wl_bookinfo_reviews-v1")
                )),
                *p,
            )
        })
        .collect();
    want.sort();
    assert_eq!(got, want);
}

/// Names that share their first 8 bytes (or are prefixes of each other) still sort as
/// strings: the integer pre-sort must hand such ties to the full comparison.
#[test]
fn nodes_sort_by_whole_names_past_a_shared_prefix() {
    let namespaces = ["team-alpha-prod", "team-alpha", "team-alpha-prod-2", "team-alph"];
    let apps =
        ["reviews-service-b", "reviews-service", "reviews-service-a", "reviews", "reviews\u{0}x"];
    let mut series = RVec::new();
    for ns in namespaces {
        for (i, app) in apps.iter().enumerate() {
            let callee = apps[(i + 1) % apps.len()];
            for ver in ["v10", "v1", "v1-canary"] {
                let (sw, dw) = (format!("{app}-{ver}"), format!("{callee}-{ver}"));
                series.push(s(
                    (ns, &sw, app, ver),
                    (ns, callee, &dw, callee, ver),
                    "http",
                    "200",
                    None,
                    1.0,
                ));
            }
        }
    }
    let o =
        options(&[("namespaces", "team-alpha"), ("graphType", "versionedApp"), ("groupBy", "app")]);
    let mut g = requests_graph(&o, series);
    finish(&o, &mut g, &|_| true);
    let v: Value = serde_json::from_slice(&GraphOutput::new(&o, &g).to_json()).unwrap();
    let nodes: Vec<&Value> =
        v["elements"]["nodes"].as_array().unwrap().iter().map(|n| &n["data"]).collect();
    assert!(
        nodes.len() > 60 && nodes.iter().any(|d| d["isGroup"] == "app"),
        "{} nodes",
        nodes.len()
    );
    let key = |d: &Value| {
        let f = |k: &str| d[k].as_str().unwrap_or("").to_string();
        (
            f("namespace"),
            d["isGroup"].is_null(),
            f("app"),
            f("version"),
            f("service"),
            f("workload"),
            f("id"),
        )
    };
    let keys: Vec<_> = nodes.iter().map(|d| key(d)).collect();
    let mut want = keys.clone();
    want.sort();
    assert_eq!(keys, want);
}

/// A destination reached through two services lists each once; a later series that
/// disagrees on the version only flags it, and without traffic does not relabel the node.
#[test]
fn dest_services_are_listed_once_and_a_zero_rate_disagreement_only_flags() {
    let a = ("bookinfo", "a-v1", "a", "v1");
    let to = |svc, ver| ("bookinfo", svc, "b-v1", "b", ver);
    let o = options(&[
        ("namespaces", "bookinfo"),
        ("graphType", "workload"),
        ("injectServiceNodes", "false"),
    ]);
    let g = requests_graph(
        &o,
        vec![
            s(a, to("b", "v1"), "http", "200", None, 1.0),
            s(a, to("b2", "v1"), "http", "200", None, 1.0),
            s(a, to("b", "v1"), "http", "500", None, 1.0),
            s(a, to("b", "v2"), "http", "200", None, 0.0),
        ]
        .into_iter()
        .collect(),
    );
    let b = g.nodes.iter().find(|n| n.workload.as_str() == "b-v1").unwrap();
    let dests: Vec<&str> = b.dest_services.iter().map(|d| d.as_str()).collect();
    assert_eq!(dests, ["b", "b2"]);
    assert_eq!(b.is_misconfigured.as_str(), "labels=[version]");
    assert_eq!(b.version.as_str(), "v1", "a series without traffic does not relabel");
    assert_eq!(b.rates.http_in, 3.0);
    assert_eq!(b.rates.http_in_5xx, 1.0);
    assert_eq!(g.edges.len(), 1, "one edge per (source, destination, protocol)");
    assert_eq!(g.edges[0].rates.http, 3.0);
}

/// The graph of `series` as the results of the HTTP/gRPC requests query.
fn requests_graph(o: &GraphOptions, series: RVec<Series>) -> plugin_api::Graph {
    let plan = traffic_plan(o);
    let mut results = vec![QueryResult::default(); plan.len()];
    results[2].series = series;
    build_graph(o, &plan, &results)
}
