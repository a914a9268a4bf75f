//! One instance, two clusters (#32): two loopback API servers, `east` (home) and `west` (a
//! `[[cluster.remotes]]`), both with a `bookinfo` namespace, west also with `payments`.
//! The namespace list names each entry's cluster; `clusterName` makes every namespace-scoped
//! operation read that cluster (unknown: 404); with the `token` strategy each cluster's own
//! API server reviews the caller; a remote that is down at start-up is left out (503, a
//! `/api/status` warning) while the home cluster answers as before and `/ready` stays 200.
//!
//! A remote that was up and goes away (a silent partition) leaves the list and answers 503
//! with a status warning within 30 s while the home cluster's lists, health and graph answer
//! as before and on time; once its server is back it returns on its own within 30 s.

// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::InProcess as Meshlens;
use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::Arc,
    time::{Duration, Instant},
};

use integration_tests::{
    kube_api::{KubeApi, Options, read_fixtures},
    kube_reviews::Reviews,
    poll::within,
    server::{Response, binary, workspace_root},
};
use serde_json::{Value, json};

const ALICE: &str = "alice-token";
const BOB: &str = "bob-token";
const CAROL: &str = "carol-token";
const ADMIN: &str = "admin-token";

fn meta(ns: &str, name: &str, labels: &Value) -> Value {
    json!({"name": name, "namespace": ns, "uid": format!("{ns}-{name}"),
           "creationTimestamp": "2026-01-01T00:00:00Z", "labels": labels})
}

/// A Deployment, its ReplicaSet and one running Pod with a sidecar: workload `{app}-{version}`.
fn workload(ns: &str, app: &str, version: &str) -> Vec<Value> {
    let labels = json!({"app": app, "version": version});
    let name = format!("{app}-{version}");
    let rs = format!("{name}-5d");
    let owner = |kind: &str, n: &str| json!([{"apiVersion": "apps/v1", "kind": kind, "name": n, "uid": format!("{ns}-{n}"), "controller": true}]);
    let template = json!({"metadata": {"labels": labels},
        "spec": {"containers": [{"name": app, "image": format!("example/{app}:{version}")}]}});
    let mut rs_meta = meta(ns, &rs, &labels);
    rs_meta["ownerReferences"] = owner("Deployment", &name);
    let mut pod_meta = meta(ns, &format!("{rs}-x1"), &labels);
    pod_meta["ownerReferences"] = owner("ReplicaSet", &rs);
    pod_meta["annotations"] = json!({"sidecar.istio.io/status": "{\"version\":\"t\"}"});
    vec![
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(ns, &name, &labels),
               "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template},
               "status": {"replicas": 1, "availableReplicas": 1, "readyReplicas": 1}}),
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": rs_meta,
               "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template},
               "status": {"replicas": 1, "availableReplicas": 1}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
               "spec": {"containers": [{"name": app, "image": format!("example/{app}:{version}")},
                                       {"name": "istio-proxy", "image": "istio/proxyv2:1.20.0"}]},
               "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                          "podIP": "10.8.0.1"}}),
    ]
}

/// West: `bookinfo` with reviews-v3 only and a VirtualService `reviews` that routes to
/// `ratings`, a host east has and west does not; `payments` with billing-v1.
fn west_objects() -> Vec<Value> {
    let ns = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": name, "uid": format!("ns-{name}"), "creationTimestamp": "2026-02-01T00:00:00Z"}})
    };
    let mut out = vec![ns("bookinfo"), ns("payments")];
    out.extend(workload("bookinfo", "reviews", "v3"));
    out.extend(workload("payments", "billing", "v1"));
    out.push(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": meta("bookinfo", "reviews", &json!({"app": "reviews"})),
        "spec": {"selector": {"app": "reviews"}, "ports": [{"name": "http", "port": 9080}], "clusterIP": "10.97.0.1"}}));
    out.push(json!({"apiVersion": "networking.istio.io/v1beta1", "kind": "VirtualService",
        "metadata": meta("bookinfo", "reviews", &json!({})),
        "spec": {"hosts": ["reviews"], "http": [{"route": [{"destination": {"host": "ratings"}}]}]}}));
    out
}

fn demo() -> Vec<PathBuf> {
    vec![workspace_root().join("config").join("demo")]
}

struct Two {
    m: Meshlens,
    _east: KubeApi,
    _west: Option<KubeApi>,
    east_reviews: Arc<Reviews>,
    west_reviews: Arc<Reviews>,
}

/// A kubeconfig in `dir` pointing at `server`.
fn kubeconfig(dir: &Path, server: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\nusers:\n- name: u\n  user:\n    token: test-token\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// East (the demo) and west; `west_up = false` points west's kubeconfig at a closed port and
/// names it `south` (the self-metrics are per process: no other test's `west` to race with).
/// alice may see bookinfo in east only, bob bookinfo in west only; carol is known to east
/// only (west's TokenReview refuses her token); admin sees everything in both.
async fn start(auth: &str, west_up: bool) -> Two {
    start_with(auth, west_up, tempfile::tempdir().unwrap(), "").await
}

/// [`start`] with the plugins in `plugins` and more configuration after the cluster tables.
async fn start_with(auth: &str, west_up: bool, plugins: tempfile::TempDir, extra: &str) -> Two {
    let (east_reviews, west_reviews) = (Reviews::new(), Reviews::new());
    east_reviews.user("alice", ALICE, &["bookinfo"]).user("bob", BOB, &[]).user(
        "carol",
        CAROL,
        &["bookinfo"],
    );
    east_reviews.admin("admin", ADMIN);
    west_reviews.user("alice", ALICE, &[]).user("bob", BOB, &["bookinfo"]).admin("admin", ADMIN);
    let opts = |r: &Arc<Reviews>| Options { reviews: Some(r.clone()), ..Default::default() };
    let east = KubeApi::start(read_fixtures(&demo()), opts(&east_reviews)).await;
    let west = if west_up {
        Some(KubeApi::start(west_objects(), opts(&west_reviews)).await)
    } else {
        None
    };
    let west_url = match &west {
        Some(w) => w.url(),
        None => {
            // A port nothing listens on (bound, then closed).
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}", l.local_addr().unwrap())
        }
    };
    let (east_dir, west_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let east_kc = kubeconfig(east_dir.path(), &east.url());
    let west_kc = kubeconfig(west_dir.path(), &west_url);
    let cfg = format!(
        "[server]\naddress = \"127.0.0.1\"\nport = 0\n[auth]\n{auth}\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nname = \"east\"\nsource = \"kube\"\nkubeconfig = {east_kc:?}\nsync_timeout = \"20s\"\n\
         [[cluster.remotes]]\nname = \"{remote}\"\nkubeconfig = {west_kc:?}\n{extra}\n",
        plugins.path(),
        remote = if west_up { "west" } else { "south" },
    );
    let m = tokio::task::spawn_blocking(move || {
        Meshlens::start(&cfg, &[], vec![plugins, east_dir, west_dir])
            .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"))
    })
    .await
    .unwrap();
    let two = Two { m, _east: east, _west: west, east_reviews, west_reviews };
    if west_up {
        // West syncs on its own; bounded wait until its namespaces are listed.
        let mut listed = false;
        for _ in 0..100 {
            let r = two.get("/api/namespaces", Some(ADMIN)).await;
            if r.status == 200 && clusters_of(&r.json()).iter().any(|(_, c)| c == "west") {
                listed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(listed, "west's namespaces never appeared");
    }
    two
}

impl Two {
    async fn get(&self, path: &str, token: Option<&str>) -> Response {
        let addr = self.m.addr.clone();
        let path = path.to_string();
        let auth = token.map(|t| format!("Bearer {t}"));
        tokio::task::spawn_blocking(move || {
            let h: Vec<(&str, &str)> =
                auth.as_deref().map(|a| vec![("Authorization", a)]).unwrap_or_default();
            integration_tests::server::request(&addr, "GET", &path, &h)
        })
        .await
        .unwrap()
    }
}

/// `(name, cluster)` of every namespace entry, in order.
fn clusters_of(list: &Value) -> Vec<(String, String)> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|n| {
            (n["name"].as_str().unwrap().to_string(), n["cluster"].as_str().unwrap().to_string())
        })
        .collect()
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

fn names(list: &Value, key: &str) -> Vec<String> {
    let mut out: Vec<String> = list[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {list}"))
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

/// Every namespace-scoped operation this part of #32 answers from the model, on `ns`.
fn model_operations(ns: &str) -> Vec<String> {
    [
        format!("/api/namespaces/{ns}/apps"),
        format!("/api/namespaces/{ns}/apps/reviews"),
        format!("/api/namespaces/{ns}/workloads"),
        format!("/api/namespaces/{ns}/workloads/reviews-v3"),
        format!("/api/namespaces/{ns}/services"),
        format!("/api/namespaces/{ns}/mesh"),
        format!("/api/namespaces/{ns}/mesh_validations"),
        format!("/api/namespaces/{ns}/mesh/virtualservices/reviews/mesh_validations"),
        format!("/api/namespaces/{ns}/services/reviews/mesh_validations"),
    ]
    .into()
}

fn with_cluster(path: &str, cluster: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}clusterName={cluster}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_cluster_is_listed_and_cluster_name_picks_the_one_read() {
    let t = start("strategy = \"anonymous\"", true).await;
    let list = t.get("/api/namespaces", None).await;
    assert_eq!(list.status, 200, "{}", list.text());
    assert_eq!(
        clusters_of(&list.json()),
        pairs(&[
            ("bookinfo", "east"),
            ("istio-system", "east"),
            ("bookinfo", "west"),
            ("payments", "west"),
        ])
    );
    // West's own creation time, not east's: two entries for one name.
    let west_bookinfo = &list.json()[3];
    assert_eq!(west_bookinfo["creationTimestamp"], "2026-02-01T00:00:00Z", "{west_bookinfo}");

    // Every operation: the named cluster's objects; home by default and by its own name.
    let get = |p: String| {
        let t = &t;
        async move {
            let r = t.get(&p, None).await;
            (r.status, if r.status == 200 { r.json() } else { Value::Null }, p)
        }
    };
    let (s, west, _) = get("/api/namespaces/bookinfo/apps?clusterName=west".into()).await;
    assert_eq!(s, 200);
    assert_eq!(names(&west, "applications"), ["reviews"]);
    let (_, east, _) = get("/api/namespaces/bookinfo/apps".into()).await;
    assert!(names(&east, "applications").len() > 1, "{east}");
    let (_, east_named, _) = get("/api/namespaces/bookinfo/apps?clusterName=east".into()).await;
    assert_eq!(east, east_named);
    // List items name their cluster, as Kiali v2's do.
    assert_eq!(west["applications"][0]["cluster"], "west", "{west}");
    assert!(east["applications"].as_array().unwrap().iter().all(|a| a["cluster"] == "east"));

    let (_, app, _) = get("/api/namespaces/bookinfo/apps/reviews?clusterName=west".into()).await;
    let wl_names: Vec<&str> = app["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["workloadName"].as_str())
        .collect();
    assert_eq!(wl_names, ["reviews-v3"], "{app}");
    let (_, app_east, _) = get("/api/namespaces/bookinfo/apps/reviews".into()).await;
    assert_eq!(app_east["workloads"].as_array().map(Vec::len), Some(3), "{app_east}");

    let (_, wls, _) = get("/api/namespaces/bookinfo/workloads?clusterName=west".into()).await;
    assert_eq!(names(&wls, "workloads"), ["reviews-v3"]);
    assert_eq!(wls["workloads"][0]["cluster"], "west", "{wls}");
    let (s, wl, _) =
        get("/api/namespaces/payments/workloads/billing-v1?clusterName=west".into()).await;
    assert_eq!((s, wl["name"].as_str()), (200, Some("billing-v1")));
    // payments is west's only: the home cluster does not have it.
    assert_eq!(t.get("/api/namespaces/payments/workloads", None).await.status, 404);
    assert_eq!(
        t.get("/api/namespaces/bookinfo/workloads/productpage-v1?clusterName=west", None)
            .await
            .status,
        404
    );
    let (_, svcs, _) = get("/api/namespaces/bookinfo/services?clusterName=west".into()).await;
    assert_eq!(names(&svcs, "services"), ["reviews"]);
    assert_eq!(svcs["services"][0]["cluster"], "west", "{svcs}");

    let (_, mesh, _) = get("/api/namespaces/bookinfo/mesh?clusterName=west".into()).await;
    let vs: Vec<&str> = mesh["virtualServices"]
        .as_array()
        .unwrap_or_else(|| panic!("{mesh}"))
        .iter()
        .filter_map(|v| v["metadata"]["name"].as_str())
        .collect();
    assert_eq!(vs, ["reviews"], "{mesh}");
    assert_eq!(mesh["destinationRules"], json!([]), "east's DestinationRules are not west's");

    // Validations resolve hosts in the object's own cluster: west's `reviews` routes to
    // `ratings`, which only east has; east's `reviews` (the demo's) is valid.
    let vs_path = "/api/namespaces/bookinfo/mesh/virtualservices/reviews/mesh_validations";
    let (_, v_west, _) = get(with_cluster(vs_path, "west")).await;
    let v_west = &v_west["virtualservice"]["reviews"];
    assert_eq!(v_west["valid"], false, "{v_west}");
    assert!(
        v_west["checks"].as_array().is_some_and(|c| c
            .iter()
            .any(|c| c["path"].as_str().is_some_and(|p| p.contains("route")))),
        "{v_west}"
    );
    let (_, v_east, _) = get(vs_path.into()).await;
    assert_eq!(v_east["virtualservice"]["reviews"]["valid"], true, "{v_east}");
    let (_, ns_west, _) =
        get("/api/namespaces/bookinfo/mesh_validations?clusterName=west".into()).await;
    assert_eq!(ns_west["bookinfo"]["virtualservice"]["reviews"]["valid"], false, "{ns_west}");
    let (s, svc_west, _) =
        get("/api/namespaces/bookinfo/services/reviews/mesh_validations?clusterName=west".into())
            .await;
    assert_eq!(s, 200);
    assert_eq!(svc_west["virtualservice"]["reviews"]["valid"], false, "{svc_west}");
    // ratings is a service of east only.
    assert_eq!(
        t.get("/api/namespaces/bookinfo/services/ratings/mesh_validations", None).await.status,
        200
    );
    assert_eq!(
        t.get("/api/namespaces/bookinfo/services/ratings/mesh_validations?clusterName=west", None)
            .await
            .status,
        404
    );

    // An unknown cluster: 404 {code, message} naming it, on every operation.
    for p in model_operations("bookinfo") {
        let r = t.get(&with_cluster(&p, "nope"), None).await;
        assert_eq!(r.status, 404, "{p}: {}", r.text());
        let body = r.json();
        assert_eq!(body["code"], 404, "{p}: {body}");
        assert!(body["message"].as_str().is_some_and(|m| m.contains("\"nope\"")), "{p}: {body}");
    }
    let metrics = t.get("/metrics", None).await.text();
    assert!(metrics.contains("meshlens_cluster_available{cluster=\"west\"} 1"), "{metrics}");
    // And every one answers for west.
    for p in model_operations("bookinfo") {
        let r = t.get(&with_cluster(&p, "west"), None).await;
        assert_eq!(r.status, 200, "{p}: {}", r.text());
    }
}

fn assert_forbidden(r: &Response, what: &str) {
    assert_eq!(r.status, 403, "{what}: {}", r.text());
    assert_eq!(r.json()["code"], 403, "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_cluster_reviews_the_caller_with_the_token_strategy() {
    let t = start("strategy = \"token\"", true).await;
    let apps = "/api/namespaces/bookinfo/apps";
    let apps_west = "/api/namespaces/bookinfo/apps?clusterName=west";

    // alice: bookinfo in east only.
    assert_eq!(t.get(apps, Some(ALICE)).await.status, 200);
    assert_forbidden(&t.get(apps_west, Some(ALICE)).await, "alice in west");
    let r = t.get("/api/namespaces", Some(ALICE)).await;
    assert_eq!(clusters_of(&r.json()), pairs(&[("bookinfo", "east")]));

    // bob: bookinfo in west only.
    assert_forbidden(&t.get(apps, Some(BOB)).await, "bob in east");
    let r = t.get(apps_west, Some(BOB)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(names(&r.json(), "applications"), ["reviews"]);
    let r = t.get("/api/namespaces", Some(BOB)).await;
    assert_eq!(clusters_of(&r.json()), pairs(&[("bookinfo", "west")]));

    // A session token from /token stands for bob's Kubernetes token in west as well: west
    // reviews the token it holds, not the session token.
    let r = t.get("/api/token", Some(BOB)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let session = r.json()["token"].as_str().unwrap().to_string();
    assert_eq!(t.get(apps_west, Some(&session)).await.status, 200);
    assert_forbidden(&t.get(apps, Some(&session)).await, "bob's session in east");
    assert!(
        t.west_reviews.token_review_specs()[..].iter().all(|s| s["token"] != session.as_str()),
        "the session token itself went to west"
    );

    // carol: west's API server does not know her token.
    assert_eq!(t.get(apps, Some(CAROL)).await.status, 200);
    let r = t.get(apps_west, Some(CAROL)).await;
    assert_forbidden(&r, "carol in west");
    assert!(r.json()["message"].as_str().is_some_and(|m| m.contains("west")), "{}", r.text());
    let r = t.get("/api/namespaces", Some(CAROL)).await;
    assert_eq!(clusters_of(&r.json()), pairs(&[("bookinfo", "east")]));
    // West was asked about carol's token itself, and said no.
    let west_tokens: Vec<Value> = t.west_reviews.token_review_specs();
    assert!(west_tokens.iter().any(|s| s["token"] == CAROL), "{west_tokens:?}");

    // admin: everything in both.
    let r = t.get("/api/namespaces", Some(ADMIN)).await;
    assert_eq!(r.json().as_array().map(Vec::len), Some(4), "{}", r.text());

    // Every operation follows west's decision for west, east's for east.
    for p in model_operations("bookinfo") {
        assert_forbidden(&t.get(&with_cluster(&p, "west"), Some(ALICE)).await, &p);
        assert_eq!(t.get(&with_cluster(&p, "west"), Some(BOB)).await.status, 200, "{p}");
    }
    // The home cluster's reviews never went to west for east's namespaces, and west's
    // SubjectAccessReviews asked about west's users.
    assert!(t.east_reviews.access_reviews() > 0 && t.west_reviews.access_reviews() > 0);
    // A remote whose reviews hang does not hold up the home cluster's namespaces: dave (new,
    // so nothing is cached) gets east's within 2 s, without west's.
    t.east_reviews.user("dave", "dave-token", &["bookinfo"]);
    t.west_reviews.user("dave", "dave-token", &["bookinfo"]);
    t.west_reviews.set_delay(Duration::from_secs(5));
    let started = Instant::now();
    let r = t.get("/api/namespaces", Some("dave-token")).await;
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    assert_eq!(clusters_of(&r.json()), pairs(&[("bookinfo", "east")]));
    t.west_reviews.set_delay(Duration::ZERO);

    // An unauthenticated caller is still 401 before any cluster is looked at.
    assert_eq!(t.get(apps_west, None).await.status, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_down_at_start_is_left_out_and_home_answers_as_before() {
    let t = start("strategy = \"anonymous\"", false).await;
    // Home is ready (its caches only), within the bounded wait.
    let mut ready = 0;
    for _ in 0..100 {
        ready = t.get("/ready", None).await.status;
        if ready == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(ready, 200, "/ready waits on the home cluster only");

    let started = Instant::now();
    let r = t.get("/api/namespaces", None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(clusters_of(&r.json()), pairs(&[("bookinfo", "east"), ("istio-system", "east")]));
    let r = t.get("/api/namespaces/bookinfo/apps", None).await;
    assert_eq!(r.status, 200);
    assert!(names(&r.json(), "applications").len() > 1);
    assert!(started.elapsed() < Duration::from_secs(2), "home took {:?}", started.elapsed());

    for p in model_operations("bookinfo") {
        let r = t.get(&with_cluster(&p, "south"), None).await;
        assert_eq!(r.status, 503, "{p}: {}", r.text());
        let body = r.json();
        assert_eq!(body["code"], 503);
        assert!(body["message"].as_str().is_some_and(|m| m.contains("\"south\"")), "{p}: {body}");
    }
    let status = t.get("/api/status", None).await.json();
    let warnings = status["warningMessages"].as_array().unwrap().clone();
    assert!(
        warnings.iter().any(|w| w.as_str().is_some_and(|w| w.contains("\"south\""))),
        "{warnings:?}"
    );
    let metrics = t.get("/metrics", None).await.text();
    assert!(metrics.contains("meshlens_cluster_available{cluster=\"south\"} 0"), "{metrics}");
    assert!(metrics.contains("meshlens_cluster_available{cluster=\"east\"} 1"), "{metrics}");
}

/// The home cluster's answers that must not change or slow down while a remote is away.
async fn home_answers(t: &Two) -> Vec<(String, u16, Value)> {
    let mut out = Vec::new();
    for p in [
        "/api/namespaces/bookinfo/apps",
        "/api/namespaces/bookinfo/workloads",
        "/api/namespaces/bookinfo/health?type=app&queryTime=1700000000",
        "/api/namespaces/bookinfo/apps/reviews/health?queryTime=1700000000",
    ] {
        let started = Instant::now();
        let r = t.get(p, None).await;
        assert!(started.elapsed() < Duration::from_secs(2), "{p} took {:?}", started.elapsed());
        out.push((p.to_string(), r.status, r.json()));
    }
    let started = Instant::now();
    let r = t.get("/api/namespaces/graph?namespaces=bookinfo&queryTime=1700000000", None).await;
    assert!(started.elapsed() < Duration::from_secs(5), "graph took {:?}", started.elapsed());
    assert_eq!(r.status, 200, "{}", r.text());
    // The nodes outside west (west's come from the telemetry either way, judged without its
    // objects while it is away).
    let mut v = r.json();
    if let Some(nodes) = v["elements"]["nodes"].as_array_mut() {
        nodes.retain(|n| n["data"]["cluster"] != "west");
        assert!(nodes.len() > 5, "{nodes:?}");
    }
    v["elements"]["edges"] = Value::Null;
    out.push(("graph".into(), r.status, v["elements"].clone()));
    for (p, status, body) in &out {
        assert_eq!(*status, 200, "{p}: {body}");
    }
    out
}

async fn west_warned(t: &Two) -> bool {
    let status = t.get("/api/status", None).await.json();
    let warnings = status["warningMessages"].as_array().cloned().unwrap_or_default();
    warnings.iter().any(|w| w.as_str().is_some_and(|w| w.contains("\"west\"")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_that_goes_away_is_isolated_and_comes_back_on_its_own() {
    let plugins = integration_tests::server::plugin_dir(integration_tests::server::BUNDLED);
    let topology = workspace_root().join("config/demo/topology.toml");
    let extra = format!(
        "[metrics]\nbackend = \"simulator\"\n[metrics.simulator]\ntopology = {topology:?}\nstart = 1699990000\nclock = \"query\"\n"
    );
    let t = start_with("strategy = \"anonymous\"", true, plugins, &extra).await;
    let before = home_answers(&t).await;
    let west_apps = with_cluster("/api/namespaces/bookinfo/apps", "west");
    assert_eq!(t.get(&west_apps, None).await.status, 200);

    // A silent partition: west's server accepts connections and never answers.
    t._west.as_ref().unwrap().hang();
    let lost = within(Duration::from_secs(30), "west reported lost", async || {
        let r = t.get(&west_apps, None).await;
        let listed = clusters_of(&t.get("/api/namespaces", None).await.json());
        r.status == 503 && listed.iter().all(|(_, c)| c == "east")
    })
    .await;
    let body = t.get(&west_apps, None).await.json();
    assert_eq!(body["code"], 503);
    assert!(body["message"].as_str().is_some_and(|m| m.contains("\"west\"")), "{body}");
    assert!(west_warned(&t).await, "no /api/status warning names west");
    assert_eq!(t.get("/ready", None).await.status, 200, "/ready depends on home only");
    assert_eq!(home_answers(&t).await, before, "home answers changed while west was away");

    t._west.as_ref().unwrap().restart().await;
    let back = within(Duration::from_secs(30), "west back", async || {
        let listed = clusters_of(&t.get("/api/namespaces", None).await.json());
        t.get(&west_apps, None).await.status == 200 && listed.iter().any(|(_, c)| c == "west")
    })
    .await;
    assert!(!west_warned(&t).await, "the warning stays after west came back");
    assert_eq!(home_answers(&t).await, before);
    eprintln!("west lost after {lost:?}, back after {back:?}");
}

#[test]
fn config_check_names_duplicate_and_sourceless_remotes() {
    let mut file = tempfile::Builder::new().suffix(".toml").tempfile().unwrap();
    std::io::Write::write_all(
        &mut file,
        b"[auth]\nstrategy = \"anonymous\"\n[cluster]\nname = \"east\"\n\
          [[cluster.remotes]]\nname = \"west\"\nkubeconfig = \"/k\"\n\
          [[cluster.remotes]]\nname = \"west\"\nkubeconfig = \"/k2\"\n\
          [[cluster.remotes]]\nname = \"north\"\n",
    )
    .unwrap();
    integration_tests::server::ensure_built();
    let out = Command::new(binary())
        .args(["config", "check", "--config", file.path().to_str().unwrap()])
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cluster.remotes[1] (west)") && err.contains("duplicate"), "{err}");
    assert!(err.contains("cluster.remotes[2] (north)") && err.contains("no source"), "{err}");
    assert_eq!(err.lines().count(), 2, "one line per problem:\n{err}");
}
