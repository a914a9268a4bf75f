//! Benchmark (issue #34): the 200-namespace workload graph (all bundled appenders) in full,
//! focused on one node (hops 1) and hidden down to one namespace, through meshlens on a real
//! Prometheus. Prints, per variant: answer bytes, the queries Prometheus executed for a fresh
//! query time, and the median time from request to parsed JSON with the metric answers
//! cached (the same queryTime asked before), over interleaved runs.
//!
//! Build once with `cargo build --release --workspace` and
//! `cargo build --release -p integration-tests --bench graph_scope`, then run the bench binary
//! directly (README "Benchmarks").

use std::time::{Duration, Instant};

use integration_tests::mesh::write_deployments;
use integration_tests::prometheus::{PromServer, fixture};
use integration_tests::server::{BUNDLED, Meshlens, plugin_dir};
use meshlens_params::query::query_string;
use meshlens_traffic::md5_hex;

const NAMESPACES: usize = 200;
const WORKLOADS: usize = 10;
const END: i64 = 1_700_000_000;
const RUNS: usize = 5;

fn path(time: i64, scope: &[(&str, &str)]) -> String {
    let list: Vec<String> = (0..NAMESPACES).map(|i| format!("ns-{i}")).collect();
    let mut q = vec![("namespaces", list.join(","))];
    q.extend(scope.iter().map(|(k, v)| (*k, v.to_string())));
    let pairs: Vec<(&str, &str)> = q.iter().map(|(k, v)| (*k, v.as_str())).collect();
    format!(
        "/api/namespaces/graph?{}&graphType=workload&queryTime={time}&duration=600s",
        query_string(&pairs)
    )
}

/// Request to parsed JSON: (time, bytes, nodes, edges).
fn timed(
    http: &reqwest::blocking::Client,
    m: &Meshlens,
    p: &str,
) -> (Duration, usize, usize, usize) {
    let t = Instant::now();
    let r = http.get(format!("http://{}{p}", m.addr)).send().expect("graph request");
    assert!(r.status().is_success(), "graph failed: {}", r.status());
    let body = r.bytes().expect("body");
    let v: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    let d = t.elapsed();
    let count = |k: &str| v["elements"][k].as_array().map_or(0, Vec::len);
    (d, body.len(), count("nodes"), count("edges"))
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

fn main() {
    let f = fixture(&[
        "--end",
        &END.to_string(),
        "--minutes",
        "15",
        "--topology",
        "synthetic",
        "--namespaces",
        &NAMESPACES.to_string(),
        "--workloads",
        &WORKLOADS.to_string(),
    ]);
    let prom = PromServer::start_logging_queries(&f);
    let cluster = tempfile::tempdir().expect("temp dir");
    write_deployments(cluster.path(), NAMESPACES, WORKLOADS);
    let plugins = plugin_dir(BUNDLED);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [{:?}]\n[metrics]\nbackend = \"prometheus\"\ntimeout = \"60s\"\n\
         [metrics.prometheus]\nurl = {:?}\n",
        plugins.path(),
        cluster.path(),
        prom.url()
    );
    let m = Meshlens::start(&cfg, &[], vec![plugins, cluster])
        .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"));
    integration_tests::server::install_crypto_provider();
    let http = reqwest::blocking::Client::builder().no_proxy().build().expect("HTTP client");

    let focus = md5_hex("wl_ns-0_w0-v1");
    let variants: [(&str, Vec<(&str, &str)>); 3] = [
        ("full", vec![]),
        ("focused (hops 1)", vec![("focus", focus.as_str()), ("hops", "1")]),
        ("hidden (ns != ns-0)", vec![("hide", "ns != ns-0")]),
    ];
    // Queries for a fresh query time, one per variant; that time then stays cached.
    let mut time = END;
    let mut rows = Vec::new();
    for (name, scope) in &variants {
        time -= 1;
        let before = prom.engine_queries();
        let (_, bytes, nodes, edges) = timed(&http, &m, &path(time, scope));
        rows.push((name, bytes, nodes, edges, prom.engine_queries() - before));
    }
    // Timed, cached: every variant at one already-asked time, interleaved.
    let cached = END - 1;
    let _ = timed(&http, &m, &path(cached, &[]));
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    for _ in 0..RUNS {
        for (i, (_, scope)) in variants.iter().enumerate() {
            times[i].push(timed(&http, &m, &path(cached, scope)).0);
        }
    }
    let full_ms = median(times[0].clone());
    let full_bytes = rows[0].1 as f64;
    println!(
        "graph_scope: {NAMESPACES} namespaces x {WORKLOADS} workloads, graphType=workload, all appenders; median of {RUNS} interleaved runs, answers cached"
    );
    for ((name, bytes, nodes, edges, queries), t) in rows.iter().zip(&times) {
        // Each run of a variant next to the full run before it shares the host's load at
        // that moment: the median of those ratios moves less than the ratio of medians.
        let mut paired: Vec<f64> =
            times[0].iter().zip(t).map(|(f, v)| f.as_secs_f64() / v.as_secs_f64()).collect();
        paired.sort_by(f64::total_cmp);
        let paired = paired[paired.len() / 2];
        let t = median(t.clone());
        println!(
            "  {name:<22} {nodes:>5} nodes {edges:>5} edges  {bytes:>9} bytes ({:5.1} % of full)  {t:7.1} ms to parsed JSON ({:4.1}x faster than full; median of paired runs {paired:.1}x)  {queries} queries executed (fresh time)",
            *bytes as f64 / full_bytes * 100.0,
            full_ms / t
        );
    }
    println!("  load average (1, 5, 15 min) at the end: {}", load_average());
}

/// The host's load average, as `uptime` shows it: on a shared host the figures move with it.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
