//! The graph across two clusters against a real Prometheus: series written here carry
//! `source_cluster` and `destination_cluster` (`Kubernetes`, the home cluster's default
//! name, and `west`); the home cluster's model is the demo snapshot. Through the real
//! service and the bundled appenders.
//!
//! The traffic (all bookinfo, HTTP 200, requests per second):
//! - istio-ingressgateway → productpage-v1: 8 (home);
//! - productpage-v1 → reviews-v1: 5 at home, 3 to west's reviews-v1 (east → west);
//! - west's reviews-v1 → west's ratings-v1: 2, reported without `destination_cluster`;
//! - productpage-v1 → details-v1: 1 at home, 1 to west's details-v1.

// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::InProcess as Meshlens;
use integration_tests::prometheus::{Fixture, PromServer, from_openmetrics};
use integration_tests::server::{BUNDLED, plugin_dir, workspace_root};
use meshlens_traffic::md5_hex;
use serde_json::Value;

const STEP: i64 = 15;
const HOME: &str = "Kubernetes";
const WEST: &str = "west";

/// A workload's identity in the telemetry: (cluster, workload, app).
type End = (&'static str, &'static str, &'static str);

/// One request series of `rate` per second from `src` to `dst` (both in bookinfo, except
/// the gateway), as the source proxy reports it; `dst_cluster: false` leaves the label out.
fn series(src: End, dst: End, dst_cluster: bool, rate: f64) -> (Vec<(String, String)>, f64) {
    let ns = |wl: &str| if wl.starts_with("istio-") { "istio-system" } else { "bookinfo" };
    let mut l: Vec<(&str, String)> = vec![
        ("reporter", "source".into()),
        ("source_cluster", src.0.into()),
        ("source_workload_namespace", ns(src.1).into()),
        ("source_workload", src.1.into()),
        ("source_app", src.2.into()),
        ("source_version", "v1".into()),
        ("destination_service_namespace", "bookinfo".into()),
        ("destination_service_name", dst.2.into()),
        ("destination_workload_namespace", "bookinfo".into()),
        ("destination_workload", dst.1.into()),
        ("destination_app", dst.2.into()),
        ("destination_version", "v1".into()),
        ("request_protocol", "http".into()),
        ("response_code", "200".into()),
        ("response_flags", "-".into()),
        ("connection_security_policy", "unknown".into()),
    ];
    if dst_cluster {
        l.push(("destination_cluster", dst.0.into()));
    }
    (l.into_iter().map(|(k, v)| (k.to_string(), v)).collect(), rate)
}

fn all_series() -> Vec<(Vec<(String, String)>, f64)> {
    let gw = (HOME, "istio-ingressgateway", "istio-ingressgateway");
    let pp = (HOME, "productpage-v1", "productpage");
    vec![
        series(gw, pp, true, 8.0),
        series(pp, (HOME, "reviews-v1", "reviews"), true, 5.0),
        series(pp, (WEST, "reviews-v1", "reviews"), true, 3.0),
        series((WEST, "reviews-v1", "reviews"), (WEST, "ratings-v1", "ratings"), false, 2.0),
        series(pp, (HOME, "details-v1", "details"), true, 1.0),
        series(pp, (WEST, "details-v1", "details"), true, 1.0),
    ]
}

/// OpenMetrics text of [`all_series`] from `start` to `end` on a 15 s grid.
fn openmetrics(start: i64, end: i64) -> String {
    let mut out = String::from("# TYPE istio_requests counter\n");
    for (labels, rate) in all_series() {
        let l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        let head = format!("istio_requests_total{{{}}}", l.join(","));
        let mut t = start;
        while t <= end {
            out.push_str(&format!("{head} {} {t}\n", 1000.0 + rate * (t - start) as f64));
            t += STEP;
        }
    }
    out.push_str("# EOF\n");
    out
}

struct Setup {
    m: Meshlens,
    _prom: PromServer,
    _fixture: Fixture,
    now: i64,
}

fn setup() -> Setup {
    let now = 1_700_000_000 / STEP * STEP;
    let fixture = from_openmetrics(&openmetrics(now - 1800, now), now - 1800, now);
    let prom = PromServer::start(&fixture);
    let plugins = plugin_dir(BUNDLED);
    let demo = workspace_root().join("config").join("demo");
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [{demo:?}]\n\
         [metrics]\nbackend = \"prometheus\"\n[metrics.prometheus]\nurl = {:?}\n",
        plugins.path().display().to_string(),
        prom.url()
    );
    let m = Meshlens::start(&cfg, &[], vec![plugins])
        .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"));
    Setup { m, _prom: prom, _fixture: fixture, now }
}

impl Setup {
    fn graph(&self, params: &str) -> Value {
        let url = format!(
            "/api/namespaces/graph?namespaces=bookinfo&queryTime={}&duration=600s{params}",
            self.now
        );
        let r = self.m.get(&url);
        assert_eq!(r.status, 200, "{url}: {}", r.text());
        r.json()
    }
}

fn nodes(v: &Value) -> Vec<&Value> {
    v["elements"]["nodes"].as_array().expect("nodes").iter().map(|n| &n["data"]).collect()
}

fn node<'a>(v: &'a Value, internal: &str) -> &'a Value {
    let id = md5_hex(internal);
    nodes(v)
        .into_iter()
        .find(|n| n["id"] == id.as_str())
        .unwrap_or_else(|| panic!("no node {internal} in {v}"))
}

fn edge<'a>(v: &'a Value, src: &str, dst: &str) -> &'a Value {
    let (s, t) = (md5_hex(src), md5_hex(dst));
    v["elements"]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| &e["data"])
        .find(|e| e["source"] == s.as_str() && e["target"] == t.as_str())
        .unwrap_or_else(|| panic!("no edge {src} -> {dst} in {v}"))
}

#[test]
fn nodes_carry_their_cluster_and_a_call_east_to_west_is_one_edge() {
    let s = setup();
    let v = s.graph("");
    assert!(nodes(&v).iter().all(|n| n["cluster"].is_string()), "every node has cluster: {v}");
    // The same workload name in two clusters: two nodes.
    let home = node(&v, "wl_bookinfo_reviews-v1");
    let west = node(&v, "wl_west_bookinfo_reviews-v1");
    assert_ne!(home["id"], west["id"]);
    assert_eq!((home["cluster"].as_str(), west["cluster"].as_str()), (Some(HOME), Some(WEST)));
    assert_eq!(west["workload"], "reviews-v1");
    assert_eq!(node(&v, "wl_bookinfo_productpage-v1")["cluster"], HOME);
    // East → west: one edge with the measured rate, beside the home one.
    let e = edge(&v, "wl_bookinfo_productpage-v1", "wl_west_bookinfo_reviews-v1");
    assert_eq!(e["traffic"]["rates"]["http"], "3.00", "{e}");
    let e = edge(&v, "wl_bookinfo_productpage-v1", "wl_bookinfo_reviews-v1");
    assert_eq!(e["traffic"]["rates"]["http"], "5.00", "{e}");
    // Reported without destination_cluster: in the source's cluster.
    assert_eq!(node(&v, "wl_west_bookinfo_ratings-v1")["cluster"], WEST);
    let e = edge(&v, "wl_west_bookinfo_reviews-v1", "wl_west_bookinfo_ratings-v1");
    assert_eq!(e["traffic"]["rates"]["http"], "2.00", "{e}");
    // Appenders look objects up in the node's own cluster: the snapshot (home) has
    // details-v1 without a sidecar; west's details-v1 is not that workload.
    assert_eq!(node(&v, "wl_bookinfo_details-v1")["hasMissingSC"], true);
    assert!(node(&v, "wl_west_bookinfo_details-v1").get("hasMissingSC").is_none(), "{v}");
    // Unused workloads of the snapshot are home nodes.
    let unused: Vec<&Value> = nodes(&v).into_iter().filter(|n| n["isUnused"] == true).collect();
    assert!(!unused.is_empty() && unused.iter().all(|n| n["cluster"] == HOME), "{v}");
}

#[test]
fn box_by_cluster_boxes_both_clusters_and_bad_values_are_400() {
    let s = setup();
    let v = s.graph("&boxBy=cluster");
    let boxes: Vec<&Value> = nodes(&v).into_iter().filter(|n| n["nodeType"] == "box").collect();
    assert_eq!(boxes.len(), 2, "{v}");
    for b in &boxes {
        assert_eq!(b["isBox"], "cluster", "{b}");
    }
    let box_id = |c: &str| {
        boxes.iter().find(|b| b["cluster"] == c).unwrap_or_else(|| panic!("no {c} box"))["id"]
            .clone()
    };
    for (id, cluster) in [
        ("wl_bookinfo_productpage-v1", HOME),
        ("wl_bookinfo_reviews-v1", HOME),
        ("wl_istio-system_istio-ingressgateway", HOME),
        ("wl_west_bookinfo_reviews-v1", WEST),
        ("wl_west_bookinfo_ratings-v1", WEST),
    ] {
        assert_eq!(node(&v, id)["parent"], box_id(cluster), "{id}");
    }
    // Without boxBy: no boxes, the same ids.
    let plain = s.graph("");
    assert!(nodes(&plain).iter().all(|n| n["nodeType"] != "box" && n.get("parent").is_none()));
    // Namespace boxes: bookinfo in each cluster, inside its cluster's box.
    let v = s.graph("&boxBy=namespace,cluster");
    let ns_box = node_by_parent_of(&v, "wl_west_bookinfo_reviews-v1");
    assert_eq!(
        (ns_box["isBox"].as_str(), ns_box["namespace"].as_str(), ns_box["cluster"].as_str()),
        (Some("namespace"), Some("bookinfo"), Some(WEST))
    );
    for bad in ["version", "cluster,workload"] {
        let r = s.m.get(&format!("/api/namespaces/graph?namespaces=bookinfo&boxBy={bad}"));
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
        let body = r.json();
        assert_eq!(body["code"], 400);
        let msg = body["message"].as_str().unwrap_or_default();
        assert!(msg.contains("boxBy") && msg.contains("cluster, namespace"), "{msg}");
    }
}

/// The box a node is in.
fn node_by_parent_of<'a>(v: &'a Value, internal: &str) -> &'a Value {
    let parent = node(v, internal)["parent"].clone();
    nodes(v).into_iter().find(|n| n["id"] == parent).unwrap_or_else(|| panic!("{internal}: no box"))
}
