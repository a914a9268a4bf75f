//! Benchmark: the backend query rate of 20 viewers refreshing one graph every second, with
//! the answer cache (`[metrics] cache_ttl = "10s"`) and without it (`"0s"`).
//!
//! Prometheus counts what it executed in its own query log; only mesh queries (`istio_*`)
//! are counted. Prints, per setting: graph requests answered, queries executed, queries per
//! second and per graph, and the cache's hits and misses from meshlens's `/metrics`.
//!
//! `cargo bench -p integration-tests --bench graph_cache`

use std::time::{Duration, Instant};

use integration_tests::prometheus::{PromServer, fixture};
use integration_tests::server::{BUNDLED, Meshlens, plugin_dir, viewers, workspace_root};

const VIEWERS: usize = 20;
const SECONDS: u64 = 30;
const GRAPH: &str = "/api/namespaces/graph?namespaces=bookinfo&graphType=versionedApp";

fn mesh_queries(prom: &PromServer) -> usize {
    prom.executed_queries()
        .iter()
        .filter(|p| p["query"].as_str().is_some_and(|q| q.contains("istio_")))
        .count()
}

fn run(ttl: &str) {
    let f = fixture(&["--topology", "demo", "--minutes", "20"]);
    let prom = PromServer::start_logging_queries(&f);
    let dir = plugin_dir(BUNDLED);
    let demo = workspace_root().join("config").join("demo");
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [{demo:?}]\n\
         [metrics]\nbackend = \"prometheus\"\ncache_ttl = {ttl:?}\n[metrics.prometheus]\nurl = {:?}\n",
        dir.path(),
        prom.url()
    );
    let m = Meshlens::start(&cfg, &[], vec![dir]).expect("meshlens starts");
    assert_eq!(m.get(GRAPH).status, 200, "warm-up");
    // The query log is written asynchronously: wait for the warm-up's queries to show.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut before = mesh_queries(&prom);
    while before == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        before = mesh_queries(&prom);
    }
    let started = Instant::now();
    let answers = viewers(&m.addr, GRAPH, VIEWERS, SECONDS);
    let wall = started.elapsed();
    std::thread::sleep(Duration::from_secs(2));
    let sent = mesh_queries(&prom) - before;
    let ok = answers.iter().filter(|r| r.status == 200).count();
    let metrics = m.get("/metrics").text();
    let p = |name: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    println!(
        "cache_ttl {ttl:>3}: {VIEWERS} viewers x {SECONDS} s: {ok} graphs answered (of {}), {sent} queries executed by Prometheus \
         = {:.2} queries/s ({:.2} per graph); cache hits {}, misses {}",
        answers.len(),
        sent as f64 / wall.as_secs_f64(),
        sent as f64 / ok.max(1) as f64,
        p("meshlens_backend_cache_hits_total"),
        p("meshlens_backend_cache_misses_total"),
    );
}

fn main() {
    run("10s");
    run("0s");
}
