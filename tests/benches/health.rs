//! Issue-4 figures: namespace health for a namespace of 500 apps against a real
//! Prometheus — the number of queries Prometheus executed per request (read from its own
//! `prometheus_engine_query_duration_seconds_count`) and the latency over HTTP.
//! Prints figures; asserts nothing about time.

use std::time::{Duration, Instant};

use integration_tests::{
    prometheus::{PromServer, fixture},
    server::{Meshlens, ensure_built, plugin_dir},
};

const APPS: usize = 500;

/// Manifests of namespace ns-0 with the generator's synthetic workloads w0-v1 .. w499-v1.
fn manifests(dir: &std::path::Path) {
    let mut y = String::from(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns-0\n  creationTimestamp: '2026-01-01T00:00:00Z'\n",
    );
    for i in 0..APPS {
        y.push_str(&format!(
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: w{i}-v1\n  namespace: ns-0\n  \
             creationTimestamp: '2026-01-01T00:00:00Z'\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: w{i}, version: v1}}\n  \
             template:\n    metadata:\n      labels: {{app: w{i}, version: v1}}\nstatus:\n  replicas: 1\n  availableReplicas: 1\n"
        ));
    }
    std::fs::write(dir.join("ns-0.yaml"), y).expect("write manifests");
}

fn main() {
    ensure_built();
    let f = fixture(&[
        "--topology",
        "synthetic",
        "--namespaces",
        "1",
        "--workloads",
        &APPS.to_string(),
        "--minutes",
        "20",
    ]);
    let prom = PromServer::start(&f);
    let cluster = tempfile::tempdir().expect("temp dir");
    manifests(cluster.path());
    let plugins = plugin_dir(&["metrics-prometheus"]);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [\"{}\"]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"{}\"]\n\
         [metrics]\nbackend = \"prometheus\"\n[metrics.prometheus]\nurl = \"{}\"\n",
        plugins.path().display(),
        cluster.path().display(),
        prom.url()
    );
    let m = Meshlens::start(&cfg, &[], vec![plugins]).expect("meshlens starts");
    let path = "/api/namespaces/ns-0/health";
    let warm = m.get(path);
    assert_eq!(warm.status, 200, "{}", warm.text());
    let entries = warm.json().as_object().map(|o| o.len()).unwrap_or(0);

    println!("namespace health, {APPS} apps ({entries} entries), real Prometheus on 127.0.0.1");
    for ty in ["app", "workload", "service"] {
        let before = prom.engine_queries();
        let r = m.get(&format!("{path}?type={ty}"));
        assert_eq!(r.status, 200);
        std::thread::sleep(Duration::from_millis(200));
        println!(
            "  type={ty}: queries Prometheus executed for one request: {}",
            prom.engine_queries() - before
        );
    }
    let mut times = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        let r = m.get(path);
        times.push(start.elapsed());
        assert_eq!(r.status, 200);
    }
    times.sort();
    println!(
        "  latency over HTTP (20 requests): min {:.1} ms, median {:.1} ms, p90 {:.1} ms",
        times[0].as_secs_f64() * 1e3,
        times[10].as_secs_f64() * 1e3,
        times[18].as_secs_f64() * 1e3
    );
}
