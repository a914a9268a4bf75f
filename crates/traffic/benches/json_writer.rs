//! The graph's direct JSON writer against serde_json over the same output's `Serialize`
//! impls: 10,000 nodes and 30,000 edges (the graph_build benchmark's graph, without its
//! appenders), on one thread and on a pool of one thread per core as the service runs it.
//! Prints the median of each and checks the bytes are equal.
//!
//! `cargo bench -p meshlens-traffic --features serde-reference --bench json_writer`

use std::hint::black_box;
use std::time::{Duration, Instant};

use meshlens_traffic::{
    GraphOptions, GraphOutput, GraphSettings, GraphTarget, build_graph, finish, traffic_plan,
};
use plugin_api::abi_stable::std_types::RVec;
use plugin_api::{Label, QueryResult, Sample, Series};

const NAMESPACES: usize = 200;
const WORKLOADS: usize = 50;
const CALLS: usize = 3;
const RUNS: usize = 11;

fn series(ns: &str, from: usize, to: usize) -> Series {
    let (sw, dw) = (format!("w{from}-v1"), format!("w{to}-v1"));
    let (sa, da) = (format!("w{from}"), format!("w{to}"));
    let l = vec![
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
        Label::new("request_protocol", "http"),
        Label::new("response_code", "200"),
    ];
    Series {
        labels: l.into_iter().collect(),
        samples: vec![Sample { t: 0.0, v: 1.5 }].into_iter().collect(),
    }
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

fn main() {
    let namespaces: Vec<String> = (0..NAMESPACES).map(|n| format!("ns-{n}")).collect();
    let query = meshlens_params::query::query_string(&[("namespaces", &namespaces.join(","))]);
    let opts = GraphOptions::parse(
        GraphTarget::Namespaces,
        &query,
        1_700_000_000,
        &[],
        &GraphSettings::default(),
    )
    .expect("options");
    let plan = traffic_plan(&opts);
    let mut traffic = vec![QueryResult::default(); plan.len()];
    let mut all = RVec::with_capacity(NAMESPACES * WORKLOADS * CALLS);
    for ns in &namespaces {
        for w in 0..WORKLOADS {
            for c in 1..=CALLS {
                all.push(series(ns, w, (w + c) % WORKLOADS));
            }
        }
    }
    traffic[2].series = all;
    let mut g = build_graph(&opts, &plan, &traffic);
    finish(&opts, &mut g, &|_| true);
    let out = GraphOutput::new(&opts, &g);

    let measure = || {
        let (mut direct, mut serde) = (Vec::new(), Vec::new());
        let mut size = 0;
        for _ in 0..RUNS {
            let t = Instant::now();
            let a = black_box(out.to_json());
            direct.push(t.elapsed());
            let t = Instant::now();
            let b = black_box(serde_json::to_vec_pretty(&out).expect("serialise"));
            serde.push(t.elapsed());
            assert!(a == b, "the direct writer and serde_json disagree");
            size = a.len();
        }
        (median(direct), median(serde), size)
    };
    let (d1, s1, size) = measure();
    let pool = rayon::ThreadPoolBuilder::new().build().expect("pool");
    let threads = pool.current_num_threads();
    let (dp, sp, _) = pool.install(measure);
    println!(
        "json_writer: {} nodes, {} edges, {:.1} MB of JSON, median of {RUNS} runs",
        out.nodes.len(),
        out.edges.len(),
        size as f64 / 1e6
    );
    println!("  one thread:      direct {d1:.1} ms, serde_json {s1:.1} ms ({:.2}x)", s1 / d1);
    println!(
        "  pool of {threads}:       direct {dp:.1} ms, serde_json {sp:.1} ms ({:.2}x)",
        sp / dp
    );
}
