//! Benchmark (b): end to end against a real Prometheus holding a synthetic mesh of 200
//! namespaces with 10 workloads each.
//!
//! Prints: the graph latency for all 200 namespaces through meshlens; the time of the same
//! queries sent straight to Prometheus (through the Prometheus backend plugin, all at once);
//! and the number of queries Prometheus executed per graph request for 1, 10 and 200
//! namespaces (read from Prometheus' own `prometheus_engine_query_duration_seconds_count`).
//!
//! `cargo bench -p integration-tests --bench graph_prometheus`

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use integration_tests::prometheus::{PromServer, configured_backend, fixture, http_get};
use integration_tests::server::{BUNDLED, Meshlens, plugin_dir, plugin_library};
use meshlens_traffic::{GraphOptions, GraphSettings, GraphTarget, traffic_queries};
use plugin_api::abi_stable::std_types::RResult;
use plugin_api::{MetricQuery, MetricsBackendBox};

const NAMESPACES: usize = 200;
const WORKLOADS: usize = 10;
const END: &str = "1700000000";
const RUNS: usize = 5;

fn manifests(dir: &std::path::Path) {
    let mut y = String::new();
    for n in 0..NAMESPACES {
        let _ = write!(y, "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns-{n}\n");
        for w in 0..WORKLOADS {
            let _ = write!(
                y,
                "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: w{w}-v1\n  namespace: ns-{n}\n\
                 spec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: w{w}, version: v1}}\n  template:\n    \
                 metadata:\n      labels: {{app: w{w}, version: v1}}\n    spec:\n      containers:\n      - name: w\n        image: x\n\
                 status:\n  replicas: 1\n  availableReplicas: 1\n"
            );
        }
    }
    std::fs::write(dir.join("synthetic.yaml"), y).expect("write manifests");
}

fn engine_queries(prom: &PromServer) -> f64 {
    let (_, text) = http_get(prom.port(), "/metrics").expect("prometheus /metrics");
    text.lines()
        .filter(|l| l.starts_with("prometheus_engine_query_duration_seconds_count") && l.contains("slice=\"inner_eval\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ns_list(n: usize) -> String {
    (0..n).map(|i| format!("ns-{i}")).collect::<Vec<_>>().join(",")
}

/// The queries one graph request plans: traffic families plus the bundled appenders'.
fn planned(n: usize, end: i64) -> Vec<MetricQuery> {
    let list = ns_list(n);
    let names: Vec<String> = Vec::new();
    let opts = GraphOptions::parse(GraphTarget::Namespaces, |k| (k == "namespaces").then(|| list.clone()), end, &names, &GraphSettings::default())
        .expect("options");
    let req = opts.graph_request("istio_request_duration_milliseconds", 1.0);
    let mut qs = traffic_queries(&opts);
    for p in BUNDLED.iter().filter(|p| p.starts_with("appender-")) {
        for a in plugin_api::compliance::load_appenders(&plugin_library(p)).expect("appender") {
            if let RResult::ROk(i) = a.inputs(&req) {
                qs.extend(i.queries);
            }
        }
    }
    qs
}

fn direct(backend: &MetricsBackendBox, qs: &[MetricQuery]) -> Duration {
    let t = Instant::now();
    std::thread::scope(|s| {
        for q in qs {
            s.spawn(move || match backend.query(q, 60_000) {
                RResult::ROk(_) => {}
                RResult::RErr(e) => panic!("direct query failed: {e}"),
            });
        }
    });
    t.elapsed()
}

fn main() {
    let f = fixture(&[
        "--end",
        END,
        "--minutes",
        "15",
        "--topology",
        "synthetic",
        "--namespaces",
        &NAMESPACES.to_string(),
        "--workloads",
        &WORKLOADS.to_string(),
    ]);
    let prom = PromServer::start(&f);
    let cluster = tempfile::tempdir().expect("temp dir");
    manifests(cluster.path());
    let plugins = plugin_dir(BUNDLED);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [{:?}]\n[metrics]\nbackend = \"prometheus\"\ntimeout = \"60s\"\n\
         [metrics.prometheus]\nurl = {:?}\n",
        plugins.path(),
        cluster.path(),
        prom.url()
    );
    let m = Meshlens::start(&cfg, &[], vec![plugins, cluster]).unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"));
    let end: i64 = END.parse().expect("end");
    let path = |n: usize| format!("/api/namespaces/graph?namespaces={}&queryTime={end}&duration=600s", ns_list(n));

    // Warm-up (also detects the duration histogram once).
    let r = m.get(&path(NAMESPACES));
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    let (nodes, edges) = (v["elements"]["nodes"].as_array().map_or(0, Vec::len), v["elements"]["edges"].as_array().map_or(0, Vec::len));

    let mut counts = Vec::new();
    for n in [1, 10, NAMESPACES] {
        let before = engine_queries(&prom);
        let r = m.get(&path(n));
        assert_eq!(r.status, 200);
        counts.push((n, engine_queries(&prom) - before));
    }

    let mut graph_times = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let r = m.get(&path(NAMESPACES));
        graph_times.push(t.elapsed());
        assert_eq!(r.status, 200);
    }

    let backend = configured_backend("metrics-prometheus", "prometheus", serde_json::json!({ "url": prom.url() }));
    // The steady state: the duration histogram was detected by the warm-up request.
    let qs = planned(NAMESPACES, end);
    let _ = direct(&backend, &qs);
    let direct_times: Vec<Duration> = (0..RUNS).map(|_| direct(&backend, &qs)).collect();

    let (g, d) = (median(graph_times), median(direct_times));
    println!("graph_prometheus: {NAMESPACES} namespaces x {WORKLOADS} workloads; graph of {nodes} nodes, {edges} edges");
    println!("  graph through meshlens (median of {RUNS}): {:.1} ms", g.as_secs_f64() * 1000.0);
    println!("  the same {} queries straight to Prometheus, concurrently: {:.1} ms", qs.len(), d.as_secs_f64() * 1000.0);
    println!("  ratio: {:.2}x (target within 1.25x)", g.as_secs_f64() / d.as_secs_f64());
    for (n, c) in counts {
        println!("  queries Prometheus executed for a graph of {n} namespace(s): {c}");
    }
}
