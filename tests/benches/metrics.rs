//! Embedded store (`openmetrics_file`) vs real Prometheus on the same synthetic mesh:
//! load time, memory per million samples, and query times. Prints figures; not run by
//! `cargo test`. Run: `cargo bench -p integration-tests --bench metrics`
//! (`METRICS_BENCH_NAMESPACES`, `METRICS_BENCH_MINUTES` change the size).

use std::time::{Duration, Instant};

use integration_tests::prometheus::{PromServer, configured_backend, fixture};
use plugin_api::{
    HistogramStat, Matcher, MetricQuery, MetricsBackendBox, QueryTime, RangeFunc,
    abi_stable::std_types::{RNone, RSome, RString},
};

const END: i64 = 1_700_000_000;

fn rss_kib(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

fn q(
    matchers: Vec<Matcher>,
    func: RangeFunc,
    group: Option<&[&str]>,
    time: QueryTime,
) -> MetricQuery {
    MetricQuery {
        metric: "istio_requests_total".into(),
        matchers: matchers.into(),
        func,
        window_secs: 60,
        group_by: match group {
            None => RNone,
            Some(g) => RSome(g.iter().map(|s| RString::from(*s)).collect()),
        },
        histogram: HistogramStat::None,
        time,
    }
}

fn time_query(b: &MetricsBackendBox, query: &MetricQuery, runs: u32) -> (Duration, usize) {
    let mut best = Duration::MAX;
    let mut series = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let r = b.query(query, 60_000).into_result().expect("query");
        best = best.min(t.elapsed());
        series = r.series.len();
    }
    (best, series)
}

fn main() {
    let namespaces = std::env::var("METRICS_BENCH_NAMESPACES").unwrap_or_else(|_| "40".into());
    let minutes = std::env::var("METRICS_BENCH_MINUTES").unwrap_or_else(|_| "60".into());
    let end = END.to_string();
    let args = [
        "--topology",
        "synthetic",
        "--namespaces",
        &namespaces,
        "--workloads",
        "10",
        "--minutes",
        &minutes,
        "--end",
        &end,
    ];
    let t = Instant::now();
    let f = fixture(&args);
    println!(
        "fixture (metrics_simulation::fixture + promtool, cached across runs): {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let text = std::fs::read_to_string(&f.openmetrics).expect("read fixture");
    let samples = text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).count();
    let file_mib = text.len() as f64 / (1 << 20) as f64;
    drop(text);

    let before = rss_kib("self");
    let t = Instant::now();
    let embedded = configured_backend(
        "metrics-openmetrics-file",
        "openmetrics_file",
        serde_json::json!({ "path": f.openmetrics.to_str().expect("utf-8 path"), "reload": false }),
    );
    let load = t.elapsed();
    let after = rss_kib("self");
    let mib = (after.saturating_sub(before)) as f64 / 1024.0;
    println!(
        "embedded store: {samples} samples from {file_mib:.0} MiB of text, loaded in {:.2} s; RSS +{mib:.1} MiB = {:.1} MiB per million samples",
        load.as_secs_f64(),
        mib / (samples as f64 / 1e6)
    );

    let t = Instant::now();
    let server = PromServer::start(&f);
    let prom_rss = server.pid().map(|p| rss_kib(&p.to_string())).unwrap_or(0) as f64 / 1024.0;
    println!(
        "prometheus: started in {:.2} s, RSS {prom_rss:.0} MiB (before queries)",
        t.elapsed().as_secs_f64()
    );
    let prometheus = configured_backend(
        "metrics-prometheus",
        "prometheus",
        serde_json::json!({ "url": server.url() }),
    );

    let range = QueryTime::Range { start: END - 1800, end: END, step: 15 };
    let src = || vec![Matcher::eq("reporter", "source")];
    let cases: Vec<(&str, MetricQuery)> = vec![
        (
            "instant rate, no grouping (all series)",
            q(vec![], RangeFunc::Rate, None, QueryTime::Instant(END - 60)),
        ),
        (
            "instant sum by (ns, workload, code)",
            q(
                src(),
                RangeFunc::Rate,
                Some(&["destination_workload_namespace", "destination_workload", "response_code"]),
                QueryTime::Instant(END - 60),
            ),
        ),
        (
            "instant one namespace, regex",
            q(
                vec![
                    Matcher::eq("destination_workload_namespace", "ns-1"),
                    Matcher::re("response_code", "5.."),
                ],
                RangeFunc::Rate,
                Some(&["destination_workload"]),
                QueryTime::Instant(END - 60),
            ),
        ),
        (
            "range 30m/15s sum by (ns)",
            q(src(), RangeFunc::Rate, Some(&["destination_workload_namespace"]), range),
        ),
        ("range 30m/15s irate total", q(vec![], RangeFunc::Irate, Some(&[]), range)),
    ];
    println!(
        "{:<42} {:>8} {:>12} {:>12}",
        "query (best of 5)", "series", "embedded ms", "prometheus ms"
    );
    for (name, query) in &cases {
        let (e, n) = time_query(&embedded, query, 5);
        let (p, m) = time_query(&prometheus, query, 5);
        assert_eq!(n, m, "{name}: the backends disagree on the number of series");
        println!(
            "{name:<42} {n:>8} {:>12.2} {:>12.2}",
            e.as_secs_f64() * 1e3,
            p.as_secs_f64() * 1e3
        );
    }
}
