//! Benchmark (issue #32): one instance reading two clusters against one reading a single
//! cluster of the same size, on the same store.
//!
//! One real Prometheus holds two meshes of `MESHLENS_BENCH_NAMESPACES` (default 200)
//! namespaces of a `MESHLENS_BENCH_WORKLOADS`-workload chain each (default 10), 15 minutes
//! ending at 1700000000, written by the simulation model (`metrics_simulation`, request
//! counters only, like the synthetic fixture):
//! - `one-0 ..`: every namespace in the home cluster (`Kubernetes`);
//! - `two-0 ..`: half as many namespaces, each in both clusters (`Kubernetes` and `west`, the
//!   same workloads with the other `source_cluster` / `destination_cluster`).
//!
//! Three instances read it: **1 x N** (home cluster holding `one-*`), **2 x N/2** (home and a
//! snapshot remote `west`, each holding `two-*`), and **1 x N/2** (the home cluster of the
//! second alone). For the first two it prints the graph of all their namespaces
//! (`graphType=workload`, bundled appenders, a fresh `queryTime` each run): nodes, edges,
//! median time, and the queries Prometheus executed per graph. Then each instance's resident
//! memory (VmRSS) after its graphs: the difference between 2 x N/2 and 1 x N/2 is what the
//! second cluster costs; between 2 x N/2 and 1 x N, what spreading the same objects over two
//! clusters costs.
//!
//! The graph spans both clusters only with the multi-cluster graph (issue #32's graph part):
//! without it the two clusters' series of a namespace fall into the same nodes. A smoke run:
//! `MESHLENS_BENCH_NAMESPACES=4 MESHLENS_BENCH_WORKLOADS=3`. Build once with
//! `cargo build --release --workspace`, then run the bench binary (README "Benchmarks").

use std::time::{Duration, Instant};

use integration_tests::load::proc_status;
use integration_tests::mesh::write_named_deployments;
use integration_tests::prometheus::{PromServer, from_openmetrics};
use integration_tests::server::{BUNDLED, Meshlens, plugin_dir};
use metrics_simulation::{Model, Topology, openmetrics};

const END: i64 = 1_700_000_000;
const MINUTES: i64 = 15;
const RUNS: usize = 7;

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).filter(|n| *n > 0).unwrap_or(default)
}

/// A chain of `workloads` workloads in each namespace `<prefix>-N`, called from outside the
/// mesh, 10 requests/s on every hop; a sample a minute (enough for 10-minute rates).
fn chain_topology(prefix: &str, namespaces: usize, workloads: usize) -> String {
    let mut t = String::from("step_seconds = 60\ncycle_minutes = 30\n");
    for n in 0..namespaces {
        for w in 0..workloads {
            t.push_str(&format!(
                "[[workload]]\nnamespace = \"{prefix}-{n}\"\nname = \"w{w}-v1\"\napp = \"w{w}\"\nversion = \"v1\"\n"
            ));
        }
        for w in 0..workloads {
            let from =
                if w == 0 { "unknown".to_string() } else { format!("{prefix}-{n}/w{}-v1", w - 1) };
            t.push_str(&format!(
                "[[edge]]\nfrom = \"{from}\"\nto = \"{prefix}-{n}/w{w}-v1\"\nservice = \"w{w}\"\nprotocol = \"http\"\n\
                 responses = [{{ code = \"200\", rate = 9.0 }}, {{ code = \"500\", rate = 1.0 }}]\n"
            ));
        }
    }
    t
}

/// The model's request counters only (the graph's traffic; the synthetic fixture has no
/// histograms either), with every known cluster label set to `cluster`.
fn counters(topology: &str, cluster: &str) -> Model {
    let t = Topology::parse(topology).expect("the bench topology");
    let mut m = Model::new(&t, END - 3600);
    m.series.retain(|s| s.name == "istio_requests_total");
    for s in &mut m.series {
        for (k, v) in s.labels.iter_mut() {
            if (k == "source_cluster" || k == "destination_cluster") && v != "unknown" {
                *v = cluster.to_string();
            }
        }
    }
    m
}

fn graph_path(prefix: &str, namespaces: usize, time: i64) -> String {
    let list: Vec<String> = (0..namespaces).map(|i| format!("{prefix}-{i}")).collect();
    format!(
        "/api/namespaces/graph?namespaces={}&graphType=workload&queryTime={time}&duration=600s",
        list.join(",")
    )
}

/// A meshlens on the store: home snapshot `home`, and `west` as a snapshot remote when given.
fn instance(prom: &PromServer, home: &std::path::Path, west: Option<&std::path::Path>) -> Meshlens {
    let plugins = plugin_dir(BUNDLED);
    let remote = west.map_or(String::new(), |w| {
        format!("[[cluster.remotes]]\nname = \"west\"\nsource = \"snapshot\"\nsnapshot = [{w:?}]\n")
    });
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [{home:?}]\n{remote}\
         [metrics]\nbackend = \"prometheus\"\ntimeout = \"60s\"\n[metrics.prometheus]\nurl = {:?}\n",
        plugins.path(),
        prom.url()
    );
    Meshlens::start(&cfg, &[], vec![plugins]).unwrap_or_else(|e| panic!("meshlens: {e:?}"))
}

/// Graphs of `prefix`'s namespaces: (nodes, edges, median time, queries per graph).
fn graphs(
    m: &Meshlens,
    prom: &PromServer,
    prefix: &str,
    namespaces: usize,
    time: &mut i64,
) -> (usize, usize, Duration, f64) {
    let r = m.get(&graph_path(prefix, namespaces, *time));
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    let count = |k: &str| v["elements"][k].as_array().map_or(0, Vec::len);
    let (nodes, edges) = (count("nodes"), count("edges"));
    let http = reqwest::blocking::Client::builder().no_proxy().build().expect("HTTP client");
    let before = prom.engine_queries();
    let mut times = Vec::new();
    for _ in 0..RUNS {
        *time -= 1; // nothing can come from the answer cache
        let t = Instant::now();
        let r = http
            .get(format!("http://{}{}", m.addr, graph_path(prefix, namespaces, *time)))
            .send()
            .expect("graph request");
        assert!(r.status().is_success(), "graph failed: {}", r.status());
        let body = r.bytes().expect("graph body");
        assert!(!body.is_empty());
        times.push(t.elapsed());
    }
    let queries = (prom.engine_queries() - before) / RUNS as f64;
    times.sort();
    (nodes, edges, times[times.len() / 2], queries)
}

fn rss_mib(m: &Meshlens) -> f64 {
    proc_status(m.pid(), "VmRSS").map_or(f64::NAN, |k| k as f64 / 1024.0)
}

fn main() {
    let total = env_count("MESHLENS_BENCH_NAMESPACES", 200);
    let half = (total / 2).max(1);
    let workloads = env_count("MESHLENS_BENCH_WORKLOADS", 10);
    integration_tests::server::install_crypto_provider();

    // One store: the one-cluster mesh, and the two-cluster mesh's series once per cluster.
    let one = counters(&chain_topology("one", total, workloads), "Kubernetes");
    let two = chain_topology("two", half, workloads);
    let mut store = one.clone();
    store.series.extend(counters(&two, "Kubernetes").series);
    store.series.extend(counters(&two, "west").series);
    let mut text = Vec::new();
    openmetrics::write(&store, END - MINUTES * 60, END, &mut text).expect("write the store");
    let text = String::from_utf8(text).expect("UTF-8");
    let fixture = from_openmetrics(&text, END - MINUTES * 60, END);
    let prom = PromServer::start(&fixture);
    println!(
        "multicluster: {} series in one Prometheus; 1 x {total} and 2 x {half} namespaces of {workloads} workloads",
        store.series.len()
    );

    let dirs: Vec<tempfile::TempDir> =
        (0..3).map(|_| tempfile::tempdir().expect("temp dir")).collect();
    write_named_deployments(dirs[0].path(), "one", total, workloads);
    write_named_deployments(dirs[1].path(), "two", half, workloads);
    write_named_deployments(dirs[2].path(), "two", half, workloads);

    let mut time = END;
    let single = instance(&prom, dirs[0].path(), None);
    let (n1, e1, t1, q1) = graphs(&single, &prom, "one", total, &mut time);
    println!(
        "1 cluster x {total}: graph of {n1} nodes, {e1} edges: median {:.1} ms, {q1:.1} queries",
        t1.as_secs_f64() * 1000.0
    );
    let double = instance(&prom, dirs[1].path(), Some(dirs[2].path()));
    let (n2, e2, t2, q2) = graphs(&double, &prom, "two", half, &mut time);
    println!(
        "2 clusters x {half}: graph of {n2} nodes, {e2} edges: median {:.1} ms, {q2:.1} queries \
         (time x{:.2}, queries x{:.2} of one cluster)",
        t2.as_secs_f64() * 1000.0,
        t2.as_secs_f64() / t1.as_secs_f64().max(1e-9),
        q2 / q1.max(1e-9)
    );
    if n2 != n1 {
        println!(
            "  (the graphs differ in size: {n2} vs {n1} nodes; without the multi-cluster graph both clusters' series share nodes)"
        );
    }
    let home_only = instance(&prom, dirs[1].path(), None);
    let _ = graphs(&home_only, &prom, "two", half, &mut time);
    let (r1, r2, rh) = (rss_mib(&single), rss_mib(&double), rss_mib(&home_only));
    println!(
        "RSS: 1 x {total} {r1:.1} MiB, 2 x {half} {r2:.1} MiB, 1 x {half} {rh:.1} MiB: \
         the second cluster {:.1} MiB, two clusters instead of one of the same size {:+.1} MiB",
        r2 - rh,
        r2 - r1
    );
}
