//! The five graph operations against a real Prometheus loaded with the demo mesh's traffic
//! (metrics_simulation::fixture + promtool), through the real binary and the bundled plugins.
//!
//! Expected numbers are computed here from the generator's own record of what it emitted
//! (`--expected` JSON), with the counting rule of the spec: the source proxy's report, plus
//! the destination's where the caller has no proxy.

use std::collections::{BTreeMap, HashMap};

use integration_tests::prometheus::{Fixture, PromServer, fixture};
// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::InProcess as Meshlens;
use integration_tests::server::{BUNDLED, plugin_dir, workspace_root};
use meshlens_traffic::md5_hex;
use serde_json::Value;

const ARGS: &[&str] = &["--end", "1700000000", "--minutes", "30"];

struct Setup {
    m: Meshlens,
    _prom: PromServer,
    f: std::sync::Arc<Fixture>,
}

fn config(prom: &PromServer, plugins: &std::path::Path, extra: &str) -> String {
    let demo = workspace_root().join("config").join("demo");
    format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{plugins:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [{demo:?}]\n\
         [metrics]\nbackend = \"prometheus\"\n[metrics.prometheus]\nurl = {:?}\n{extra}",
        prom.url()
    )
}

fn setup() -> Setup {
    let f = fixture(ARGS);
    let prom = PromServer::start(&f);
    let dir = plugin_dir(BUNDLED);
    let cfg = config(&prom, dir.path(), "");
    let m = Meshlens::start(&cfg, &[], vec![dir])
        .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"));
    Setup { m, _prom: prom, f }
}

impl Setup {
    fn graph(&self, path: &str, params: &str) -> Value {
        let sep = if path.contains('?') { '&' } else { '?' };
        let url = format!("{path}{sep}queryTime={}&duration=600s{params}", self.f.end());
        let r = self.m.get(&url);
        assert_eq!(r.status, 200, "{url}: {}", r.text());
        r.json()
    }
}

/// One edge of the generator's record, reduced to what the graph shows.
#[derive(Debug, Default, Clone)]
struct Want {
    src: Option<(String, String)>, // (namespace, workload)
    dst_ns: String,
    dst_wl: Option<String>,
    service: String,
    protocol: String,
    total: f64,
    errors: f64,
    mtls: bool,
    p95_ms: Option<f64>,
}

fn counted(series: &Value, src_known: bool) -> bool {
    series["reporter"] == "source" || (!src_known && series["reporter"] == "destination")
}

/// Istio's buckets in milliseconds: current (`_milliseconds`) and older (`_seconds`, x1000).
const MS_BUCKETS: &[f64] =
    &[0.5, 1.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0];
const S_BUCKETS_MS: &[f64] =
    &[5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0];

/// Prometheus' histogram_quantile over `buckets` (ms) for an exponential distribution with
/// `mean` ms (how the generator fills the buckets).
fn quantile_ms(q: f64, mean: f64, buckets: &[f64]) -> f64 {
    let cdf = |le: f64| 1.0 - (-le / mean).exp();
    let mut lower = 0.0;
    for &le in buckets {
        if cdf(le) >= q {
            let (a, b) = (cdf(lower), cdf(le));
            return lower + (le - lower) * (q - a) / (b - a);
        }
        lower = le;
    }
    lower
}

fn wants(f: &Fixture) -> Vec<Want> {
    let seconds = f.expected["duration_metric"].as_str().is_some_and(|m| m.ends_with("_seconds"));
    let (buckets, to_ms) = if seconds { (S_BUCKETS_MS, 1000.0) } else { (MS_BUCKETS, 1.0) };
    let mut out = Vec::new();
    for e in f.expected["edges"].as_array().expect("edges") {
        let src = e["source"].as_object().map(|s| {
            (
                s["namespace"].as_str().unwrap().to_string(),
                s["workload"].as_str().unwrap().to_string(),
            )
        });
        let d = &e["destination"];
        let mut w = Want {
            dst_ns: d["service_namespace"].as_str().unwrap().to_string(),
            dst_wl: d["workload"].as_str().map(str::to_string),
            service: d["service_name"].as_str().unwrap().to_string(),
            protocol: e["protocol"].as_str().unwrap().to_string(),
            mtls: e["mtls"].as_bool().unwrap(),
            src: src.clone(),
            ..Default::default()
        };
        for s in e["series"].as_array().unwrap().iter().filter(|s| counted(s, src.is_some())) {
            if w.protocol == "tcp" {
                w.total += s["sent_bytes"].as_f64().unwrap();
                continue;
            }
            let rate = s["rate"].as_f64().unwrap();
            w.total += rate;
            let code = s["response_code"].as_str().unwrap_or("");
            let err = match s["grpc_response_status"].as_str() {
                Some(g) => g != "0",
                None => code.starts_with('4') || code.starts_with('5'),
            };
            if err {
                w.errors += rate;
            } else if code.starts_with('2') && w.p95_ms.is_none() {
                w.p95_ms =
                    s["duration_mean"].as_f64().map(|m| quantile_ms(0.95, m * to_ms, buckets));
            }
        }
        out.push(w);
    }
    out
}

fn src_id(w: &Want) -> String {
    match &w.src {
        None => "unknown_source".into(),
        Some((ns, wl)) => format!("wl_{ns}_{wl}"),
    }
}

fn dst_id(w: &Want) -> String {
    match &w.dst_wl {
        Some(wl) => format!("wl_{}_{wl}", w.dst_ns),
        None => format!("svc_{}_{}", w.dst_ns, w.service),
    }
}

fn nodes(v: &Value) -> Vec<&Value> {
    v["elements"]["nodes"].as_array().expect("nodes").iter().map(|n| &n["data"]).collect()
}

fn edges(v: &Value) -> Vec<&Value> {
    v["elements"]["edges"].as_array().expect("edges").iter().map(|e| &e["data"]).collect()
}

fn node<'a>(v: &'a Value, internal: &str) -> &'a Value {
    let id = md5_hex(internal);
    nodes(v)
        .into_iter()
        .find(|n| n["id"] == id.as_str())
        .unwrap_or_else(|| panic!("no node {internal} in {v}"))
}

fn edge<'a>(v: &'a Value, src: &str, dst: &str) -> Option<&'a Value> {
    let (s, t) = (md5_hex(src), md5_hex(dst));
    edges(v).into_iter().find(|e| e["source"] == s.as_str() && e["target"] == t.as_str())
}

fn rate(e: &Value, key: &str) -> f64 {
    e["traffic"]["rates"][key]
        .as_str()
        .unwrap_or_else(|| panic!("no {key} in {e}"))
        .parse()
        .unwrap()
}

#[test]
fn workload_graph_of_bookinfo_matches_the_generated_traffic() {
    let s = setup();
    let v = s.graph("/api/namespaces/graph?namespaces=bookinfo", "");
    assert_eq!(
        (v["graphType"].as_str(), v["duration"].as_i64(), v["timestamp"].as_i64()),
        (Some("workload"), Some(600), Some(s.f.end()))
    );
    let all = wants(&s.f);
    let mine: Vec<&Want> = all
        .iter()
        .filter(|w| {
            w.dst_ns == "bookinfo" || w.src.as_ref().is_some_and(|(ns, _)| ns == "bookinfo")
        })
        .collect();
    assert_eq!(mine.len(), 9);
    // Out totals per source and protocol, for the request shares.
    let mut out: HashMap<(String, String), f64> = HashMap::new();
    for w in &mine {
        *out.entry((src_id(w), w.protocol.clone())).or_default() += w.total;
    }
    for w in &mine {
        let e = edge(&v, &src_id(w), &dst_id(w)).unwrap_or_else(|| panic!("missing edge {w:?}"));
        let t = &e["traffic"];
        assert_eq!(t["protocol"].as_str(), Some(w.protocol.as_str()), "{e}");
        let p = w.protocol.as_str();
        assert!((rate(e, p) - w.total).abs() < 0.006, "{p} rate of {w:?}: {e}");
        if p != "tcp" {
            let share = w.total / out[&(src_id(w), w.protocol.clone())] * 100.0;
            assert!((rate(e, &format!("{p}PercentReq")) - share).abs() < 0.051, "{e}");
            if w.errors > 0.0 {
                assert!(
                    (rate(e, &format!("{p}PercentErr")) - w.errors / w.total * 100.0).abs() < 0.051,
                    "{e}"
                );
            } else {
                assert!(t["rates"].get(format!("{p}PercentErr")).is_none(), "{e}");
            }
            assert_eq!(e["isMTLS"].as_bool().unwrap_or(false), w.mtls, "isMTLS of {e}");
            let rt: f64 = e["responseTime"].as_str().expect("responseTime").parse().unwrap();
            if let Some(p95) = w.p95_ms {
                assert!((rt - p95).abs() <= 1.0, "responseTime {rt} vs {p95} for {e}");
            }
        }
    }
    // Appender flags and markers.
    let gw = node(&v, "wl_istio-system_istio-ingressgateway");
    assert_eq!((gw["isOutside"].as_bool(), gw["isRoot"].as_bool()), (Some(true), Some(true)));
    assert_eq!(node(&v, "wl_bookinfo_details-v1")["hasMissingSC"], true);
    assert!(node(&v, "wl_bookinfo_productpage-v1").get("hasMissingSC").is_none());
    let books = node(&v, "svc_bookinfo_api.books.example.com");
    assert_eq!(
        (books["isServiceEntry"].as_str(), books["isInaccessible"].as_bool()),
        (Some("MESH_EXTERNAL"), Some(true))
    );
    assert_eq!(
        node(&v, "wl_bookinfo_ratings-v1")["hasCB"],
        true,
        "DestinationRule ratings has a circuit breaker"
    );
    assert!(node(&v, "wl_bookinfo_reviews-v1").get("hasCB").is_none());
    let unused = node(&v, "wl_bookinfo_notifications-v1");
    assert_eq!(unused["isUnused"], true);
    assert!(unused.get("traffic").is_none());
    assert_eq!(
        node(&v, "wl_bookinfo_ratings-v1")["traffic"].as_array().map(Vec::len),
        Some(3),
        "grpc, http and tcp"
    );
    // Sorted as the spec says.
    let es: Vec<(String, String)> = edges(&v)
        .iter()
        .map(|e| (e["source"].as_str().unwrap().into(), e["target"].as_str().unwrap().into()))
        .collect();
    assert!(es.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn graph_types_injection_and_boxes() {
    let s = setup();
    let base = "/api/namespaces/graph?namespaces=bookinfo";
    // versionedApp with app boxes: the three reviews versions share a box.
    let v = s.graph(base, "&graphType=versionedApp&groupBy=app");
    let b = node(&v, "box_bookinfo_reviews");
    assert_eq!((b["isGroup"].as_str(), b["nodeType"].as_str()), (Some("app"), Some("app")));
    for r in ["reviews-v1", "reviews-v2", "reviews-v3"] {
        let n = node(&v, &format!("vapp_bookinfo_{r}"));
        assert_eq!((n["parent"].as_str(), n["nodeType"].as_str()), (b["id"].as_str(), Some("app")));
    }
    let v = s.graph(base, "&graphType=versionedApp&groupBy=version");
    assert_eq!(node(&v, "box_bookinfo_reviews")["isGroup"], "version");
    // app graph: one reviews node fed by productpage with the sum of the three versions.
    let v = s.graph(base, "&graphType=app");
    let e = edge(&v, "app_bookinfo_productpage", "app_bookinfo_reviews")
        .expect("productpage → reviews");
    assert!((rate(e, "http") - 10.0).abs() < 0.006, "{e}");
    assert!(nodes(&v).iter().all(|n| n.get("isGroup").is_none()), "no boxes without groupBy");
    // injected service nodes: productpage → reviews service → each version.
    let v = s.graph(base, "&injectServiceNodes=true");
    let hop = edge(&v, "wl_bookinfo_productpage-v1", "svc_bookinfo_reviews").expect("first hop");
    assert!((rate(hop, "http") - 10.0).abs() < 0.006);
    for (r, share) in [("reviews-v1", 50.0), ("reviews-v2", 30.0), ("reviews-v3", 20.0)] {
        let e = edge(&v, "svc_bookinfo_reviews", &format!("wl_bookinfo_{r}")).expect("second hop");
        assert!((rate(e, "httpPercentReq") - share).abs() < 0.051, "{e}");
        assert_eq!(e["isMTLS"], true);
    }
    let svc = node(&v, "svc_bookinfo_ratings");
    assert_eq!((svc["hasCB"].as_bool(), svc["hasVS"].as_bool()), (Some(true), Some(true)));
    // service graph: only service nodes and the root gateway; shares of a node add up.
    let v = s.graph(base, "&graphType=service");
    assert_eq!(v["graphType"], "service");
    for n in nodes(&v) {
        assert!(n["nodeType"] == "service" || n["isRoot"] == true, "{n}");
    }
    let e = edge(&v, "svc_bookinfo_productpage", "svc_bookinfo_reviews").expect("service edge");
    assert!((rate(e, "http") - 10.0).abs() < 0.006, "{e}");
    let pp = md5_hex("svc_bookinfo_productpage");
    let sum: f64 = edges(&v)
        .iter()
        .filter(|e| e["source"] == pp.as_str())
        .map(|e| rate(e, "httpPercentReq"))
        .sum();
    assert!((sum - 100.0).abs() < 0.2, "{sum}");
}

#[test]
fn node_graphs_for_each_operation() {
    let s = setup();
    let v = s.graph("/api/namespaces/bookinfo/workloads/productpage-v1/graph", "");
    let ids: Vec<String> =
        nodes(&v).iter().map(|n| n["id"].as_str().unwrap().to_string()).collect();
    for n in [
        "wl_istio-system_istio-ingressgateway",
        "wl_bookinfo_productpage-v1",
        "wl_bookinfo_details-v1",
        "wl_bookinfo_reviews-v3",
        "svc_bookinfo_api.books.example.com",
    ] {
        assert!(ids.contains(&md5_hex(n)), "{n} in {v}");
    }
    assert!(!ids.contains(&md5_hex("wl_bookinfo_ratings-v1")), "two hops away");
    assert!(
        !ids.contains(&md5_hex("wl_bookinfo_notifications-v1")),
        "no unused nodes in node graphs"
    );
    let e = edge(&v, "wl_istio-system_istio-ingressgateway", "wl_bookinfo_productpage-v1")
        .expect("inbound");
    assert!((rate(e, "http") - 10.0).abs() < 0.006);

    let v = s.graph("/api/namespaces/bookinfo/applications/reviews/graph", "");
    assert_eq!(v["graphType"], "app");
    let e =
        edge(&v, "app_bookinfo_reviews", "app_bookinfo_ratings").expect("reviews → ratings (http)");
    assert!(e["traffic"]["protocol"] == "http" || e["traffic"]["protocol"] == "grpc");
    assert!(edge(&v, "app_bookinfo_productpage", "app_bookinfo_reviews").is_some());

    let v = s.graph("/api/namespaces/bookinfo/applications/reviews/versions/v2/graph", "");
    assert_eq!(v["graphType"], "versionedApp");
    let e = edge(&v, "vapp_bookinfo_productpage-v1", "vapp_bookinfo_reviews-v2").expect("inbound");
    assert!((rate(e, "http") - 3.0).abs() < 0.006);
    assert!(edge(&v, "vapp_bookinfo_reviews-v2", "vapp_bookinfo_ratings-v1").is_some());
    assert!(edge(&v, "vapp_bookinfo_productpage-v1", "vapp_bookinfo_reviews-v1").is_none());

    let v = s.graph("/api/namespaces/bookinfo/services/ratings/graph", "");
    let e2 =
        edge(&v, "wl_bookinfo_reviews-v2", "wl_bookinfo_ratings-v1").expect("http into ratings");
    let e3 =
        edge(&v, "wl_bookinfo_reviews-v3", "wl_bookinfo_ratings-v1").expect("grpc into ratings");
    assert_eq!(
        (e2["traffic"]["protocol"].as_str(), e3["traffic"]["protocol"].as_str()),
        (Some("http"), Some("grpc"))
    );
    assert!(
        edge(&v, "wl_bookinfo_ratings-v1", "wl_bookinfo_mongodb-v1").is_none(),
        "a service graph has no outbound"
    );
    let v = s.graph("/api/namespaces/bookinfo/services/ratings/graph", "&graphType=service");
    assert!(edge(&v, "wl_bookinfo_reviews-v2", "svc_bookinfo_ratings").is_some());

    // A gateway seen from its own namespace: the caller outside the mesh is the root.
    let v = s.graph("/api/namespaces/graph?namespaces=istio-system", "");
    let u = node(&v, "unknown_source");
    assert_eq!(
        (u["nodeType"].as_str(), u["isRoot"].as_bool(), u["isInaccessible"].as_bool()),
        (Some("unknown"), Some(true), Some(true))
    );
    assert_eq!(node(&v, "wl_bookinfo_productpage-v1")["isOutside"], true);
}

#[test]
fn two_namespaces_in_one_graph_keep_every_rate() {
    let s = setup();
    let v = s.graph("/api/namespaces/graph?namespaces=bookinfo,istio-system", "");
    let pp = node(&v, "wl_bookinfo_productpage-v1");
    assert!(pp.get("isOutside").is_none());
    let http = pp["traffic"].as_array().unwrap().iter().find(|t| t["protocol"] == "http").unwrap();
    assert_eq!(http["rates"]["httpIn"], "10.00");
    assert_eq!(
        node(&v, "wl_istio-system_istio-ingressgateway")["traffic"][0]["rates"]["httpIn"],
        "10.00"
    );
    assert!(edge(&v, "unknown_source", "wl_istio-system_istio-ingressgateway").is_some());
}

#[test]
fn appenders_parameter_and_dot_format() {
    let s = setup();
    let base = "/api/namespaces/graph?namespaces=bookinfo";
    let none = s.graph(base, "&appenders=");
    assert!(
        edges(&none).iter().all(|e| e.get("responseTime").is_none() && e.get("isMTLS").is_none())
    );
    assert!(
        nodes(&none).iter().all(|n| n.get("isUnused").is_none() && n.get("hasMissingSC").is_none())
    );
    let only = s.graph(base, "&appenders=sidecarsCheck");
    assert_eq!(node(&only, "wl_bookinfo_details-v1")["hasMissingSC"], true);
    assert!(edges(&only).iter().all(|e| e.get("responseTime").is_none()));

    let r = s.m.get(&format!("{base}&queryTime={}&format=dot", s.f.end()));
    assert_eq!(r.status, 200);
    let dot = r.text();
    assert!(dot.starts_with("digraph"), "{dot}");
    assert!(dot.contains("productpage-v1\\nbookinfo"), "{dot}");
    let json = s.graph(base, "");
    assert_eq!(dot.matches(" -> ").count(), edges(&json).len());
}

fn assert_400(s: &Setup, path: &str, names: &[&str]) {
    let r = s.m.get(path);
    assert_eq!(r.status, 400, "{path}: {}", r.text());
    let body = r.json();
    assert_eq!(body["code"], 400);
    let msg = body["message"].as_str().unwrap_or_default();
    for n in names {
        assert!(msg.contains(n), "{path}: {msg} should name {n}");
    }
}

#[test]
fn every_bad_parameter_is_a_400_naming_it() {
    let s = setup();
    let g = "/api/namespaces/graph?namespaces=bookinfo";
    assert_400(&s, "/api/namespaces/graph", &["namespaces"]);
    assert_400(&s, "/api/namespaces/graph?namespaces=", &["namespaces"]);
    assert_400(&s, "/api/namespaces/graph?namespaces=bookinfo,nope", &["namespace"]);
    assert_400(&s, &format!("{g}&graphType=x"), &["graphType", "versionedApp"]);
    assert_400(&s, &format!("{g}&groupBy=x"), &["groupBy", "version"]);
    assert_400(&s, &format!("{g}&includeMesh=maybe"), &["includeMesh"]);
    assert_400(&s, &format!("{g}&injectServiceNodes=2"), &["injectServiceNodes"]);
    assert_400(&s, &format!("{g}&duration=ten"), &["duration"]);
    assert_400(&s, &format!("{g}&queryTime=soon"), &["queryTime"]);
    assert_400(
        &s,
        &format!("{g}&appenders=deadNode,bogus"),
        &["appenders", "deadNode", "mesh", "sidecarsCheck", "unusedNode"],
    );
    assert_400(&s, &format!("{g}&responseTimeQuantile=1.5"), &["responseTimeQuantile"]);
    assert_400(&s, &format!("{g}&format=svg"), &["format", "dot"]);
    assert_400(
        &s,
        "/api/namespaces/bookinfo/applications/reviews/graph?graphType=workload",
        &["graphType", "versionedApp"],
    );
    assert_400(
        &s,
        "/api/namespaces/bookinfo/applications/reviews/versions/v1/graph?graphType=service",
        &["graphType"],
    );
    assert_400(&s, "/api/namespaces/nope/workloads/w/graph", &["namespace"]);
    assert_400(&s, "/namespaces/nope/services/s/graph", &["namespace"]);
}

#[test]
fn twenty_concurrent_graph_requests_all_answer_correctly() {
    let s = setup();
    let end = s.f.end();
    let paths: Vec<String> = [
        "/api/namespaces/graph?namespaces=bookinfo",
        "/api/namespaces/graph?namespaces=bookinfo&graphType=app",
        "/api/namespaces/graph?namespaces=bookinfo&graphType=service",
        "/api/namespaces/graph?namespaces=bookinfo,istio-system&graphType=versionedApp&groupBy=app",
        "/api/namespaces/bookinfo/workloads/reviews-v2/graph?injectServiceNodes=true",
    ]
    .iter()
    .map(|p| format!("{p}&queryTime={end}"))
    .collect();
    let sequential: BTreeMap<&String, Vec<u8>> =
        paths.iter().map(|p| (p, s.m.get(p).body)).collect();
    let answers: Vec<(String, u16, Vec<u8>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..20)
            .map(|i| {
                let p = paths[i % paths.len()].clone();
                let m = &s.m;
                scope.spawn(move || {
                    let r = m.get(&p);
                    (p, r.status, r.body)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("request thread")).collect()
    });
    for (p, status, body) in answers {
        assert_eq!(status, 200, "{p}");
        let (got, want) =
            (String::from_utf8_lossy(&body), String::from_utf8_lossy(&sequential[&p]));
        if got != want {
            let first = got.lines().zip(want.lines()).enumerate().find(|(_, (a, b))| a != b);
            panic!(
                "{p} answered differently under load; first difference (line, got, sequential): {first:?}"
            );
        }
    }
}

#[test]
fn older_seconds_histograms_are_detected_and_give_milliseconds() {
    let f = fixture(&["--end", "1700000000", "--minutes", "12", "--duration-unit", "s"]);
    assert_eq!(f.expected["duration_metric"], "istio_request_duration_seconds");
    let prom = PromServer::start(&f);
    let dir = plugin_dir(BUNDLED);
    let cfg = config(&prom, dir.path(), "");
    let m = Meshlens::start(&cfg, &[], vec![dir])
        .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"));
    let s = Setup { m, _prom: prom, f };
    let v = s.graph("/api/namespaces/graph?namespaces=bookinfo", "");
    let mut checked = 0;
    for w in wants(&s.f)
        .iter()
        .filter(|w| w.src.as_ref().is_some_and(|(ns, _)| ns == "bookinfo") && w.p95_ms.is_some())
    {
        let e = edge(&v, &src_id(w), &dst_id(w)).expect("edge");
        let rt: f64 = e["responseTime"].as_str().expect("responseTime").parse().unwrap();
        let want = w.p95_ms.unwrap_or_default();
        assert!(
            (rt - want).abs() <= 1.0,
            "responseTime {rt} vs {want} ms from the seconds histogram: {e}"
        );
        checked += 1;
    }
    assert!(checked >= 5, "{checked}");
}
