//! The embedded store (`openmetrics_file`) and real Prometheus (through the `prometheus`
//! backend) answer the same structured queries on the same data with the same numbers.

use std::sync::Arc;

use integration_tests::prometheus::{Fixture, PromServer, configured_backend, fixture};
use plugin_api::{
    HistogramStat, Label, Matcher, MetricQuery, MetricsBackendBox, QueryResult, QueryTime,
    RangeFunc,
    abi_stable::std_types::{RNone, RSome, RString},
    label_value,
};

/// Fixed end so the fixture is cached across runs; 30 minutes of the demo mesh.
const END: i64 = 1_700_000_000;
const ARGS: &[&str] = &["--end", "1700000000", "--minutes", "30"];
const TIMEOUT_MS: u64 = 30_000;

fn data() -> Arc<Fixture> {
    fixture(ARGS)
}

struct Pair {
    embedded: MetricsBackendBox,
    prometheus: MetricsBackendBox,
    _server: PromServer,
}

fn pair() -> Pair {
    let f = data();
    let server = PromServer::start(&f);
    let prometheus = configured_backend(
        "metrics-prometheus",
        "prometheus",
        serde_json::json!({ "url": server.url() }),
    );
    let embedded = configured_backend(
        "metrics-openmetrics-file",
        "openmetrics_file",
        serde_json::json!({ "path": f.openmetrics.to_str().unwrap() }),
    );
    Pair { embedded, prometheus, _server: server }
}

fn query(
    metric: &str,
    matchers: Vec<Matcher>,
    func: RangeFunc,
    window: u64,
    group: Option<&[&str]>,
) -> MetricQuery {
    MetricQuery {
        metric: metric.into(),
        matchers: matchers.into(),
        func,
        window_secs: window,
        group_by: match group {
            None => RNone,
            Some(g) => RSome(g.iter().map(|s| RString::from(*s)).collect()),
        },
        histogram: HistogramStat::None,
        time: QueryTime::Instant(END - 60),
    }
}

/// One series as compared: sorted labels and (time, value) samples.
type Points = (Vec<Label>, Vec<(f64, f64)>);

fn sorted(mut r: QueryResult) -> Vec<Points> {
    let mut out: Vec<_> = r
        .series
        .iter_mut()
        .map(|s| (s.labels.to_labels(), s.samples.iter().map(|p| (p.t, p.v)).collect::<Vec<_>>()))
        .collect();
    for (labels, _) in out.iter_mut() {
        labels.sort();
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// Runs `q` on both backends and compares; returns the (sorted) answer.
fn compare(p: &Pair, q: &MetricQuery) -> Vec<Points> {
    let e = p
        .embedded
        .query(q, TIMEOUT_MS)
        .into_result()
        .unwrap_or_else(|e| panic!("embedded {q:?}: {e}"));
    let r = p
        .prometheus
        .query(q, TIMEOUT_MS)
        .into_result()
        .unwrap_or_else(|e| panic!("prometheus {q:?}: {e}"));
    let (e, r) = (sorted(e), sorted(r));
    let names = |v: &Vec<Points>| v.iter().map(|s| s.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&e), names(&r), "label sets differ for {q:?}");
    for ((labels, es), (_, rs)) in e.iter().zip(&r) {
        assert_eq!(
            es.len(),
            rs.len(),
            "sample count differs for {labels:?} in {q:?}\nembedded {es:?}\nprometheus {rs:?}"
        );
        for (x, y) in es.iter().zip(rs) {
            assert_eq!(x.0, y.0, "timestamps differ for {labels:?} in {q:?}");
            assert!(
                same(x.1, y.1),
                "values differ at {} for {labels:?} in {q:?}: embedded {} prometheus {}",
                x.0,
                x.1,
                y.1
            );
        }
    }
    e
}

fn total(answer: &[Points]) -> f64 {
    answer.iter().map(|(_, s)| s[0].1).sum()
}

/// The rate the generator emitted for the rows that pass `keep`.
fn expected_rate(
    f: &Fixture,
    keep: impl Fn(&serde_json::Value, &serde_json::Value) -> bool,
) -> f64 {
    let mut sum = 0.0;
    for edge in f.expected["edges"].as_array().unwrap() {
        for row in edge["series"].as_array().unwrap() {
            if keep(edge, row) {
                sum += row["rate"].as_f64().unwrap_or(0.0);
            }
        }
    }
    sum
}

#[test]
fn counters_rate_irate_increase_instant_and_grouped() {
    let p = pair();
    let f = data();
    let src = || vec![Matcher::eq("reporter", "source")];
    for func in [RangeFunc::Rate, RangeFunc::Irate, RangeFunc::Increase] {
        for window in [60, 300, 37] {
            let per_series = compare(&p, &query("istio_requests_total", src(), func, window, None));
            assert!(per_series.len() > 10, "{func:?}: {}", per_series.len());
            compare(
                &p,
                &query(
                    "istio_requests_total",
                    src(),
                    func,
                    window,
                    Some(&["destination_service_name", "response_code"]),
                ),
            );
            let all = compare(&p, &query("istio_requests_total", src(), func, window, Some(&[])));
            assert_eq!(all.len(), 1);
            assert!(all[0].0.is_empty(), "plain sum has no labels: {:?}", all[0].0);
            if func == RangeFunc::Rate {
                let want = expected_rate(&f, |_, row| row["reporter"] == "source");
                assert!(
                    same(total(&all), want) || (total(&all) - want).abs() < 1e-9 * want,
                    "{} vs {want}",
                    total(&all)
                );
            }
        }
    }
    // An evaluation time between samples, and one after the data (windows run off the end).
    for t in [END - 607, END + 40, END + 400] {
        let mut q = query(
            "istio_requests_total",
            vec![],
            RangeFunc::Rate,
            120,
            Some(&["destination_workload"]),
        );
        q.time = QueryTime::Instant(t);
        compare(&p, &q);
    }
}

#[test]
fn matchers_regex_negative_and_by_name() {
    let p = pair();
    let f = data();
    let cases: Vec<Vec<Matcher>> = vec![
        vec![
            Matcher::re("destination_service_name", "reviews|ratings"),
            Matcher::nre("response_code", "2.."),
        ],
        vec![Matcher::ne("source_workload", "unknown"), Matcher::eq("reporter", "destination")],
        // Anchoring: "review" alone must match nothing.
        vec![Matcher::re("destination_service_name", "review")],
        vec![Matcher::re("response_code", "5.*"), Matcher::ne("response_flags", "-")],
        // A label absent on HTTP rows: `!=` keeps them, `=~ ".+"` drops them.
        vec![Matcher::ne("grpc_response_status", "0")],
        vec![Matcher::re("grpc_response_status", ".+")],
    ];
    let mut answers = Vec::new();
    for m in cases {
        answers.push(compare(
            &p,
            &query(
                "istio_requests_total",
                m,
                RangeFunc::Rate,
                300,
                Some(&["destination_workload", "response_code"]),
            ),
        ));
    }
    assert!(answers[2].is_empty(), "regex is anchored: {:?}", answers[2]);
    assert!(!answers[0].is_empty() && !answers[3].is_empty() && !answers[5].is_empty());
    let uf = expected_rate(&f, |_, row| {
        row["response_flags"] != "-"
            && row["response_code"].as_str().is_some_and(|c| c.starts_with('5'))
    });
    assert!(same(total(&answers[3]), uf), "{} vs {uf}", total(&answers[3]));
    // The metric chosen by a name matcher; the name stays on instant values of gauges.
    let q = query(
        "",
        vec![Matcher::re("__name__", "istio_tcp_.*_bytes_total")],
        RangeFunc::None,
        0,
        None,
    );
    let tcp = compare(&p, &q);
    assert_eq!(tcp.len(), 4, "sent and received, two reporters: {tcp:?}");
    let q = query(
        "",
        vec![Matcher::re("__name__", "istio_tcp_sent_.*")],
        RangeFunc::Rate,
        60,
        Some(&["reporter"]),
    );
    let sent = compare(&p, &q);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!(sent.iter().all(|(_, s)| same(s[0].1, 2000.0)), "{sent:?}");
    // Without a name two metrics collide: both refuse the query.
    let q = query(
        "",
        vec![Matcher::re("__name__", "istio_tcp_.*_bytes_total")],
        RangeFunc::Rate,
        60,
        None,
    );
    for b in [&p.embedded, &p.prometheus] {
        let e = b.query(&q, TIMEOUT_MS).into_result().unwrap_err();
        assert_eq!(e.kind, plugin_api::ErrorKind::InvalidInput, "{e}");
        assert!(e.message.contains("same labelset"), "{e}");
    }
    let gauges = compare(
        &p,
        &query("go_goroutines", vec![Matcher::eq("app", "ratings")], RangeFunc::None, 0, None),
    );
    assert_eq!(gauges.len(), 1);
    assert_eq!(label_value(&gauges[0].0, "__name__"), Some("go_goroutines"));
    compare(
        &p,
        &query(
            "",
            vec![Matcher::re("__name__", "envoy_cluster_.*_membership_(healthy|total)")],
            RangeFunc::None,
            0,
            None,
        ),
    );
    compare(
        &p,
        &query(
            "envoy_cluster_outbound_9080__reviews_bookinfo_svc_cluster_local_membership_healthy",
            vec![],
            RangeFunc::None,
            0,
            Some(&[]),
        ),
    );
}

#[test]
fn histograms_quantiles_and_averages() {
    let p = pair();
    let base = "istio_request_duration_milliseconds";
    for q in [0.0, 0.5, 0.95, 0.99, 1.0] {
        for group in [
            None,
            Some(&["destination_workload"][..]),
            Some(&[][..]),
            Some(&["source_app", "response_code"][..]),
        ] {
            let mut m =
                query(base, vec![Matcher::eq("reporter", "source")], RangeFunc::Rate, 60, group);
            m.histogram = HistogramStat::Quantile(q);
            let a = compare(&p, &m);
            assert!(!a.is_empty());
        }
    }
    for group in [None, Some(&["destination_workload"][..]), Some(&[][..])] {
        for func in [RangeFunc::Rate, RangeFunc::Irate, RangeFunc::Increase] {
            let mut m = query(base, vec![Matcher::eq("reporter", "destination")], func, 300, group);
            m.histogram = HistogramStat::Avg;
            assert!(!compare(&p, &m).is_empty());
        }
    }
    for metric in
        ["istio_request_bytes", "istio_response_bytes", "vertx_http_server_responseTime_seconds"]
    {
        let mut m =
            query(metric, vec![], RangeFunc::Rate, 120, Some(&["version", "destination_workload"]));
        m.histogram = HistogramStat::Quantile(0.9);
        assert!(!compare(&p, &m).is_empty(), "{metric}");
    }
}

#[test]
fn range_queries_match_step_by_step() {
    let p = pair();
    let f = data();
    let ranges = [
        (END - 1800, END, 60),
        (END - 900, END - 1, 47),
        // Starting before the data and ending after it.
        (f.start() - 300, END + 600, 120),
    ];
    for (start, end, step) in ranges {
        let mut q = query(
            "istio_requests_total",
            vec![Matcher::eq("reporter", "source")],
            RangeFunc::Rate,
            60,
            Some(&["destination_workload"]),
        );
        q.time = QueryTime::Range { start, end, step };
        let a = compare(&p, &q);
        assert!(a.iter().all(|(_, s)| s.len() > 1), "{a:?}");
        q.func = RangeFunc::Irate;
        compare(&p, &q);
        q.histogram = HistogramStat::Quantile(0.95);
        q.metric = "istio_request_duration_milliseconds".into();
        compare(&p, &q);
        q.histogram = HistogramStat::Avg;
        compare(&p, &q);
        let mut g = query("go_memstats_alloc_bytes", vec![], RangeFunc::None, 0, None);
        g.time = QueryTime::Range { start, end, step };
        compare(&p, &g);
    }
}

#[test]
fn bad_regex_is_invalid_input_on_both() {
    let p = pair();
    let q = query(
        "istio_requests_total",
        vec![Matcher::re("response_code", "(")],
        RangeFunc::Rate,
        60,
        None,
    );
    for b in [&p.embedded, &p.prometheus] {
        let e = b.query(&q, TIMEOUT_MS).into_result().unwrap_err();
        assert_eq!(e.kind, plugin_api::ErrorKind::InvalidInput, "{e}");
    }
}
