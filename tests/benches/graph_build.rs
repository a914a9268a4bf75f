//! Benchmark (a): one graph of 10,000 nodes and 30,000 edges, built in process from query
//! results, run through all nine bundled appenders (loaded through the plugin boundary),
//! marked and serialised to JSON by the service's own pipeline (`service::graph::render`,
//! what every graph request runs after its fetch) — next to serde_json serialising the same
//! output alone (through the `Serialize` impls; the service writes the same bytes directly).
//!
//! `cargo bench -p integration-tests --bench graph_build` prints the figures.

// The service's allocator (host/src/main.rs), so that the figures are the service's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use integration_tests::server::plugin_library;
use meshlens::{
    limits::Scope,
    service::{
        graph::{GraphAnswer, Job, render},
        graph_inputs::Inputs,
    },
};
use meshlens_traffic::{
    GraphOptions, GraphOutput, GraphScope, GraphSettings, GraphTarget, appender_run_order,
    traffic_plan,
};
use plugin_api::abi_stable::std_types::{RResult, RVec};
use plugin_api::{
    AppenderBox, AppenderData, ClusterData, Label, QueryResult, Sample, Series, WorkloadInfo,
};

const NAMESPACES: usize = 200;
const WORKLOADS: usize = 50; // per namespace: 10,000 nodes
const CALLS: usize = 3; // per workload: 30,000 edges
const RUNS: usize = 7;

const APPENDERS: [&str; 9] = [
    "appender-health",
    "appender-service-entry",
    "appender-dead-node",
    "appender-response-time",
    "appender-security-policy",
    "appender-unused-node",
    "appender-mesh",
    "appender-sidecars-check",
    "appender-ambient",
];

fn series(ns: &str, from: usize, to: usize, extra: &[(&str, &str)], v: f64) -> Series {
    let (sw, dw) = (format!("w{from}-v1"), format!("w{to}-v1"));
    let (sa, da) = (format!("w{from}"), format!("w{to}"));
    let mut l = vec![
        Label::new("source_workload_namespace", ns),
        Label::new("source_workload", sw.as_str()),
        Label::new("source_app", sa.as_str()),
        Label::new("source_version", "v1"),
        Label::new("destination_service_namespace", ns),
        Label::new("destination_workload_namespace", ns),
        Label::new("destination_service_name", da.as_str()),
        Label::new("destination_workload", dw.as_str()),
        Label::new("destination_app", da.as_str()),
        Label::new("destination_version", "v1"),
    ];
    l.extend(extra.iter().map(|(n, v)| Label::new(*n, *v)));
    Series {
        labels: l.into_iter().collect(),
        samples: vec![Sample { t: 0.0, v }].into_iter().collect(),
    }
}

fn all_series(extra: &[(&str, &str)], v: f64) -> RVec<Series> {
    let mut out = RVec::with_capacity(NAMESPACES * WORKLOADS * CALLS);
    for n in 0..NAMESPACES {
        let ns = format!("ns-{n}");
        for w in 0..WORKLOADS {
            for c in 1..=CALLS {
                out.push(series(&ns, w, (w + c) % WORKLOADS, extra, v));
            }
        }
    }
    out
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let appenders: Vec<(String, Arc<AppenderBox>)> = APPENDERS
        .iter()
        .flat_map(|p| {
            plugin_api::compliance::load_appenders(&plugin_library(p))
                .unwrap_or_else(|e| panic!("{p}: {e}"))
        })
        .map(|a| match a.name() {
            RResult::ROk(n) => (n.to_string(), Arc::new(a)),
            RResult::RErr(e) => panic!("{e}"),
        })
        .collect();
    let names: Vec<String> = appenders.iter().map(|(n, _)| n.clone()).collect();
    let namespaces: Vec<String> = (0..NAMESPACES).map(|n| format!("ns-{n}")).collect();
    let joined = namespaces.join(",");
    let opts = GraphOptions::parse(
        GraphTarget::Namespaces,
        &meshlens_params::query::query_string(&[("namespaces", &joined)]),
        1_700_000_000,
        &names,
        &GraphSettings::default(),
    )
    .expect("options");
    let req = opts.graph_request("istio_request_duration_milliseconds", 1.0);
    let order = appender_run_order(None, &names, &[]);
    let plan = traffic_plan(&opts);
    let mut traffic = vec![QueryResult::default(); plan.len()];
    traffic[2].series = all_series(&[("request_protocol", "http"), ("response_code", "200")], 1.5);

    let workloads: RVec<WorkloadInfo> = namespaces
        .iter()
        .flat_map(|ns| {
            (0..WORKLOADS).map(move |w| WorkloadInfo {
                namespace: ns.as_str().into(),
                name: format!("w{w}-v1").into(),
                kind: "Deployment".into(),
                labels: vec![Label::new("app", format!("w{w}")), Label::new("version", "v1")]
                    .into_iter()
                    .collect(),
                pod_count: 1,
                has_sidecar: w % 7 != 0,
                ..Default::default()
            })
        })
        .collect();
    let cluster = ClusterData { workloads, ..Default::default() };
    // Each appender gets results shaped like what it declared.
    let data: Vec<AppenderData> = order
        .iter()
        .map(|name| {
            let (_, a) = appenders.iter().find(|(n, _)| n == name).expect("loaded");
            let n_queries = match a.inputs(&req) {
                RResult::ROk(i) => i.queries.len(),
                RResult::RErr(e) => panic!("{e}"),
            };
            let mut results = vec![QueryResult::default(); n_queries];
            match name.as_str() {
                "responseTime" => results[2].series = all_series(&[], 12.0),
                "securityPolicy" => {
                    results[1].series =
                        all_series(&[("connection_security_policy", "mutual_tls")], 1.5)
                }
                // Its queries are the traffic's own request queries.
                "health" => {
                    results[0].series =
                        all_series(&[("request_protocol", "http"), ("response_code", "200")], 1.5)
                }
                _ => {}
            }
            AppenderData { cluster: cluster.clone(), results: results.into_iter().collect() }
        })
        .collect();

    // Shared, as the service's answers are (the render lets go of them after the build).
    let traffic: Vec<Arc<QueryResult>> = traffic.into_iter().map(Arc::new).collect();
    let job = Job {
        opts: opts.clone(),
        plan,
        req,
        appenders: order
            .iter()
            .map(|name| {
                let (_, a) = appenders.iter().find(|(n, _)| n == name).expect("loaded");
                (name.clone(), a.clone())
            })
            .collect(),
        view: GraphScope::default(),
        hidden: Default::default(),
    };

    let mut full = Vec::new();
    let mut ser = Vec::new();
    // build, appenders, markers + output + JSON (the service's own phases)
    let spent: Mutex<Vec<(&'static str, String, Duration)>> = Mutex::new(Vec::new());
    let phase = |p: &'static str, name: &str, took: Duration| {
        spent.lock().expect("phases").push((p, name.to_string(), took));
    };
    let mut size = 0;
    let (mut nodes, mut edges) = (0, 0);
    // Like the service's CPU pool: one thread per core; big graphs' helpers are its threads.
    let pool = rayon::ThreadPoolBuilder::new().build().expect("CPU pool");
    let scope = Scope::new(Duration::from_secs(3600));
    let telemetry = meshlens::telemetry::Metrics::new();
    pool.install(|| {
        for _ in 0..RUNS {
            // The appenders' inputs are ready-made here (the service takes them from the
            // answers after the build): handed over, not copied, inside the timing.
            let inputs = Inputs::unshared(data.clone());
            let t0 = Instant::now();
            let (answer, g) = render(
                &job,
                traffic.clone(),
                move || inputs,
                &|_| true,
                &scope,
                &phase,
                &telemetry,
            )
            .expect("rendered");
            let GraphAnswer::Json(json) = answer else { panic!("asked for JSON") };
            full.push(t0.elapsed());
            size = json.len();
            let out = GraphOutput::new(&opts, &g);
            (nodes, edges) = (out.nodes.len(), out.edges.len());
            let s0 = Instant::now();
            let again = serde_json::to_vec_pretty(&out).expect("serialise");
            ser.push(s0.elapsed());
            assert!(again == json, "the direct writer and serde_json disagree");
        }
    });
    let spent = spent.into_inner().expect("phases");
    let total = |p: &str| -> Duration { spent.iter().filter(|s| s.0 == p).map(|s| s.2).sum() };
    let phases = [total("build"), total("appender"), total("output")];
    let per_appender: Vec<Duration> = order
        .iter()
        .map(|n| spent.iter().filter(|s| s.0 == "appender" && &s.1 == n).map(|s| s.2).sum())
        .collect();
    // This host's speed drifts by a third between runs; the fastest run shows the code's cost.
    let (fmin, smin) = (
        full.iter().min().copied().unwrap_or_default(),
        ser.iter().min().copied().unwrap_or_default(),
    );
    let (f, s) = (median(full), median(ser));
    let per = |d: Duration| d.as_secs_f64() * 1000.0 / RUNS as f64;
    println!(
        "graph_build: {nodes} nodes, {edges} edges, {:.1} MB of JSON, median of {RUNS} runs",
        size as f64 / 1e6
    );
    println!(
        "  phases (mean ms): build {:.1}, nine appenders {:.1}, markers + output + JSON {:.1}",
        per(phases[0]),
        per(phases[1]),
        per(phases[2])
    );
    let each: Vec<String> =
        order.iter().zip(&per_appender).map(|(n, d)| format!("{n} {:.1}", per(*d))).collect();
    println!("  appenders (mean ms): {}", each.join(", "));
    println!(
        "  build + appenders + JSON: {:.1} ms, fastest {:.1} ms (target < 100 ms)",
        f.as_secs_f64() * 1000.0,
        fmin.as_secs_f64() * 1000.0
    );
    println!(
        "  serde_json of the same output alone: {:.1} ms, fastest {:.1} ms",
        s.as_secs_f64() * 1000.0,
        smin.as_secs_f64() * 1000.0
    );
    println!("  ratio: {:.2}x (target within 3x)", f.as_secs_f64() / s.as_secs_f64());
}
