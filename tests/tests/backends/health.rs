//! Health operations against a real Prometheus (and the embedded store) over the
//! generated demo traffic. Expected values are computed here from the generator's
//! `--expected` JSON: every request counted once (source reports, plus destination reports
//! where the caller has no proxy), errors = response codes 4xx/5xx.

use integration_tests::{
    inprocess::InProcess as Meshlens,
    prometheus::{Fixture, PromServer, fixture},
    server::plugin_dir,
};
use meshlens::config::Config;
use serde_json::Value;

const TOL: f64 = 1e-6;

/// Health always looks at "now", so the data runs 30 minutes past the start of the test
/// process (Prometheus serves future blocks): every rate window lies inside the data
/// however long the build before the queries takes.
fn demo() -> std::sync::Arc<Fixture> {
    static END: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let end = END.get_or_init(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        (now + 1800).to_string()
    });
    integration_tests::server::ensure_built();
    fixture(&["--topology", "demo", "--minutes", "60", "--end", end])
}

fn config(backend: &str, table: &str, dir: &std::path::Path) -> String {
    format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [\"{}\"]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [metrics]\nbackend = \"{backend}\"\ntimeout = \"3s\"\n[metrics.{backend}]\n{table}\n",
        dir.display()
    )
}

fn with_prometheus(prom: &PromServer) -> Meshlens {
    with_prometheus_configured(prom, |_| {})
}

/// meshlens over `prom`, its configuration then changed by `adjust`.
fn with_prometheus_configured(prom: &PromServer, adjust: impl FnOnce(&mut Config)) -> Meshlens {
    let dir = plugin_dir(&["metrics-prometheus"]);
    let cfg = config("prometheus", &format!("url = \"{}\"", prom.url()), dir.path());
    Meshlens::configured(&cfg, adjust, vec![dir]).expect("meshlens starts")
}

fn with_embedded(f: &Fixture) -> Meshlens {
    let dir = plugin_dir(&["metrics-openmetrics-file"]);
    let cfg =
        config("openmetrics_file", &format!("path = \"{}\"", f.openmetrics.display()), dir.path());
    Meshlens::start(&cfg, &[], vec![dir]).expect("meshlens starts")
}

/// One counted request series: (source side, destination side, rate, is error).
struct Counted<'a> {
    src: Option<&'a Value>,
    dst: &'a Value,
    rate: f64,
    error: bool,
}

fn counted(expected: &Value) -> Vec<Counted<'_>> {
    let mut out = Vec::new();
    for edge in expected["edges"].as_array().expect("edges") {
        if !matches!(edge["protocol"].as_str(), Some("http" | "grpc")) {
            continue;
        }
        let src = edge.get("source").filter(|s| !s.is_null());
        for s in edge["series"].as_array().expect("series") {
            let reporter = s["reporter"].as_str().unwrap_or_default();
            if reporter == "source" || (reporter == "destination" && src.is_none()) {
                let code = s["response_code"].as_str().unwrap_or_default();
                out.push(Counted {
                    src,
                    dst: &edge["destination"],
                    rate: s["rate"].as_f64().expect("rate"),
                    error: code.starts_with('4') || code.starts_with('5'),
                });
            }
        }
    }
    out
}

fn field<'a>(side: Option<&'a Value>, key: &str) -> Option<&'a str> {
    side.and_then(|s| s[key].as_str())
}

/// (in requests, in errors, out requests, out errors) for an object in `ns`.
fn expect_counts(
    expected: &Value,
    ns: &str,
    key_in: &str,
    key_out: Option<&str>,
    ns_key_in: &str,
    name: &str,
) -> [f64; 4] {
    let mut c = [0.0; 4];
    for r in counted(expected) {
        if field(Some(r.dst), ns_key_in) == Some(ns) && field(Some(r.dst), key_in) == Some(name) {
            c[0] += r.rate;
            if r.error {
                c[1] += r.rate;
            }
        }
        if let Some(k) = key_out
            && field(r.src, "namespace") == Some(ns)
            && field(r.src, k) == Some(name)
        {
            c[2] += r.rate;
            if r.error {
                c[3] += r.rate;
            }
        }
    }
    c
}

fn close(a: &Value, b: f64, what: &str) {
    let a = a.as_f64().unwrap_or_else(|| panic!("{what}: not a number: {a}"));
    assert!((a - b).abs() <= TOL * b.abs().max(1.0), "{what}: got {a}, expected {b}");
}

fn ratio(err: f64, req: f64) -> f64 {
    if req > 0.0 { err / req } else { -1.0 }
}

const APPS: &[&str] = &["productpage", "details", "reviews", "ratings", "mongodb", "notifications"];
const WORKLOADS: &[&str] = &[
    "productpage-v1",
    "details-v1",
    "reviews-v1",
    "reviews-v2",
    "reviews-v3",
    "ratings-v1",
    "ratings-v2",
    "mongodb-v1",
    "notifications-v1",
];
const SERVICES: &[&str] =
    &["productpage", "details", "reviews", "ratings", "mongodb", "notifications"];

fn check_all_health(m: &Meshlens, expected: &Value) {
    for app in APPS {
        let v = m.get(&format!("/api/namespaces/bookinfo/apps/{app}/health"));
        assert_eq!(v.status, 200, "{app}: {}", v.text());
        let v = v.json();
        let c = expect_counts(expected, "bookinfo", "app", Some("app"), "namespace", app);
        close(&v["requests"]["requestCount"], c[0] + c[2], &format!("{app} requestCount"));
        close(
            &v["requests"]["requestErrorCount"],
            c[1] + c[3],
            &format!("{app} requestErrorCount"),
        );
        assert!(v["deploymentStatuses"].is_array() && v["proxy"].is_array(), "{v}");
    }
    for wl in WORKLOADS {
        let v = m.get(&format!("/namespaces/bookinfo/workloads/{wl}/health")).json();
        let c = expect_counts(expected, "bookinfo", "workload", Some("workload"), "namespace", wl);
        close(&v["requests"]["requestCount"], c[0] + c[2], &format!("{wl} requestCount"));
        close(&v["requests"]["requestErrorCount"], c[1] + c[3], &format!("{wl} requestErrorCount"));
        assert_eq!(v["deploymentStatus"]["name"], *wl);
    }
    for svc in SERVICES {
        let v = m.get(&format!("/api/namespaces/bookinfo/services/{svc}/health")).json();
        let c = expect_counts(expected, "bookinfo", "service_name", None, "service_namespace", svc);
        close(&v["requests"]["requestCount"], c[0], &format!("{svc} requestCount"));
        close(&v["requests"]["requestErrorCount"], c[1], &format!("{svc} requestErrorCount"));
        assert!(v["proxy"]["inbound"]["total"].is_i64(), "{v}");
    }
    for (ty, names, key_in, key_out, ns_key) in [
        ("app", APPS, "app", Some("app"), "namespace"),
        ("workload", WORKLOADS, "workload", Some("workload"), "namespace"),
        ("service", SERVICES, "service_name", None, "service_namespace"),
    ] {
        let r = m.get(&format!("/api/namespaces/bookinfo/health?type={ty}"));
        assert_eq!(r.status, 200, "{ty}: {}", r.text());
        let v = r.json();
        let map = v.as_object().unwrap_or_else(|| panic!("{ty}: {v}"));
        assert_eq!(map.len(), names.len(), "{ty}: {:?}", map.keys().collect::<Vec<_>>());
        for name in names {
            let e = &map[*name]["requests"];
            let c = expect_counts(expected, "bookinfo", key_in, key_out, ns_key, name);
            close(&e["inboundErrorRatio"], ratio(c[1], c[0]), &format!("{ty} {name} inbound"));
            close(&e["outboundErrorRatio"], ratio(c[3], c[2]), &format!("{ty} {name} outbound"));
            close(&e["errorRatio"], ratio(c[1] + c[3], c[0] + c[2]), &format!("{ty} {name} error"));
        }
    }
}

#[test]
fn health_matches_the_generated_traffic_on_real_prometheus() {
    let f = demo();
    let prom = PromServer::start(&f);
    let m = with_prometheus(&prom);
    check_all_health(&m, &f.expected);

    // Shapes and cluster facts.
    let reviews = m.get("/api/namespaces/bookinfo/apps/reviews/health").json();
    let names: Vec<&str> = reviews["deploymentStatuses"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert_eq!(names, ["reviews-v1", "reviews-v2", "reviews-v3"]);
    let ratings = m.get("/api/namespaces/bookinfo/apps/ratings/health").json();
    let v2 = ratings["deploymentStatuses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "ratings-v2")
        .cloned()
        .unwrap();
    assert_eq!(
        (v2["replicas"].as_i64(), v2["available"].as_i64()),
        (Some(0), Some(0)),
        "scaled to zero"
    );
    // Proxy health from the Envoy membership gauges the generator emits.
    let pp = m.get("/api/namespaces/bookinfo/apps/productpage/health").json();
    let proxy = &pp["proxy"][0];
    assert_eq!(proxy["service"], "productpage");
    let gauge = |name: &str| -> i64 {
        f.expected["gauges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["name"] == name)
            .map(|g| g["value"].as_i64().unwrap_or(0))
            .sum()
    };
    let base = "envoy_cluster_inbound_9080__productpage_bookinfo_svc_cluster_local_membership";
    assert_eq!(proxy["inbound"]["healthy"].as_i64(), Some(gauge(&format!("{base}_healthy"))));
    assert_eq!(proxy["inbound"]["total"].as_i64(), Some(gauge(&format!("{base}_total"))));
    assert!(
        proxy["inbound"]["total"].as_i64().unwrap_or(0) > 0,
        "the generator emits these gauges"
    );
    // The idle app has no traffic: -1 ratios, not 0.
    let ns = m.get("/api/namespaces/bookinfo/health").json();
    assert_eq!(ns["notifications"]["requests"]["errorRatio"], -1.0);
    assert!(ns["reviews"]["workloadStatuses"].as_array().is_some_and(|w| w.len() == 3));
    let wl = m.get("/api/namespaces/bookinfo/health?type=workload").json();
    assert_eq!(wl["ratings-v2"]["workloadStatus"]["replicas"], 0);
}

#[test]
fn health_matches_the_generated_traffic_on_the_embedded_store() {
    let f = demo();
    let m = with_embedded(&f);
    check_all_health(&m, &f.expected);
}

/// GETs `path`, expecting `status` with the spec's `{code, message}` body.
fn error_body(m: &Meshlens, path: &str, status: u16) -> Value {
    let r = m.get(path);
    assert_eq!(r.status, status, "{path}: {}", r.text());
    let body = r.json();
    assert_eq!(body["code"], status);
    body
}

#[test]
fn bad_parameters_and_missing_objects() {
    let f = demo();
    let m = with_embedded(&f);
    for path in [
        "/api/namespaces/bookinfo/health?type=pods",
        "/api/namespaces/bookinfo/health?rateInterval=ten",
        "/api/namespaces/bookinfo/apps/reviews/health?rateInterval=0s",
        "/api/namespaces/bookinfo/services/reviews/health?rateInterval=-5m",
        "/api/namespaces/bookinfo/workloads/reviews-v1/health?rateInterval=5x",
        "/api/namespaces/nowhere/health",
    ] {
        let body = error_body(&m, path, 400);
        assert!(!body["message"].as_str().unwrap_or_default().contains("ten"), "no echo: {body}");
    }
    let types = m.get("/api/namespaces/bookinfo/health?type=pods").json();
    let msg = types["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("app")
            && msg.contains("service")
            && msg.contains("workload")
            && msg.contains("type"),
        "{msg}"
    );
    for path in [
        "/api/namespaces/bookinfo/apps/nope/health",
        "/api/namespaces/bookinfo/services/nope/health",
        "/api/namespaces/bookinfo/workloads/nope/health",
        "/api/namespaces/nowhere/apps/reviews/health",
        "/api/namespaces/kube-system/apps/kube-dns/health",
    ] {
        error_body(&m, path, 404);
    }
}

#[test]
fn a_stopped_prometheus_gives_503_and_answers_recover_after_restart() {
    let f = demo();
    let mut prom = PromServer::start(&f);
    // Without the answer cache, which would answer from memory for one TTL.
    let m = with_prometheus_configured(&prom, |c| {
        c.metrics.cache_ttl = meshlens_params::HumanDuration(std::time::Duration::ZERO)
    });
    let path = "/api/namespaces/bookinfo/apps/reviews/health";
    assert_eq!(m.get(path).status, 200);
    prom.stop();
    let r = m.get(path);
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(r.json()["code"], 503);
    assert_eq!(m.get("/api/namespaces/bookinfo/health").status, 503);
    prom.restart();
    // Bounded wait for the restarted server to serve queries again. Every other operation
    // must then answer at once: queries abandoned during the outage (a sibling failed
    // first) must not replay their old errors (this caught that in the metrics engine).
    let mut status = 0;
    for _ in 0..100 {
        status = m.get(path).status;
        if status == 200 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(status, 200);
    check_all_health(&m, &f.expected);
}
