//! The exposition-file parser against prometheus-parse on the same text: an hour of Istio
//! request counters at 15 s (1,000 series of 11 labels, 240 samples each, Prometheus text
//! format with millisecond timestamps), grouped by series as `meshlens simulate` writes it.
//! Prints the median time of each and the memory each holds once done: ours holds the
//! store the queries run on; prometheus-parse holds every sample with its own label map, and
//! still needs its samples interned into a store (the third line).
//!
//! `cargo bench -p metrics-store --bench parse`

use std::hint::black_box;
use std::time::{Duration, Instant};

use metrics_store::store::Store;

const RUNS: usize = 5;
const SERIES: usize = 1_000;
const SAMPLES: usize = 240;

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

/// Resident memory in MiB (Linux; 0 elsewhere).
fn rss_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0.0);
    pages * 4096.0 / (1 << 20) as f64
}

fn text() -> String {
    let mut out = String::new();
    for s in 0..SERIES {
        let (ns, src, dst) = (s % 20, s % 50, (s / 50) % 50);
        let head = format!(
            "istio_requests_total{{reporter=\"destination\",source_workload=\"w{src}-v1\",\
             source_workload_namespace=\"ns-{ns}\",source_app=\"w{src}\",destination_workload=\"w{dst}-v1\",\
             destination_workload_namespace=\"ns-{ns}\",destination_service_name=\"w{dst}\",\
             destination_service_namespace=\"ns-{ns}\",request_protocol=\"http\",response_code=\"{}\",\
             response_flags=\"-\"}}",
            [200, 404, 503][s % 3]
        );
        for i in 0..SAMPLES {
            let t = 1_700_000_000_000u64 + 15_000 * i as u64;
            out.push_str(&format!("{head} {} {t}\n", (s * 7 + i * 3) as f64 * 0.5));
        }
    }
    out
}

/// What replacing our parser would take: the crate's samples interned into a store.
fn into_store(scrape: &prometheus_parse::Scrape) -> Store {
    let mut store = Store::default();
    for s in &scrape.samples {
        let v = match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => continue,
        };
        let name = store.intern(&s.metric);
        let labels: Vec<(u32, u32)> =
            s.labels.iter().map(|(k, v)| (store.intern(k), store.intern(v))).collect();
        let id = store.series_id(name, labels);
        store.push(id, s.timestamp.timestamp_millis() as f64, v);
    }
    store.finish();
    store
}

fn scrape(text: &str) -> prometheus_parse::Scrape {
    prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("parse")
}

fn main() {
    let text = text();
    // Memory first, while the process's heap is fresh (freed pages are not given back, so
    // a later measure would see none): the crate's samples by resident memory, the store by
    // its own byte estimate.
    let base = rss_mib();
    let kept = scrape(&text);
    let crate_mib = rss_mib() - base;
    drop(kept);
    let ours_mib = metrics_store::parse::load_str(&text, false).expect("ours").approx_bytes()
        as f64
        / (1 << 20) as f64;
    let (mut ours, mut crate_only, mut crate_store) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let t = Instant::now();
        black_box(metrics_store::parse::load_str(&text, false).expect("ours"));
        ours.push(t.elapsed());
        let t = Instant::now();
        let sc = black_box(scrape(&text));
        crate_only.push(t.elapsed());
        let t = Instant::now();
        black_box(into_store(&sc));
        crate_store.push(t.elapsed() + crate_only[crate_only.len() - 1]);
    }
    // The same samples either way.
    let a = metrics_store::parse::load_str(&text, false).expect("ours");
    let b = into_store(&scrape(&text));
    assert_eq!(a.sample_count(), b.sample_count());
    assert_eq!(a.series.len(), b.series.len());
    drop((a, b));

    println!(
        "parse: {SERIES} series x {SAMPLES} samples, {:.1} MB of text, median of {RUNS} runs",
        text.len() as f64 / 1e6
    );
    println!(
        "  ours (into the store):               {:.1} ms, holds {ours_mib:.1} MiB",
        median(ours)
    );
    println!(
        "  prometheus-parse (its samples):      {:.1} ms, holds {crate_mib:.1} MiB",
        median(crate_only)
    );
    println!("  prometheus-parse + into the store:   {:.1} ms", median(crate_store));
}
