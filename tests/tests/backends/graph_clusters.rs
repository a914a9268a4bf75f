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
//!
//! The rights tests read both clusters from loopback API servers with the `token` strategy:
//! each cluster's API server decides which of its nodes the caller sees in full, and
//! `clusterName` picks a node graph's node in one cluster.

// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::InProcess as Meshlens;
use integration_tests::kube_api::{KubeApi, Options, read_fixtures};
use integration_tests::kube_reviews::Reviews;
use integration_tests::prometheus::{Fixture, PromServer, from_openmetrics};
use integration_tests::server::{BUNDLED, Response, plugin_dir, workspace_root};
use meshlens_traffic::md5_hex;
use serde_json::{Value, json};
use std::sync::Arc;

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
    let demo = workspace_root().join("config").join("demo");
    start(
        "strategy = \"anonymous\"",
        &format!("[cluster]\nsource = \"snapshot\"\nsnapshot = [{demo:?}]\n"),
    )
}

/// meshlens with `auth` (the `[auth]` table's body) and `cluster` (its cluster tables), on a
/// real Prometheus holding the two-cluster traffic.
fn start(auth: &str, cluster: &str) -> Setup {
    let now = 1_700_000_000 / STEP * STEP;
    let fixture = from_openmetrics(&openmetrics(now - 1800, now), now - 1800, now);
    let prom = PromServer::start(&fixture);
    let plugins = plugin_dir(BUNDLED);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\n{auth}\n[plugins]\ndirs = [{:?}]\n{cluster}\
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

// Per-cluster rights (#32) with the `token` strategy: two loopback API servers, the home
// one (the demo's objects, named `Kubernetes` as the series say) and `west`, each reviewing
// the caller itself; the same Prometheus series.

const ALICE: &str = "alice-token";
const BOB: &str = "bob-token";
const CAROL: &str = "carol-token";
const ADMIN: &str = "admin-token";

struct Rights {
    s: Setup,
    /// The header the `header` strategy reads; `None`: `Authorization: Bearer` (`token`).
    header: Option<&'static str>,
    east_reviews: Arc<Reviews>,
    west_reviews: Arc<Reviews>,
    _east: KubeApi,
    _west: KubeApi,
    _dirs: Vec<tempfile::TempDir>,
}

/// A kubeconfig in `dir` pointing at `server`.
fn kubeconfig(dir: &std::path::Path, server: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\nusers:\n- name: u\n  user:\n    token: test-token\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n"
    );
    std::fs::write(&path, text).expect("kubeconfig written");
    path
}

/// The `header` strategy's header in these tests.
const HEADER: &str = "X-Auth-Request-Access-Token";

/// alice may see bookinfo at home only, bob in west only, carol nowhere (west does not know
/// her token); admin sees everything in both. `header`: the `header` strategy, else `token`.
async fn start_rights(header: bool) -> Rights {
    let auth = if header {
        format!("strategy = \"header\"\nheader_name = \"{HEADER}\"")
    } else {
        "strategy = \"token\"".to_string()
    };
    let (east_reviews, west_reviews) = (Reviews::new(), Reviews::new());
    east_reviews.user("alice", ALICE, &["bookinfo"]).user("bob", BOB, &[]);
    east_reviews.user("carol", CAROL, &[]).admin("admin", ADMIN);
    west_reviews.user("alice", ALICE, &[]).user("bob", BOB, &["bookinfo"]).admin("admin", ADMIN);
    let opts = |r: &Arc<Reviews>| Options { reviews: Some(r.clone()), ..Default::default() };
    let demo = vec![workspace_root().join("config").join("demo")];
    let east = KubeApi::start(read_fixtures(&demo), opts(&east_reviews)).await;
    let west_ns = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "bookinfo", "uid": "ns-bookinfo", "creationTimestamp": "2026-02-01T00:00:00Z"}});
    let west = KubeApi::start(vec![west_ns], opts(&west_reviews)).await;
    let (east_dir, west_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let east_kc = kubeconfig(east_dir.path(), &east.url());
    let west_kc = kubeconfig(west_dir.path(), &west.url());
    let s = tokio::task::spawn_blocking(move || {
        let cluster = format!(
            "[cluster]\nsource = \"kube\"\nkubeconfig = {east_kc:?}\nsync_timeout = \"20s\"\n\
             [[cluster.remotes]]\nname = \"west\"\nkubeconfig = {west_kc:?}\n"
        );
        start(&auth, &cluster)
    })
    .await
    .expect("started");
    let t = Rights {
        s,
        header: header.then_some(HEADER),
        east_reviews,
        west_reviews,
        _east: east,
        _west: west,
        _dirs: vec![east_dir, west_dir],
    };
    // West syncs on its own: bounded wait until its namespace is listed.
    let mut listed = false;
    for _ in 0..100 {
        let r = t.get("/api/namespaces", ADMIN).await;
        if r.status == 200 && r.text().contains("\"west\"") {
            listed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(listed, "west's namespaces never appeared");
    t
}

impl Rights {
    async fn get(&self, path: &str, token: &str) -> Response {
        let addr = self.s.m.addr.clone();
        let (name, value) = match self.header {
            Some(h) => (h, token.to_string()),
            None => ("Authorization", format!("Bearer {token}")),
        };
        let path = path.to_string();
        tokio::task::spawn_blocking(move || {
            integration_tests::server::request(&addr, "GET", &path, &[(name, &value)])
        })
        .await
        .expect("request")
    }

    /// A graph answer of `path` (with this fixture's time and duration) for `token`: 200.
    async fn graph(&self, path: &str, token: &str) -> Value {
        let sep = if path.contains('?') { '&' } else { '?' };
        let url = format!("{path}{sep}queryTime={}&duration=600s", self.s.now);
        let r = self.get(&url, token).await;
        assert_eq!(r.status, 200, "{url}: {}", r.text());
        r.json()
    }
}

/// Whether a node keeps only its names: inaccessible, without traffic or appenders' fields.
fn names_only(n: &Value) -> bool {
    n["isInaccessible"] == true && n.get("traffic").is_none() && n.get("healthData").is_none()
}

fn full(n: &Value) -> bool {
    n.get("isInaccessible").is_none() && n.get("traffic").is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_clusters_api_server_decides_which_of_its_nodes_the_caller_sees() {
    let t = start_rights(false).await;
    let ns_graph = "/api/namespaces/graph?namespaces=bookinfo";
    // alice sees bookinfo at home only: west's bookinfo nodes keep only their names; the
    // edges into them keep their rates (traffic of a namespace she sees).
    let v = t.graph(ns_graph, ALICE).await;
    for id in ["wl_bookinfo_productpage-v1", "wl_bookinfo_reviews-v1"] {
        assert!(full(node(&v, id)), "{id} in full for alice: {v}");
    }
    for id in ["wl_west_bookinfo_reviews-v1", "wl_west_bookinfo_ratings-v1"] {
        let n = node(&v, id);
        assert!(names_only(n), "{id} names only for alice: {n}");
        assert_eq!(
            (n["cluster"].as_str(), n["namespace"].as_str()),
            (Some(WEST), Some("bookinfo"))
        );
        assert!(n["workload"].is_string(), "the names stay: {n}");
    }
    let e = edge(&v, "wl_bookinfo_productpage-v1", "wl_west_bookinfo_reviews-v1");
    assert_eq!(e["traffic"]["rates"]["http"], "3.00", "{e}");

    // bob sees bookinfo in west only: the mirror image (a namespace visible in one cluster
    // is enough to ask for it). Same query as alice's: the graph cache must not answer him
    // with her graph.
    let v = t.graph(ns_graph, BOB).await;
    assert!(names_only(node(&v, "wl_bookinfo_productpage-v1")), "{v}");
    assert!(names_only(node(&v, "wl_bookinfo_reviews-v1")), "{v}");
    assert!(full(node(&v, "wl_west_bookinfo_reviews-v1")), "{v}");
    assert!(full(node(&v, "wl_west_bookinfo_ratings-v1")), "{v}");

    // admin sees both clusters in full.
    let v = t.graph(ns_graph, ADMIN).await;
    for id in
        ["wl_bookinfo_reviews-v1", "wl_west_bookinfo_reviews-v1", "wl_west_bookinfo_ratings-v1"]
    {
        assert!(full(node(&v, id)), "{id} in full for admin: {v}");
    }
    // And alice again, after admin: still names only in west.
    let v = t.graph(ns_graph, ALICE).await;
    assert!(names_only(node(&v, "wl_west_bookinfo_reviews-v1")), "{v}");

    // carol sees bookinfo in no cluster (west does not even know her): 403 as before.
    let r = t.get(&format!("{ns_graph}&queryTime={}", t.s.now), CAROL).await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.json()["code"], 403);

    // A remote whose reviews hang does not hold up the graph: dave (new, so nothing is
    // cached) gets it within 5 s, home's nodes in full, west's names only.
    t.east_reviews.user("dave", "dave-token", &["bookinfo"]);
    t.west_reviews.user("dave", "dave-token", &["bookinfo"]);
    t.west_reviews.set_delay(std::time::Duration::from_secs(8));
    let started = std::time::Instant::now();
    let v = t.graph(ns_graph, "dave-token").await;
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    assert!(full(node(&v, "wl_bookinfo_reviews-v1")), "{v}");
    assert!(names_only(node(&v, "wl_west_bookinfo_reviews-v1")), "{v}");
    t.west_reviews.set_delay(std::time::Duration::ZERO);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_name_selects_a_node_graphs_node_in_that_cluster() {
    let t = start_rights(false).await;
    let wl = "/api/namespaces/bookinfo/workloads/reviews-v1/graph";
    // West's reviews-v1: called by home's productpage (east → west), calls west's ratings.
    let v = t.graph(&format!("{wl}?clusterName=west"), ADMIN).await;
    let n = node(&v, "wl_west_bookinfo_reviews-v1");
    assert_eq!(n["cluster"], WEST, "{n}");
    let e = edge(&v, "wl_bookinfo_productpage-v1", "wl_west_bookinfo_reviews-v1");
    assert_eq!(e["traffic"]["rates"]["http"], "3.00", "{e}");
    let e = edge(&v, "wl_west_bookinfo_reviews-v1", "wl_west_bookinfo_ratings-v1");
    assert_eq!(e["traffic"]["rates"]["http"], "2.00", "{e}");
    // Home's reviews-v1 is another node, not in west's node graph.
    let home_id = md5_hex("wl_bookinfo_reviews-v1");
    assert!(nodes(&v).iter().all(|n| n["id"] != home_id.as_str()), "{v}");
    // clusterName naming the home cluster: home's node only.
    let v = t.graph(&format!("{wl}?clusterName={HOME}"), ADMIN).await;
    let e = edge(&v, "wl_bookinfo_productpage-v1", "wl_bookinfo_reviews-v1");
    assert_eq!(e["traffic"]["rates"]["http"], "5.00", "{e}");
    let west_id = md5_hex("wl_west_bookinfo_reviews-v1");
    assert!(nodes(&v).iter().all(|n| n["id"] != west_id.as_str()), "{v}");
    // Without clusterName: as before clusters, the name in every cluster.
    let v = t.graph(wl, ADMIN).await;
    node(&v, "wl_bookinfo_reviews-v1");
    node(&v, "wl_west_bookinfo_reviews-v1");

    // bob sees bookinfo in west only: west's node graph is his, home's nodes in it names
    // only (reviewed by the home API server though the route named west).
    let v = t.graph(&format!("{wl}?clusterName=west"), BOB).await;
    assert!(full(node(&v, "wl_west_bookinfo_reviews-v1")), "{v}");
    assert!(names_only(node(&v, "wl_bookinfo_productpage-v1")), "{v}");
    // alice may not see bookinfo in west: 403 for west's node graph, 200 for home's.
    let q = format!("{wl}?clusterName=west&queryTime={}", t.s.now);
    let r = t.get(&q, ALICE).await;
    assert_eq!(r.status, 403, "{}", r.text());
    let v = t.graph(wl, ALICE).await;
    assert!(full(node(&v, "wl_bookinfo_reviews-v1")), "{v}");
    assert!(names_only(node(&v, "wl_west_bookinfo_reviews-v1")), "{v}");
    // An unknown cluster: 404 naming it.
    let r = t.get(&format!("{wl}?clusterName=north"), ADMIN).await;
    assert_eq!(r.status, 404, "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_header_strategy_judges_graph_nodes_per_cluster_too() {
    let t = start_rights(true).await;
    let ns_graph = "/api/namespaces/graph?namespaces=bookinfo";
    let v = t.graph(ns_graph, ALICE).await;
    assert!(full(node(&v, "wl_bookinfo_reviews-v1")), "{v}");
    assert!(names_only(node(&v, "wl_west_bookinfo_reviews-v1")), "{v}");
    let v = t.graph(ns_graph, BOB).await;
    assert!(names_only(node(&v, "wl_bookinfo_reviews-v1")), "{v}");
    assert!(full(node(&v, "wl_west_bookinfo_reviews-v1")), "{v}");
    let v =
        t.graph("/api/namespaces/bookinfo/workloads/reviews-v1/graph?clusterName=west", BOB).await;
    assert_eq!(node(&v, "wl_west_bookinfo_reviews-v1")["cluster"], WEST);
    assert!(names_only(node(&v, "wl_bookinfo_productpage-v1")), "{v}");
}
