//! Benchmark (b): end to end against a real Prometheus holding a synthetic mesh of 200
//! namespaces with 10 workloads each.
//!
//! For graphs of 1, 10 and 200 namespaces (`graphType=workload`, every bundled appender, a
//! fresh `queryTime` for each request so nothing can be reused) it prints the median time of
//! - the graph through meshlens;
//! - the raw replay: the very queries that request made, read back from Prometheus's own
//!   query log, sent again concurrently as plain HTTP requests whose bodies are read but
//!   not parsed (what Prometheus itself needs to answer them);
//! - the parsed side: the same structured queries through the Prometheus backend plugin,
//!   all at once (answers parsed into plugin-api types, no graph);
//!
//! and the ratios of the graph to each, measured side by side (one request of each kind in
//! turn, at the same query time). Also the number of queries Prometheus executed per graph
//! request (from its own `prometheus_engine_query_duration_seconds_count`), and the CPU time
//! meshlens and Prometheus spent per graph and per raw replay (from `/proc`): on a shared,
//! loaded host the wall-clock ratio moves with the load, the CPU each side needs does not.
//! Last, meshlens's resident memory after all of it, answer cache included.
//!
//! `MESHLENS_BENCH_NAMESPACES=1000` runs the same on a mesh of 1,000 namespaces (issue #34:
//! about 10,000 nodes, 29,000 edges, 19 MB of JSON; targets 1.15x of the raw replay, p50
//! under 3 s, peak RSS under 512 MiB); its fixture takes minutes to make the first time.
//! `MESHLENS_BENCH_RUNS=N` times each size N times instead of 15. `MESHLENS_BENCH_CALLS=3`
//! makes each workload call three others instead of one (1,000 namespaces: 30,000 edges,
//! the mesh the issue describes; its fixture is three times the size).
//! `MESHLENS_BENCH_ALLOCATOR=deployed` runs meshlens with the Deployment's allocator settings.
//!
//! Build once with `cargo build --release --workspace`, then run the bench binary directly
//! (README "Benchmarks").

use std::time::{Duration, Instant};

use integration_tests::load::proc_status;
use integration_tests::mesh::write_deployments;
use integration_tests::prometheus::{PromServer, configured_backend, fixture};
use integration_tests::server::{BUNDLED, Meshlens, plugin_dir, plugin_library};
use meshlens_traffic::{GraphOptions, GraphSettings, GraphTarget, traffic_queries};
use plugin_api::abi_stable::std_types::RResult;
use plugin_api::{MetricQuery, MetricsBackendBox};

/// The mesh's size unless `MESHLENS_BENCH_NAMESPACES` says otherwise.
const DEFAULT_NAMESPACES: usize = 200;
const WORKLOADS: usize = 10;
const END: i64 = 1_700_000_000;
// Medians of 15: on a 2-core host, one run in seven was often off by 30%.
const DEFAULT_RUNS: usize = 15;

/// A positive count from the environment variable `name`, or `default`.
fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).filter(|n| *n > 0).unwrap_or(default)
}

/// Runs per size unless `MESHLENS_BENCH_RUNS` says otherwise: on a shared VM the paired
/// ratio of the 1,000-namespace graph moved by ±0.04 between runs of 15.
fn runs() -> usize {
    env_count("MESHLENS_BENCH_RUNS", DEFAULT_RUNS)
}

fn namespaces() -> usize {
    env_count("MESHLENS_BENCH_NAMESPACES", DEFAULT_NAMESPACES)
}

/// CPU time (user + system) a process has used so far, in ms; 0 where `/proc` is missing.
fn cpu_ms(pid: Option<u32>) -> f64 {
    let Some(stat) = pid.and_then(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
    else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces): utime and stime are the 12th
    // and 13th, in clock ticks of 10 ms (USER_HZ is 100 on Linux).
    let fields: Vec<&str> =
        stat.rsplit_once(')').map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks: f64 =
        fields.get(11..13).map_or(0.0, |f| f.iter().filter_map(|t| t.parse::<f64>().ok()).sum());
    ticks * 10.0
}

/// CPU ms of meshlens and Prometheus across `f`.
fn cpu_during<T>(pids: (Option<u32>, Option<u32>), f: impl FnOnce() -> T) -> (T, f64, f64) {
    let (m0, p0) = (cpu_ms(pids.0), cpu_ms(pids.1));
    let out = f();
    (out, cpu_ms(pids.0) - m0, cpu_ms(pids.1) - p0)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn ns_list(n: usize) -> String {
    (0..n).map(|i| format!("ns-{i}")).collect::<Vec<_>>().join(",")
}

fn graph_path(n: usize, time: i64) -> String {
    format!(
        "/api/namespaces/graph?namespaces={}&graphType=workload&queryTime={time}&duration=600s",
        ns_list(n)
    )
}

/// The structured queries one graph request plans: traffic families plus the bundled appenders'.
fn planned(n: usize, time: i64) -> Vec<MetricQuery> {
    let list = ns_list(n);
    let names: Vec<String> = Vec::new();
    let q =
        meshlens_params::query::query_string(&[("namespaces", &list), ("graphType", "workload")]);
    let opts =
        GraphOptions::parse(GraphTarget::Namespaces, &q, time, &names, &GraphSettings::default())
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

/// The parsed side: the structured queries through the backend plugin, concurrently.
fn parsed(backend: &MetricsBackendBox, qs: &[MetricQuery]) -> Duration {
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

/// The PromQL texts of the queries Prometheus logged after the first `skip` entries, and
/// how many entries there are.
fn logged_queries(prom: &PromServer, skip: usize) -> (Vec<String>, usize) {
    let log = prom.executed_queries();
    let queries = log[skip.min(log.len())..]
        .iter()
        .filter_map(|p| p["query"].as_str().map(str::to_string))
        .collect();
    (queries, log.len())
}

/// The raw replay: each query as its own concurrent HTTP request; bodies read, not parsed.
fn raw_replay(
    http: &reqwest::blocking::Client,
    base: &str,
    queries: &[String],
    time: i64,
) -> Duration {
    let t = Instant::now();
    std::thread::scope(|s| {
        for q in queries {
            s.spawn(move || {
                let r = http
                    .get(format!("{base}/api/v1/query"))
                    .query(&[
                        ("query", q.as_str()),
                        ("time", &time.to_string()),
                        ("timeout", "60s"),
                    ])
                    .send()
                    .expect("raw query");
                assert!(r.status().is_success(), "raw query failed: {}", r.status());
                let body = r.bytes().expect("raw body");
                assert!(!body.is_empty());
            });
        }
    });
    t.elapsed()
}

/// The graph as a client sees it: one GET on a kept-alive connection, body read, not
/// parsed (as the raw replay reads Prometheus's bodies). The test helper's `get` also parses
/// the body and checks it against the API document, which is the test's cost, not the
/// service's; it is used once per size, for the warm-up.
fn timed_graph(http: &reqwest::blocking::Client, m: &Meshlens, path: &str) -> (Duration, usize) {
    let t = Instant::now();
    let r = http.get(format!("http://{}{path}", m.addr)).send().expect("graph request");
    assert!(r.status().is_success(), "graph failed: {}", r.status());
    let body = r.bytes().expect("graph body");
    (t.elapsed(), body.len())
}

/// When Prometheus started and finished each of the last `count` queries in its log, in ms
/// from the first start: how far apart a request's queries were sent and how long the last
/// ran. From the log's `ts` (written as the query ends) less its `execTotalTime`.
fn timeline(prom: &PromServer, count: usize) -> (f64, f64) {
    let log = prom.query_log();
    let spans: Vec<(f64, f64)> = log[log.len().saturating_sub(count)..]
        .iter()
        .filter_map(|e| {
            let end = chrono::DateTime::parse_from_rfc3339(e["ts"].as_str()?).ok()?;
            let end = end.timestamp_micros() as f64 / 1000.0;
            let exec = e["stats"]["timings"]["execTotalTime"].as_f64()? * 1000.0;
            Some((end - exec, end))
        })
        .collect();
    let first = spans.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
    let last_start = spans.iter().map(|s| s.0).fold(f64::NEG_INFINITY, f64::max);
    let last_end = spans.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
    (last_start - first, last_end - first)
}

/// meshlens's own metrics: every sample line's series (name and labels) and value.
fn self_metrics(m: &Meshlens) -> std::collections::HashMap<String, f64> {
    let r = m.get("/metrics");
    assert_eq!(r.status, 200, "meshlens /metrics");
    r.text()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// Where the graphs' time went between two scrapes, per graph request (ms): the whole
/// request, the mean backend query (sent concurrently, so not additive), build, all
/// appenders, output.
fn phases(
    before: &std::collections::HashMap<String, f64>,
    after: &std::collections::HashMap<String, f64>,
    graphs: usize,
) -> String {
    let delta = |prefix: &str, filter: &str| -> f64 {
        after
            .iter()
            .filter(|(k, _)| k.starts_with(prefix) && k.contains(filter))
            .map(|(k, v)| v - before.get(k).copied().unwrap_or(0.0))
            .sum()
    };
    let per_graph = |phase: &str| {
        delta("meshlens_graph_phase_duration_seconds_sum", &format!("phase=\"{phase}\"")) * 1000.0
            / graphs as f64
    };
    // Only the appender phase names an appender.
    let per_graph_of = |appender: &str| {
        delta("meshlens_graph_phase_duration_seconds_sum", &format!("appender=\"{appender}\""))
            * 1000.0
            / graphs as f64
    };
    let request = delta("meshlens_api_request_duration_seconds_sum", "graphNamespaces") * 1000.0
        / graphs as f64;
    let query = delta("meshlens_backend_query_duration_seconds_sum", "")
        / delta("meshlens_backend_query_duration_seconds_count", "").max(1.0)
        * 1000.0;
    // Each appender on its own, slowest first.
    let mut names: Vec<&str> = after
        .keys()
        .filter(|k| {
            k.starts_with("meshlens_graph_phase_duration_seconds_sum")
                && k.contains("phase=\"appender\"")
        })
        .filter_map(|k| k.split("appender=\"").nth(1)?.split('"').next())
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut each: Vec<(f64, &str)> = names.into_iter().map(|a| (per_graph_of(a), a)).collect();
    each.sort_by(|a, b| b.0.total_cmp(&a.0));
    let each: Vec<String> = each.iter().map(|(t, a)| format!("{a} {t:.1}")).collect();
    format!(
        "request {request:.1}, fetch {:.1} (mean backend query {query:.1}), prepare {:.1}, build {:.1}, appenders {:.1} ({}), output {:.1}",
        per_graph("fetch"),
        per_graph("prepare"),
        per_graph("build"),
        per_graph("appender"),
        each.join(", "),
        per_graph("output")
    )
}

/// Calls per workload unless `MESHLENS_BENCH_CALLS` says otherwise.
fn calls() -> usize {
    env_count("MESHLENS_BENCH_CALLS", 1)
}

fn main() {
    let total = namespaces();
    let (end, namespaces, workloads, calls) =
        (END.to_string(), total.to_string(), WORKLOADS.to_string(), calls().to_string());
    let mut args = vec![
        "--end",
        &end,
        "--minutes",
        "15",
        "--topology",
        "synthetic",
        "--namespaces",
        &namespaces,
        "--workloads",
        &workloads,
    ];
    // Only when asked: the one-call mesh keeps its arguments, and its cached fixture.
    if calls != "1" {
        args.extend(["--calls", calls.as_str()]);
    }
    let f = fixture(&args);
    let prom = PromServer::start_logging_queries(&f);
    let cluster = tempfile::tempdir().expect("temp dir");
    write_deployments(cluster.path(), total, WORKLOADS);
    let plugins = plugin_dir(BUNDLED);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [{:?}]\n[metrics]\nbackend = \"prometheus\"\ntimeout = \"60s\"\n\
         [metrics.prometheus]\nurl = {:?}\n",
        plugins.path(),
        cluster.path(),
        prom.url()
    );
    // `MESHLENS_BENCH_ALLOCATOR=deployed`: the allocator settings of the image and the
    // Deployment (memory handed back at once), instead of the allocators' defaults.
    let deployed = std::env::var("MESHLENS_BENCH_ALLOCATOR").is_ok_and(|v| v == "deployed");
    let env = if deployed { integration_tests::server::DEPLOYED_ALLOCATOR_ENV } else { &[] };
    let m = Meshlens::start(&cfg, env, vec![plugins, cluster])
        .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"));
    let backend = configured_backend(
        "metrics-prometheus",
        "prometheus",
        serde_json::json!({ "url": prom.url() }),
    );
    integration_tests::server::install_crypto_provider();
    let http = reqwest::blocking::Client::builder().no_proxy().build().expect("HTTP client");
    let base = prom.url();

    // Warm-up (also detects the duration histogram once).
    let r = m.get(&graph_path(total, END));
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    let (nodes, edges) = (
        v["elements"]["nodes"].as_array().map_or(0, Vec::len),
        v["elements"]["edges"].as_array().map_or(0, Vec::len),
    );
    println!(
        "graph_prometheus: {total} namespaces x {WORKLOADS} workloads; graph of {nodes} nodes, {edges} edges (graphType=workload, all appenders)"
    );

    // A fresh query time for every request: one second earlier each time.
    let mut time = END;
    let mut fresh = || {
        time -= 1;
        time
    };
    for n in [1, 10, total] {
        // The queries this graph makes, as Prometheus logged them.
        let (_, seen) = logged_queries(&prom, 0);
        let before = prom.engine_queries();
        let r = m.get(&graph_path(n, fresh()));
        assert_eq!(r.status, 200, "{}", r.text());
        let executed = prom.engine_queries() - before;
        let (queries, _) = logged_queries(&prom, seen);
        assert!(!queries.is_empty(), "Prometheus logged no queries");
        let _ = raw_replay(&http, &base, &queries, fresh());
        let _ = parsed(&backend, &planned(n, fresh()));

        let (mut graph, mut raw, mut prs) = (Vec::new(), Vec::new(), Vec::new());
        // Spread of the queries' starts and the time to the last one's end, summed over runs.
        let (mut graph_spread, mut raw_spread) = ((0.0, 0.0), (0.0, 0.0));
        let mut body_bytes = 0;
        // CPU ms: meshlens and Prometheus during the graphs, Prometheus during the replays.
        let (mut graph_cpu, mut graph_prom_cpu, mut raw_prom_cpu) = (0.0, 0.0, 0.0);
        let pids = (Some(m.pid()), prom.pid());
        let scraped = self_metrics(&m);
        for _ in 0..runs() {
            let t = fresh();
            let ((d, bytes), mc, pc) =
                cpu_during(pids, || timed_graph(&http, &m, &graph_path(n, t)));
            graph.push(d);
            body_bytes = bytes;
            (graph_cpu, graph_prom_cpu) = (graph_cpu + mc, graph_prom_cpu + pc);
            let (s, e) = timeline(&prom, queries.len());
            graph_spread = (graph_spread.0 + s, graph_spread.1 + e);
            let (d, _, pc) = cpu_during(pids, || raw_replay(&http, &base, &queries, t));
            raw.push(d);
            raw_prom_cpu += pc;
            let (s, e) = timeline(&prom, queries.len());
            raw_spread = (raw_spread.0 + s, raw_spread.1 + e);
            prs.push(parsed(&backend, &planned(n, t)));
        }
        let phases = phases(&scraped, &self_metrics(&m), runs());
        // Each graph and its replay ran back to back, so their ratio shares the host's load at
        // that moment; the median of those ratios moves less with a busy host than the ratio
        // of the two medians does.
        let mut paired: Vec<f64> =
            graph.iter().zip(&raw).map(|(g, r)| g.as_secs_f64() / r.as_secs_f64()).collect();
        paired.sort_by(f64::total_cmp);
        let paired = paired[paired.len() / 2];
        let (g, r, p) = (median(graph), median(raw), median(prs));
        println!(
            "  {n:>3} namespace(s), {} queries ({executed} executed by Prometheus): graph {:.1} ms, raw replay {:.1} ms, parsed {:.1} ms; \
             ratio vs raw replay {:.2}x (target 1.25x; median of paired runs {paired:.2}x), vs parsed {:.2}x",
            queries.len(),
            ms(g),
            ms(r),
            ms(p),
            g.as_secs_f64() / r.as_secs_f64(),
            g.as_secs_f64() / p.as_secs_f64(),
        );
        println!("        meshlens's own metrics, mean ms per graph: {phases}");
        let runs = runs() as f64;
        println!(
            "        Prometheus's query log, mean ms: graph: last query started {:.1} after the first, last ended {:.1} after the first start; \
             raw replay: {:.1} and {:.1}; graph body {body_bytes} bytes",
            graph_spread.0 / runs,
            graph_spread.1 / runs,
            raw_spread.0 / runs,
            raw_spread.1 / runs
        );
        println!(
            "        CPU ms per request: graph: meshlens {:.0}, Prometheus {:.0}; raw replay: Prometheus {:.0}",
            graph_cpu / runs,
            graph_prom_cpu / runs,
            raw_prom_cpu / runs
        );
    }
    // Every answer above had a time of its own, so this is what a user opening big graphs
    // with explicit times leaves behind, answer cache included (mimalloc's defaults; the
    // Deployment's settings hand memory back sooner).
    let mib = |field| proc_status(m.pid(), field).map_or(0.0, |kib| kib as f64 / 1024.0);
    println!(
        "  meshlens resident after all of it: {:.0} MiB, peak {:.0} MiB",
        mib("VmRSS"),
        mib("VmHWM")
    );
    println!("  load average (1, 5, 15 min) at the end: {}", load_average());
}

/// The host's load average, as `uptime` shows it: on a shared host the figures move with it.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
