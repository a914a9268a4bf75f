use std::time::{Duration, Instant};

use plugin_api::{
    HistogramStat, Matcher, MetricQuery, QueryTime, RangeFunc,
    abi_stable::std_types::{RNone, RSome, RVec},
};

use super::{bucket_quantile, evaluate, extrapolated_rate};
use crate::parse::load_str;

fn q(metric: &str, func: RangeFunc, window: u64, t: i64) -> MetricQuery {
    MetricQuery {
        metric: metric.into(),
        matchers: RVec::new(),
        func,
        window_secs: window,
        group_by: RNone,
        histogram: HistogramStat::None,
        time: QueryTime::Instant(t),
    }
}

fn run(text: &str, query: &MetricQuery) -> plugin_api::QueryResult {
    let store = load_str(text, true).unwrap();
    evaluate(&store, query, Instant::now() + Duration::from_secs(10)).unwrap()
}

/// A counter that grows by `inc` every 15 s from `start` at t=1000.
fn counter(labels: &str, start: f64, inc: f64, n: usize) -> String {
    (0..n).map(|i| format!("c{labels} {} {}\n", start + inc * i as f64, 1000 + 15 * i)).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn rate_of_a_steady_counter_is_exact_and_drops_the_name() {
    let r = run(&counter("{a=\"x\"}", 1000.0, 30.0, 41), &q("c", RangeFunc::Rate, 60, 1300));
    assert_eq!(r.series.len(), 1);
    assert!(close(r.series[0].samples[0].v, 2.0), "{:?}", r.series[0].samples);
    assert_eq!(r.series[0].labels.iter().map(|(n, _)| n).collect::<Vec<_>>(), vec!["a"]);
    let inc = run(&counter("{a=\"x\"}", 1000.0, 30.0, 41), &q("c", RangeFunc::Increase, 60, 1307));
    assert!(close(inc.series[0].samples[0].v, 120.0), "{:?}", inc.series[0].samples);
}

#[test]
fn extrapolation_follows_prometheus() {
    // Samples at 10 s and 40 s in a window [0, 60]: both ends are more than 1.1 average
    // intervals (30 s) away? No: 10 < 33, 20 < 33, so extrapolate to both edges.
    let pts = [(10_000.0, 100.0), (40_000.0, 130.0)];
    let v = extrapolated_rate(&pts, 0.0, 60_000.0, false).unwrap();
    assert!(close(v, 30.0 * 60.0 / 30.0), "{v}");
    // A counter near zero: extrapolation stops at the zero point (5 s before the first sample).
    let pts = [(20_000.0, 5.0), (50_000.0, 35.0)];
    let v = extrapolated_rate(&pts, 0.0, 60_000.0, false).unwrap();
    assert!(close(v, 30.0 * (30.0 + 5.0 + 10.0) / 30.0), "{v}");
    // Far from the edges: only half an average interval is added on each side.
    let pts = [(100_000.0, 1000.0), (110_000.0, 1010.0), (120_000.0, 1020.0)];
    let v = extrapolated_rate(&pts, 0.0, 300_000.0, false).unwrap();
    assert!(close(v, 20.0 * (20.0 + 5.0 + 5.0) / 20.0), "{v}");
    assert!(extrapolated_rate(&pts[..1], 0.0, 60_000.0, true).is_none());
}

#[test]
fn counter_resets_are_added_back() {
    let text = "c 100 1000\nc 110 1015\nc 5 1030\nc 15 1045\n";
    // increase over exactly the sampled range [1000,1045] = 10 + (5 after reset from 110) + 10 = 25... plus 110.
    let r = run(text, &q("c", RangeFunc::Increase, 45, 1045));
    // raw delta 15-100 = -85, reset adds 110: 25; window edges coincide with the samples.
    assert!(close(r.series[0].samples[0].v, 25.0), "{:?}", r.series[0].samples);
    let r = run(text, &q("c", RangeFunc::Irate, 60, 1030));
    assert!(close(r.series[0].samples[0].v, 5.0 / 15.0), "{:?}", r.series[0].samples);
    let r = run(text, &q("c", RangeFunc::Irate, 60, 1045));
    assert!(close(r.series[0].samples[0].v, 10.0 / 15.0));
}

#[test]
fn instant_selectors_look_back_five_minutes() {
    let text = "g{a=\"1\"} 7 1000\n";
    let at = |t| run(text, &q("g", RangeFunc::None, 0, t));
    assert_eq!(at(1000).series[0].samples[0].v, 7.0);
    assert_eq!(at(1300).series.len(), 1, "exactly 5 minutes old is still seen");
    assert!(at(1301).series.is_empty());
    assert!(at(999).series.is_empty());
    assert_eq!(at(1000).series[0].labels.get("__name__"), Some("g"));
}

#[test]
fn regex_matchers_are_anchored_and_negative_matchers_work() {
    let text = "g{a=\"abc\"} 1 1000\ng{a=\"b\"} 2 1000\ng{c=\"z\"} 3 1000\n";
    let mut query = q("g", RangeFunc::None, 0, 1000);
    query.matchers = vec![Matcher::re("a", "b")].into();
    let r = run(text, &query);
    assert_eq!(r.series.len(), 1);
    assert_eq!(r.series[0].samples[0].v, 2.0);
    query.matchers = vec![Matcher::nre("a", "a.*")].into();
    let mut vals: Vec<f64> = run(text, &query).series.iter().map(|s| s.samples[0].v).collect();
    vals.sort_by(f64::total_cmp);
    assert_eq!(vals, vec![2.0, 3.0], "a series without the label has the empty value");
    query.matchers = vec![Matcher::ne("a", "b"), Matcher::eq("c", "")].into();
    let r = run(text, &query);
    assert_eq!(r.series.len(), 1);
    assert_eq!(r.series[0].samples[0].v, 1.0);
    query.matchers = vec![Matcher::re("a", "(")].into();
    let store = load_str(text, true).unwrap();
    let e = evaluate(&store, &query, Instant::now() + Duration::from_secs(1)).unwrap_err();
    assert_eq!(e.kind, plugin_api::ErrorKind::InvalidInput);
}

#[test]
fn sum_by_groups_and_range_queries_step() {
    let mut text = counter("{a=\"x\",b=\"1\"}", 1000.0, 15.0, 41);
    text += &counter("{a=\"x\",b=\"2\"}", 1000.0, 30.0, 41);
    text += &counter("{a=\"y\",b=\"1\"}", 1000.0, 45.0, 41);
    let mut query = q("c", RangeFunc::Rate, 60, 0);
    query.group_by = RSome(vec!["a".into()].into());
    query.time = QueryTime::Range { start: 1300, end: 1400, step: 50 };
    let r = run(&text, &query);
    assert_eq!(r.series.len(), 2);
    for s in r.series.iter() {
        assert_eq!(s.samples.iter().map(|p| p.t).collect::<Vec<_>>(), vec![1300.0, 1350.0, 1400.0]);
        let want = 3.0; // x: 1 + 2, y: 3
        assert!(s.samples.iter().all(|p| close(p.v, want)), "{:?}", s.samples);
        assert_eq!(s.labels.len(), 1);
    }
    query.group_by = RSome(RVec::new());
    let r = run(&text, &query);
    assert_eq!(r.series.len(), 1);
    assert!(r.series[0].labels.is_empty());
    assert!(close(r.series[0].samples[0].v, 6.0));
}

#[test]
fn bucket_quantile_matches_prometheus() {
    let mut b = vec![(1.0, 10.0), (2.0, 20.0), (f64::INFINITY, 20.0)];
    assert_eq!(bucket_quantile(0.5, &mut b), 1.0);
    assert_eq!(bucket_quantile(0.75, &mut b), 1.5);
    assert_eq!(bucket_quantile(1.0, &mut b), 2.0);
    // The rank falls into +Inf: the highest finite bound.
    let mut b = vec![(f64::INFINITY, 20.0), (1.0, 10.0)];
    assert_eq!(bucket_quantile(0.9, &mut b), 1.0);
    // No +Inf bucket, or no observations: NaN.
    assert!(bucket_quantile(0.5, &mut [(1.0, 10.0)]).is_nan());
    assert!(bucket_quantile(0.5, &mut [(1.0, 0.0), (f64::INFINITY, 0.0)]).is_nan());
    // Non-monotonic counts are lifted: (2, 5) becomes (2, 10).
    let mut b = vec![(1.0, 10.0), (2.0, 5.0), (4.0, 20.0), (f64::INFINITY, 20.0)];
    assert_eq!(bucket_quantile(0.75, &mut b), 3.0);
    assert_eq!(bucket_quantile(-0.1, &mut b), f64::NEG_INFINITY);
    assert_eq!(bucket_quantile(1.1, &mut b), f64::INFINITY);
}

#[test]
fn histogram_quantile_and_average_over_buckets() {
    let mut text = String::new();
    for (le, share) in [("1", 0.5), ("2", 1.0), ("+Inf", 1.0)] {
        text += &(0..21)
            .map(|i| {
                format!(
                    "h_bucket{{a=\"x\",le=\"{le}\"}} {} {}\n",
                    share * (100.0 + 10.0 * i as f64),
                    1000 + 15 * i
                )
            })
            .collect::<String>();
    }
    text += &(0..21)
        .map(|i| format!("h_sum{{a=\"x\"}} {} {}\n", 150.0 + 15.0 * i as f64, 1000 + 15 * i))
        .collect::<String>();
    text += &(0..21)
        .map(|i| format!("h_count{{a=\"x\"}} {} {}\n", 100.0 + 10.0 * i as f64, 1000 + 15 * i))
        .collect::<String>();
    let mut query = q("h", RangeFunc::Rate, 60, 1300);
    query.histogram = HistogramStat::Quantile(0.75);
    query.group_by = RSome(vec!["a".into()].into());
    let r = run(&text, &query);
    assert_eq!(r.series.len(), 1);
    assert!(close(r.series[0].samples[0].v, 1.5), "{:?}", r.series[0]);
    assert_eq!(r.series[0].labels.get("a"), Some("x"));
    assert!(r.series[0].labels.get("le").is_none());
    query.histogram = HistogramStat::Avg;
    let r = run(&text, &query);
    assert!(close(r.series[0].samples[0].v, 1.5), "{:?}", r.series[0]);
    query.group_by = RNone;
    query.histogram = HistogramStat::Quantile(0.25);
    let r = run(&text, &query);
    assert!(close(r.series[0].samples[0].v, 0.5), "{:?}", r.series[0]);
}

#[test]
fn a_passed_deadline_is_a_timeout() {
    let store = load_str(&counter("", 1000.0, 30.0, 41), true).unwrap();
    let query = q("c", RangeFunc::Rate, 60, 1300);
    let e = evaluate(&store, &query, Instant::now() - Duration::from_millis(1)).unwrap_err();
    assert_eq!(e.kind, plugin_api::ErrorKind::Timeout);
}

#[test]
fn evaluation_stops_past_the_series_cap() {
    let text: String = (0..5).map(|i| counter(&format!("{{a=\"{i}\"}}"), 0.0, 1.0, 41)).collect();
    let store = load_str(&text, true).unwrap();
    let query = q("c", RangeFunc::Rate, 60, 1300);
    let deadline = Instant::now() + Duration::from_secs(10);
    assert_eq!(super::evaluate_capped(&store, &query, deadline, 5).unwrap().series.len(), 5);
    let e = super::evaluate_capped(&store, &query, deadline, 4).unwrap_err();
    assert!(
        e.message.contains("too large") && e.message.contains("max_answer_series"),
        "{}",
        e.message
    );
}

#[test]
fn evaluation_honours_the_deadline() {
    let store = load_str(&counter("{a=\"x\"}", 0.0, 1.0, 41), true).unwrap();
    let mut query = q("c", RangeFunc::Rate, 60, 1300);
    query.time = QueryTime::Range { start: 1000, end: 1600, step: 15 };
    let e = evaluate(&store, &query, Instant::now() - Duration::from_millis(1)).unwrap_err();
    assert_eq!(e.kind, plugin_api::ErrorKind::Timeout);
}

#[test]
fn evaluation_stops_at_a_deadline_that_passes_while_it_runs() {
    // 8,192 series at 10,001 steps: far more work than the 30 ms the query is given.
    let text: String = (0..8192).map(|i| counter(&format!("{{a=\"{i}\"}}"), 0.0, 1.0, 5)).collect();
    let store = load_str(&text, true).unwrap();
    let mut query = q("c", RangeFunc::Rate, 60, 0);
    query.time = QueryTime::Range { start: 1000, end: 11_000, step: 1 };
    let deadline = Instant::now() + Duration::from_millis(30);
    let e = evaluate(&store, &query, deadline).unwrap_err();
    assert_eq!(e.kind, plugin_api::ErrorKind::Timeout, "{}", e.message);
    // It began with time left and gave up once the time was gone: stopped mid-evaluation.
    assert!(Instant::now() >= deadline);
}

#[test]
fn evaluation_stops_once_the_host_cancels_it() {
    // The same long evaluation, with a minute to run; the flag is set while it runs.
    let text: String = (0..8192).map(|i| counter(&format!("{{a=\"{i}\"}}"), 0.0, 1.0, 5)).collect();
    let store = load_str(&text, true).unwrap();
    let mut query = q("c", RangeFunc::Rate, 60, 0);
    query.time = QueryTime::Range { start: 1000, end: 11_000, step: 1 };
    let cancel = plugin_api::Cancel::new();
    let setter = {
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            cancel.cancel();
            Instant::now()
        })
    };
    let stop =
        super::Stop { deadline: Instant::now() + Duration::from_secs(60), cancel: Some(&cancel) };
    let e = super::evaluate_until(&store, &query, stop, usize::MAX).unwrap_err();
    let set = setter.join().unwrap();
    assert!(e.message.contains("cancelled"), "{}", e.message);
    // A figure, not an assertion: speed is for benchmarks.
    println!("stopped {:?} after the flag was set", Instant::now().saturating_duration_since(set));
    // Already set: even a small query stops at its first step.
    let small = load_str(&counter("", 0.0, 1.0, 41), true).unwrap();
    let e = super::evaluate_until(&small, &q("c", RangeFunc::Rate, 60, 1300), stop, usize::MAX)
        .unwrap_err();
    assert!(e.message.contains("cancelled"), "{}", e.message);
}
