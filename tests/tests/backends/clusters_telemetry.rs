//! Multi-cluster telemetry (issue #32): an instance reading a home cluster (`Kubernetes`) and
//! a remote (`west`), both the demo manifests, over one real Prometheus whose series carry
//! `source_cluster` and `destination_cluster`. Health, namespaceMetrics and the app dashboard
//! count only the asked cluster's requests: inbound by `destination_cluster`, outbound by
//! `source_cluster` (Kiali v2). A single-cluster instance over the same store counts every
//! series, as it always did.
//!
//! The traffic (namespace `bookinfo`, HTTP, per second; each request reported by both proxies):
//! - A: productpage-v1@Kubernetes → reviews-v1@Kubernetes, 200: 3
//! - B: productpage-v1@Kubernetes → reviews-v3@west, 200: 2 (crosses clusters)
//! - C: productpage-v1@west → reviews-v3@west, 200: 5, and 503: 1
//! - D: reviews-v1@Kubernetes → ratings-v1@Kubernetes, 200: 4
//! - E: productpage-v1@west → the `details` service, no upstream answered (503 `UH`): 0.5,
//!   reported by the caller only, with every destination label but the service `unknown`

// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::InProcess as Meshlens;
use integration_tests::{
    prometheus::{Fixture, PromServer, from_openmetrics},
    server::{plugin_dir, workspace_root},
};
use serde_json::Value;

const STEP: i64 = 15;
const HOME: &str = "Kubernetes";
const WEST: &str = "west";

/// (cluster, workload, app) of a caller; (cluster, workload, app) of a callee, whose service
/// is its app (a workload `unknown`: no upstream answered, the app is only the service).
type End = (&'static str, &'static str, &'static str);

struct Request {
    src: End,
    dst: End,
    code: &'static str,
    rate: f64,
}

fn traffic() -> Vec<Request> {
    let pp = |c| (c, "productpage-v1", "productpage");
    let r = |c, w| (c, w, "reviews");
    vec![
        Request { src: pp(HOME), dst: r(HOME, "reviews-v1"), code: "200", rate: 3.0 },
        Request { src: pp(HOME), dst: r(WEST, "reviews-v3"), code: "200", rate: 2.0 },
        Request { src: pp(WEST), dst: r(WEST, "reviews-v3"), code: "200", rate: 5.0 },
        Request { src: pp(WEST), dst: r(WEST, "reviews-v3"), code: "503", rate: 1.0 },
        Request {
            src: r(HOME, "reviews-v1"),
            dst: (HOME, "ratings-v1", "ratings"),
            code: "200",
            rate: 4.0,
        },
        Request { src: pp(WEST), dst: ("unknown", "unknown", "details"), code: "503", rate: 0.5 },
    ]
}

/// The requests as `istio_requests_total` counters from `start` to `end`, on a 15 s grid.
fn openmetrics(start: i64, end: i64) -> String {
    let mut out = String::from("# TYPE istio_requests counter\n");
    for r in traffic() {
        let (sc, sw, sa) = r.src;
        let (dc, dw, svc) = r.dst;
        let answered = dw != "unknown";
        let (da, dns, flags) =
            if answered { (svc, "bookinfo", "-") } else { ("unknown", "unknown", "UH") };
        let reporters: &[&str] = if answered { &["source", "destination"] } else { &["source"] };
        for &reporter in reporters {
            let labels = [
                ("reporter", reporter),
                ("source_cluster", sc),
                ("source_workload_namespace", "bookinfo"),
                ("source_workload", sw),
                ("source_app", sa),
                ("source_version", "v1"),
                ("destination_cluster", dc),
                ("destination_service_namespace", "bookinfo"),
                ("destination_service_name", svc),
                ("destination_service", &format!("{svc}.bookinfo.svc.cluster.local")),
                ("destination_workload_namespace", dns),
                ("destination_workload", dw),
                ("destination_app", da),
                ("destination_version", if answered { "v1" } else { "unknown" }),
                ("request_protocol", "http"),
                ("response_code", r.code),
                ("grpc_response_status", ""),
                ("response_flags", flags),
                ("connection_security_policy", "mutual_tls"),
            ];
            let text: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
            let head = format!("istio_requests_total{{{}}}", text.join(","));
            let mut t = start;
            while t <= end {
                out.push_str(&format!("{head} {} {t}\n", r.rate * (t - start) as f64));
                t += STEP;
            }
        }
    }
    out.push_str("# EOF\n");
    out
}

struct Setup {
    /// Home and `west`.
    multi: Meshlens,
    /// Home only, over the same store.
    single: Meshlens,
    now: i64,
    _prom: PromServer,
    _fixture: Fixture,
}

/// A store holding [`traffic`] from 20 minutes before now to 10 minutes after, so every
/// window up to "now" is full; and now on the store's grid.
fn store() -> (PromServer, Fixture, i64) {
    let now = meshlens_params::now() / STEP * STEP;
    let fixture = from_openmetrics(&openmetrics(now - 1200, now + 600), now - 1200, now + 600);
    (PromServer::start(&fixture), fixture, now)
}

/// The configuration of an instance over `prom`, with `west` as a remote when `multi`.
fn config(prom: &PromServer, plugins: &std::path::Path, multi: bool, extra: &str) -> String {
    // The remote's snapshot path is absolute: only the home one is read from the workspace.
    let demo = workspace_root().join("config/demo").display().to_string();
    let remotes = if multi {
        format!(
            "[[cluster.remotes]]\nname = \"west\"\nsource = \"snapshot\"\nsnapshot = [{demo:?}]\n"
        )
    } else {
        String::new()
    };
    format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n{remotes}\
         [metrics]\nbackend = \"prometheus\"\ntimeout = \"3s\"\n\
         [metrics.prometheus]\nurl = {:?}\n{extra}",
        plugins.display().to_string(),
        prom.url()
    )
}

fn setup() -> Setup {
    let (prom, fixture, now) = store();
    let start = |multi: bool| {
        let plugins = plugin_dir(&["metrics-prometheus"]);
        Meshlens::start(&config(&prom, plugins.path(), multi, ""), &[], vec![plugins])
            .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"))
    };
    let (multi, single) = (start(true), start(false));
    Setup { multi, single, now, _prom: prom, _fixture: fixture }
}

fn get(m: &Meshlens, path: &str) -> Value {
    let r = m.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json()
}

/// `path` with `clusterName=<cluster>` added (none for `None`).
fn at(path: &str, cluster: Option<&str>) -> String {
    match cluster {
        None => path.to_string(),
        Some(c) => {
            let sep = if path.contains('?') { '&' } else { '?' };
            format!("{path}{sep}clusterName={c}")
        }
    }
}

fn close(got: &Value, want: f64, what: &str) {
    let g = got.as_f64().unwrap_or_else(|| panic!("{what}: not a number: {got}"));
    assert!((g - want).abs() <= 1e-6 * want.abs().max(1.0), "{what}: got {g}, expected {want}");
}

/// (requestCount, requestErrorCount) of an object health answer.
fn requests(m: &Meshlens, path: &str, want: (f64, f64)) {
    let v = get(m, path);
    close(&v["requests"]["requestCount"], want.0, &format!("{path} requestCount"));
    close(&v["requests"]["requestErrorCount"], want.1, &format!("{path} requestErrorCount"));
}

/// Every point of the only series of a MetricSeries, or none when it has no series.
fn points(series: &Value, what: &str) -> Vec<f64> {
    let matrix = series["matrix"].as_array().unwrap_or_else(|| panic!("{what}: {series}"));
    assert!(matrix.len() <= 1, "{what}: one summed series expected: {series}");
    matrix
        .iter()
        .flat_map(|s| s["values"].as_array().cloned().unwrap_or_default())
        .map(|p| p[1].as_str().and_then(|v| v.parse().ok()).expect("value string"))
        .collect()
}

fn all_close(series: &Value, want: f64, what: &str) {
    let ps = points(series, what);
    assert!(!ps.is_empty(), "{what}: no points");
    for p in ps {
        assert!((p - want).abs() <= 1e-6 * want.max(1.0), "{what}: got {p}, expected {want}");
    }
}

#[test]
fn object_health_counts_only_the_asked_clusters_requests() {
    let s = setup();
    let (m, one) = (&s.multi, &s.single);
    let app = |a: &str| format!("/api/namespaces/bookinfo/apps/{a}/health");
    let wl = |w: &str| format!("/api/namespaces/bookinfo/workloads/{w}/health");
    let svc = |v: &str| format!("/api/namespaces/bookinfo/services/{v}/health");
    // productpage sends A + B from home, C + E from west.
    requests(m, &app("productpage"), (5.0, 0.0));
    requests(m, &at(&app("productpage"), Some(HOME)), (5.0, 0.0));
    requests(m, &at(&app("productpage"), Some(WEST)), (6.5, 1.5));
    requests(one, &app("productpage"), (11.5, 1.5));
    // reviews: home receives A and sends D; west receives B and C.
    requests(m, &app("reviews"), (7.0, 0.0));
    requests(m, &at(&app("reviews"), Some(WEST)), (8.0, 1.0));
    requests(one, &app("reviews"), (15.0, 1.0));
    // The same workload name in both clusters: only west's reviews-v3 has traffic.
    requests(m, &wl("reviews-v3"), (0.0, 0.0));
    requests(m, &at(&wl("reviews-v3"), Some(WEST)), (8.0, 1.0));
    requests(one, &wl("reviews-v3"), (8.0, 1.0));
    requests(m, &at(&wl("reviews-v1"), Some(WEST)), (0.0, 0.0));
    requests(m, &wl("reviews-v1"), (7.0, 0.0));
    // A service is inbound only.
    requests(m, &svc("reviews"), (3.0, 0.0));
    requests(m, &at(&svc("reviews"), Some(WEST)), (8.0, 1.0));
    requests(one, &svc("reviews"), (11.0, 1.0));
    requests(m, &at(&svc("ratings"), Some(WEST)), (0.0, 0.0));
    requests(m, &svc("ratings"), (4.0, 0.0));
    // A request no upstream answered has no destination cluster: it counts for the service
    // in every cluster (Kiali's `destination_cluster=~"<name>|unknown"`).
    requests(m, &svc("details"), (0.5, 0.5));
    requests(m, &at(&svc("details"), Some(WEST)), (0.5, 0.5));
    requests(one, &svc("details"), (0.5, 0.5));
    requests(m, &at(&app("details"), Some(WEST)), (0.0, 0.0));
    // The statuses follow: west's 503s are 1/8 of reviews' inbound requests (Kiali's default
    // rule: 5xx above 10% is a failure), home's reviews have none.
    let status = |m: &Meshlens, path: String| get(m, &path)["status"].as_str().map(str::to_string);
    assert_eq!(status(m, at(&app("reviews"), Some(WEST))).as_deref(), Some("failure"));
    assert_eq!(status(m, app("reviews")).as_deref(), Some("healthy"));
    // The deployment statuses are the asked cluster's (both hold the demo manifests).
    let v = get(m, &at(&app("reviews"), Some(WEST)));
    assert_eq!(v["deploymentStatuses"].as_array().map(Vec::len), Some(3), "{v}");
}

#[test]
fn namespace_health_counts_only_the_asked_clusters_requests() {
    let s = setup();
    let (m, one) = (&s.multi, &s.single);
    let ns = |ty: &str, c: Option<&str>| {
        get(m, &at(&format!("/api/namespaces/bookinfo/health?type={ty}"), c))
    };
    let ratio = |v: &Value, name: &str, key: &str, want: f64| {
        close(&v[name]["requests"][key], want, &format!("{name} {key}"));
    };
    let (home, west) = (ns("app", None), ns("app", Some(WEST)));
    ratio(&home, "reviews", "inboundErrorRatio", 0.0);
    ratio(&west, "reviews", "inboundErrorRatio", 1.0 / 8.0);
    ratio(&home, "productpage", "outboundErrorRatio", 0.0);
    ratio(&west, "productpage", "outboundErrorRatio", 1.5 / 6.5);
    ratio(&home, "ratings", "inboundErrorRatio", 0.0);
    ratio(&west, "ratings", "inboundErrorRatio", -1.0);
    ratio(&west, "reviews", "outboundErrorRatio", -1.0);
    let (home, west) = (ns("workload", None), ns("workload", Some(WEST)));
    ratio(&home, "reviews-v3", "inboundErrorRatio", -1.0);
    ratio(&west, "reviews-v3", "inboundErrorRatio", 1.0 / 8.0);
    ratio(&west, "reviews-v1", "inboundErrorRatio", -1.0);
    let (home, west) = (ns("service", None), ns("service", Some(WEST)));
    ratio(&home, "reviews", "inboundErrorRatio", 0.0);
    ratio(&west, "reviews", "inboundErrorRatio", 1.0 / 8.0);
    ratio(&west, "ratings", "inboundErrorRatio", -1.0);
    ratio(&home, "details", "inboundErrorRatio", 1.0);
    ratio(&west, "details", "inboundErrorRatio", 1.0);
    // A single-cluster instance counts both clusters' series.
    let all = get(one, "/api/namespaces/bookinfo/health?type=app");
    ratio(&all, "reviews", "inboundErrorRatio", 1.0 / 11.0);
    ratio(&all, "productpage", "outboundErrorRatio", 1.5 / 11.5);
    let all = get(one, "/api/namespaces/bookinfo/health?type=workload");
    ratio(&all, "reviews-v3", "inboundErrorRatio", 1.0 / 8.0);
}

#[test]
fn namespace_metrics_and_the_app_dashboard_count_only_the_asked_cluster() {
    let s = setup();
    let (m, one) = (&s.multi, &s.single);
    let range = format!("queryTime={}&duration=600&step=60&rateInterval=2m", s.now);
    let metrics = |m: &Meshlens, extra: &str, c: Option<&str>| {
        let path = format!(
            "/api/namespaces/bookinfo/metrics?{range}&filters[]=request_count&filters[]=request_error_count{extra}"
        );
        get(m, &at(&path, c))["metrics"].clone()
    };
    // Outbound (the default): by source_cluster. Home sends A, B and D; west sends C and E.
    let home = metrics(m, "", None);
    all_close(&home["request_count"], 9.0, "home outbound request_count");
    assert!(points(&home["request_error_count"], "home errors").is_empty(), "{home}");
    let west = metrics(m, "", Some(WEST));
    all_close(&west["request_count"], 6.5, "west outbound request_count");
    all_close(&west["request_error_count"], 1.5, "west outbound request_error_count");
    all_close(&metrics(one, "", None)["request_count"], 15.5, "single outbound request_count");
    // Inbound: by destination_cluster. Home receives A and D; west receives B and C.
    let inbound = "&direction=inbound";
    all_close(&metrics(m, inbound, None)["request_count"], 7.0, "home inbound");
    all_close(&metrics(m, inbound, Some(WEST))["request_count"], 8.0, "west inbound");
    all_close(&metrics(one, inbound, None)["request_count"], 15.0, "single inbound");

    // The app dashboard's request volume (its first chart).
    let volume = |m: &Meshlens, app: &str, dir: &str, c: Option<&str>| {
        let path = format!("/api/namespaces/bookinfo/apps/{app}/dashboard?{range}&direction={dir}");
        let v = get(m, &at(&path, c));
        assert_eq!(v["charts"][0]["name"], "Request volume", "{v}");
        v["charts"][0]["metric"].clone()
    };
    all_close(&volume(m, "reviews", "inbound", None), 3.0, "home reviews inbound");
    all_close(&volume(m, "reviews", "inbound", Some(WEST)), 8.0, "west reviews inbound");
    all_close(&volume(one, "reviews", "inbound", None), 11.0, "single reviews inbound");
    all_close(&volume(m, "productpage", "outbound", None), 5.0, "home productpage outbound");
    all_close(&volume(m, "productpage", "outbound", Some(WEST)), 6.5, "west productpage outbound");
    all_close(&volume(one, "productpage", "outbound", None), 11.5, "single productpage outbound");
    // The workload and service dashboards too.
    let wl = format!(
        "/api/namespaces/bookinfo/workloads/reviews-v3/dashboard?{range}&direction=inbound"
    );
    assert!(points(&get(m, &wl)["charts"][0]["metric"], "home reviews-v3").is_empty());
    all_close(&get(m, &at(&wl, Some(WEST)))["charts"][0]["metric"], 8.0, "west reviews-v3");
    let svc = format!("/api/namespaces/bookinfo/services/reviews/dashboard?{range}");
    all_close(&get(m, &svc)["charts"][0]["metric"], 3.0, "home reviews service");
    all_close(&get(m, &at(&svc, Some(WEST)))["charts"][0]["metric"], 8.0, "west reviews service");
}

/// The `meshlens_health_status` gauge of the exported home objects, once it shows `line`.
fn exported(m: &integration_tests::server::Meshlens, line: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let text = m.get("/metrics").text();
        if text.contains(line) || std::time::Instant::now() > deadline {
            return text
                .lines()
                .filter(|l| l.starts_with("meshlens_health_status{"))
                .collect::<Vec<_>>()
                .join("\n");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The background export covers the home cluster's objects, and so counts the home
/// cluster's telemetry on a multi-cluster instance. Each instance runs in its own process:
/// the gauge is process-wide.
#[test]
fn the_health_export_counts_the_home_clusters_telemetry() {
    let (prom, _fixture, _) = store();
    let start = |multi: bool| {
        let plugins = plugin_dir(&["metrics-prometheus"]);
        let cfg = config(&prom, plugins.path(), multi, "[health]\nexport_interval = \"1s\"\n");
        integration_tests::server::Meshlens::start(&cfg, &[], vec![plugins])
            .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"))
    };
    let gauge = |kind: &str, name: &str, status: &str| {
        format!(
            "meshlens_health_status{{namespace=\"bookinfo\",kind=\"{kind}\",name=\"{name}\",status=\"{status}\"}} 1"
        )
    };
    // Home: reviews receives A (no errors) and sends D; productpage sends A and B.
    let multi = start(true);
    for (kind, name) in [("app", "reviews"), ("app", "productpage"), ("service", "reviews")] {
        let line = gauge(kind, name, "healthy");
        let text = exported(&multi, &line);
        assert!(text.contains(&line), "missing `{line}`:\n{text}");
    }
    // Both clusters: west's 503s are 1 in 11 of reviews' requests, a degraded 9%, and 1.5 in
    // 11.5 of productpage's, a failing 13%.
    let single = start(false);
    for (kind, name, status) in [
        ("app", "reviews", "degraded"),
        ("service", "reviews", "degraded"),
        ("app", "productpage", "failure"),
    ] {
        let line = gauge(kind, name, status);
        let text = exported(&single, &line);
        assert!(text.contains(&line), "missing `{line}`:\n{text}");
    }
}
