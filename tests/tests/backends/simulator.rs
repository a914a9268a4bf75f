//! The `simulator` backend: the demo mesh generated live from `config/demo/topology.toml`.
//!
//! - It answers graph, health and appDashboard exactly as a real Prometheus loaded with the
//!   same model's samples (`meshlens simulate` + promtool).
//! - After two simulated hours (the `query` clock: the test moves time by asking about it)
//!   every edge is still there, health still has traffic, and the store is no bigger.
//! - The error burst of the scenario cycle shows where the cycle puts it and nowhere else.

// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::InProcess as Meshlens;
use std::path::PathBuf;

use integration_tests::{
    prometheus::{PromServer, configured_backend, simulated},
    server::{BUNDLED, plugin_dir, workspace_root},
};
use metrics_simulation::{Model, Topology};
use plugin_api::{
    HistogramStat, MetricQuery, QueryTime, RangeFunc,
    abi_stable::std_types::{RNone, RVec},
};
use serde_json::Value;

const TOL: f64 = 1e-6;
/// The demo topology's error burst: reviews-v2 → ratings, minutes 5 to 9 of each 30.
const BURST_FROM: i64 = 5 * 60;
const BURST_TO: i64 = 9 * 60;
const CYCLE: i64 = 30 * 60;

fn topology() -> PathBuf {
    workspace_root().join("config/demo/topology.toml")
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn server(backend: &str, table: &str) -> Meshlens {
    let dir = plugin_dir(BUNDLED);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [\"{}\"]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\", \"config/demo-ambient\"]\n\
         [metrics]\nbackend = \"{backend}\"\ntimeout = \"5s\"\n[metrics.{backend}]\n{table}\n",
        dir.path().display()
    );
    Meshlens::start(&cfg, &[], vec![dir]).expect("meshlens starts")
}

fn simulator(start: i64, clock: &str) -> Meshlens {
    server(
        "simulator",
        &format!("topology = \"{}\"\nstart = {start}\nclock = \"{clock}\"", topology().display()),
    )
}

fn close(x: f64, y: f64, at: &str) {
    assert!(x == y || (x - y).abs() <= TOL * x.abs().max(y.abs()), "{at}: {x} vs {y}");
}

/// Equal JSON, numbers within TOL (relative), also numbers written as strings (dashboard
/// values are, as in Prometheus's API; sums in another order differ in the last digits).
fn same(a: &Value, b: &Value, at: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            close(x.as_f64().unwrap_or(f64::NAN), y.as_f64().unwrap_or(f64::NAN), at);
        }
        (Value::String(x), Value::String(y)) if x != y => {
            match (x.parse::<f64>(), y.parse::<f64>()) {
                (Ok(x), Ok(y)) => close(x, y, at),
                _ => assert_eq!(x, y, "{at}"),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: lengths\n{a}\n{b}");
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                same(x, y, &format!("{at}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(x.keys().collect::<Vec<_>>(), y.keys().collect::<Vec<_>>(), "{at}: keys");
            for (k, v) in x {
                same(v, &y[k], &format!("{at}.{k}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

#[test]
fn simulator_answers_like_prometheus_over_the_same_samples() {
    let now = now();
    // Phase zero seven minutes ago: the ratings burst and the canary shift are under way.
    let start = now - now.rem_euclid(15) - 7 * 60;
    let f = simulated(&topology(), start, now + 1200, 60);
    let prom = PromServer::start(&f);
    let p = server("prometheus", &format!("url = \"{}\"", prom.url()));
    // The demo's own mode: the wall clock.
    let s = simulator(start, "wall");

    let q = now - 120;
    let mut paths = vec![];
    for ty in ["versionedApp", "workload", "app", "service"] {
        paths.push(format!(
            "/api/namespaces/graph?namespaces=bookinfo,istio-system&graphType={ty}&queryTime={q}&duration=600s\
             &appenders=deadNode,responseTime,securityPolicy,serviceEntry,sidecarsCheck,unusedNode"
        ));
    }
    for app in ["productpage", "reviews", "ratings", "details", "mongodb"] {
        paths.push(format!(
            "/api/namespaces/bookinfo/apps/{app}/dashboard?queryTime={q}&duration=1200&step=60&rateInterval=2m\
             &quantiles[]=0.5&quantiles[]=0.95&avg=true"
        ));
    }
    for path in &paths {
        let (a, b) = (p.get(path), s.get(path));
        assert_eq!((a.status, b.status), (200, 200), "{path}: {}", b.text());
        same(&a.json(), &b.json(), path);
    }
    let graph = s.get(&paths[1]).json();
    assert!(graph["elements"]["edges"].as_array().is_some_and(|e| e.len() >= 10), "{graph}");

    // Health reads "now" (rounded down to the answer cache's 10 s): compare answers given
    // within one 5 s span, so both servers evaluate at one time with the same 15 s samples
    // in their windows (rate() does not depend on where in the step).
    let mut compared = 0;
    for _ in 0..10 {
        let before = now_step();
        let pairs: Vec<(Value, Value)> = [
            "/api/namespaces/bookinfo/health?type=app",
            "/api/namespaces/bookinfo/health?type=workload",
            "/api/namespaces/bookinfo/health?type=service",
            "/api/namespaces/bookinfo/apps/ratings/health",
            "/api/namespaces/bookinfo/apps/productpage/health",
            "/api/namespaces/istio-system/health?type=app",
        ]
        .iter()
        .map(|path| (p.get(path).json(), s.get(path).json()))
        .collect();
        if now_step() != before {
            continue;
        }
        for (i, (a, b)) in pairs.iter().enumerate() {
            same(a, b, &format!("health {i}"));
        }
        compared += 1;
        break;
    }
    assert_eq!(compared, 1, "ten attempts all crossed a 5 s boundary");
}

/// 5 s spans: the sample grid (15 s) and the cache's rounding of now (10 s) both cut at multiples of 5.
fn now_step() -> i64 {
    now().div_euclid(5)
}

/// The node ids of a graph mapped to a short name: workload, or service, or "unknown".
fn edge_names(graph: &Value) -> Vec<(String, String)> {
    let nodes = graph["elements"]["nodes"].as_array().cloned().unwrap_or_default();
    let name = |id: &Value| -> String {
        let n = nodes
            .iter()
            .find(|n| &n["data"]["id"] == id)
            .map(|n| n["data"].clone())
            .unwrap_or_default();
        for key in ["workload", "service"] {
            if let Some(s) = n[key].as_str().filter(|s| !s.is_empty()) {
                return s.to_string();
            }
        }
        n["nodeType"].as_str().unwrap_or("?").to_string()
    };
    let mut out: Vec<(String, String)> = graph["elements"]["edges"]
        .as_array()
        .map(|edges| {
            edges.iter().map(|e| (name(&e["data"]["source"]), name(&e["data"]["target"]))).collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Every edge of the topology, as (source workload or "unknown", destination workload or host).
fn topology_edges() -> Vec<(String, String)> {
    let t = Topology::load(&topology()).expect("topology");
    let short = |k: &str| k.rsplit('/').next().unwrap_or(k).to_string();
    let mut out: Vec<(String, String)> = t
        .edge
        .iter()
        .map(|e| (short(&e.from), e.to.as_deref().map(short).unwrap_or_else(|| e.service.clone())))
        .collect();
    out.sort();
    out
}

fn backend_query(metric: &str, t: i64) -> MetricQuery {
    MetricQuery {
        metric: metric.into(),
        matchers: RVec::new(),
        func: RangeFunc::None,
        window_secs: 0,
        group_by: RNone,
        histogram: HistogramStat::None,
        time: QueryTime::Instant(t),
    }
}

#[test]
fn two_simulated_hours_keep_every_edge_and_the_same_memory() {
    let now = now();
    // The query clock starts two hours ago; asking about a time moves it there.
    let start = now - now.rem_euclid(15) - 2 * 3600;
    let s = simulator(start, "query");
    let want = topology_edges();
    for hours in [1, 2] {
        let t = start + hours * 3600;
        let g = s.get(&format!("/api/namespaces/graph?namespaces=bookinfo,istio-system,travel&graphType=workload&queryTime={t}&duration=600s")).json();
        let got = edge_names(&g);
        for edge in &want {
            assert!(got.contains(edge), "after {hours} h: {edge:?} missing from {got:?}");
        }
    }
    // Health reads the wall clock, which is two hours after the start.
    let ns = s.get("/api/namespaces/bookinfo/health?type=app").json();
    for app in ["productpage", "reviews", "ratings", "details"] {
        assert!(
            ns[app]["requests"]["errorRatio"].as_f64().is_some_and(|r| r >= 0.0),
            "{app}: {ns}"
        );
    }
    let reviews = s.get("/api/namespaces/bookinfo/apps/reviews/health").json();
    assert!(reviews["requests"]["requestCount"].as_f64().is_some_and(|r| r > 9.0), "{reviews}");

    // The store's size, reported by the backend itself, after one and two hours.
    let b = configured_backend(
        "metrics-simulator",
        "simulator",
        serde_json::json!({"topology": topology().display().to_string(), "start": start, "clock": "query"}),
    );
    let size = |t: i64| -> Vec<f64> {
        ["meshlens_simulator_series", "meshlens_simulator_samples", "meshlens_simulator_bytes"]
            .iter()
            .map(|m| {
                let r = b.query(&backend_query(m, t), 5_000).into_result().expect("query");
                r.series
                    .first()
                    .and_then(|s| s.samples.first())
                    .map(|s| s.v)
                    .expect("a size sample")
            })
            .collect()
    };
    let one = size(start + 3600);
    let two = size(start + 7200);
    assert!(one[1] > 10_000.0, "{one:?}");
    assert_eq!(one, two, "series, samples and bytes after one and two hours");
}

/// The error percentage of the reviews-v2 → ratings-v1 edge in a workload graph.
fn ratings_error_percent(m: &Meshlens, t: i64) -> f64 {
    let g = m.get(&format!("/api/namespaces/graph?namespaces=bookinfo&graphType=workload&queryTime={t}&duration=60s")).json();
    let nodes = g["elements"]["nodes"].as_array().cloned().unwrap_or_default();
    let id = |w: &str| {
        nodes.iter().find(|n| n["data"]["workload"] == w).map(|n| n["data"]["id"].clone())
    };
    let (src, dst) =
        (id("reviews-v2").expect("reviews-v2 node"), id("ratings-v1").expect("ratings-v1 node"));
    let edge = g["elements"]["edges"]
        .as_array()
        .and_then(|e| {
            e.iter().find(|e| e["data"]["source"] == src && e["data"]["target"] == dst).cloned()
        })
        .unwrap_or_else(|| panic!("no reviews-v2 -> ratings-v1 edge at {t}: {g}"));
    edge["data"]["traffic"]["rates"]["httpPercentErr"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0)
}

#[test]
fn the_error_burst_shows_when_the_cycle_says_and_not_otherwise() {
    // The model predicts the edge's error share at any time: 10 % normally, 55 % in the burst
    // (half of the 3 req/s fail on top of the usual 0.3 req/s of 503s).
    let model = Model::new(&Topology::load(&topology()).expect("topology"), 0);
    assert_eq!(model.cycle_steps as i64 * model.step, CYCLE);
    let now = now();
    let start = now - now.rem_euclid(CYCLE) - 3 * CYCLE;
    let s = simulator(start, "query");
    for cycle in 0..2 {
        let base = start + cycle * CYCLE;
        // (time, in the burst?) for whole one-minute windows before, inside and after.
        for (t, burst) in [
            (base + BURST_FROM - 60, false),
            (base + BURST_FROM + 60, true),
            (base + BURST_TO, true),
            (base + BURST_TO + 60, false),
            (base + 20 * 60, false),
        ] {
            let pct = ratings_error_percent(&s, t);
            let want = if burst { 55.0 } else { 10.0 };
            assert!(
                (pct - want).abs() < 0.05,
                "at minute {} of cycle {cycle}: {pct} %, want {want} %",
                (t - base) / 60
            );
        }
    }

    // appHealth reads the wall clock: one server whose cycle puts now two minutes into the
    // burst, one whose cycle puts now well after it (the 1-minute window sees none of it).
    let now = self::now();
    let inside = simulator(now - now.rem_euclid(15) - BURST_FROM - 120, "wall");
    let after = simulator(now - now.rem_euclid(15) - BURST_TO - 300, "wall");
    let health = |m: &Meshlens| {
        let h = m.get("/api/namespaces/bookinfo/apps/ratings/health?rateInterval=1m").json();
        let r = &h["requests"];
        (
            r["requestErrorCount"].as_f64().unwrap_or(-1.0),
            r["requestCount"].as_f64().unwrap_or(-1.0),
        )
    };
    // ratings-v1 takes 3 req/s over HTTP (0.3 answered 503; 1.65 in the burst) and 2 over
    // gRPC (HTTP 200 throughout); its own calls are TCP.
    let (err, total) = health(&inside);
    assert!(
        (total - 5.0).abs() < 1e-6 && (err - 1.65).abs() < 1e-6,
        "in the burst: {err} of {total}"
    );
    let (err, total) = health(&after);
    assert!(
        (total - 5.0).abs() < 1e-6 && (err - 0.3).abs() < 1e-6,
        "after the burst: {err} of {total}"
    );
}
