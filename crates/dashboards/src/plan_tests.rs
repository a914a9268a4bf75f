use plugin_api::{AggregationDef, ChartTemplate, Label, Sample, Series};

use super::*;

fn chart(name: &str, metric: &str, dt: DataType, aggs: &[(&str, &str)]) -> ChartTemplate {
    ChartTemplate {
        name: name.into(),
        unit: "u".into(),
        spans: 4,
        metric_name: metric.into(),
        data_type: dt,
        aggregations: aggs
            .iter()
            .map(|(l, d)| AggregationDef { label: (*l).into(), display_name: (*d).into() })
            .collect(),
    }
}

fn template() -> DashboardTemplate {
    DashboardTemplate {
        name: "t".into(),
        runtime: "R".into(),
        title: "My dashboard".into(),
        discover_on: "".into(),
        namespace: "".into(),
        charts: vec![
            chart("Gauge", "g", DataType::Raw, &[("path", "Path")]),
            chart("Counter", "c_total", DataType::Rate, &[("method", "Method"), ("path", "Path")]),
            chart("Hist", "h_seconds", DataType::Histogram, &[("code", "Code")]),
        ]
        .into(),
    }
}

fn params(pairs: &[(&str, &str)]) -> CustomParams {
    CustomParams::parse(&meshlens_params::query::query_string(pairs)).unwrap()
}

#[test]
fn each_data_type_becomes_its_query() {
    let p = params(&[
        ("quantiles[]", "0.5"),
        ("quantiles[]", "0.99"),
        ("byLabels[]", "path"),
        ("version", "v1"),
        ("step", "10"),
        ("duration", "100"),
    ]);
    let plan = custom_dashboard_plan(&template(), "bookinfo", "reviews", &p, 1005);
    assert_eq!(plan.queries.len(), 5, "raw + rate + avg + 2 quantiles");
    let want_matchers = vec![
        Matcher::eq("namespace", "bookinfo"),
        Matcher::eq("app", "reviews"),
        Matcher::eq("version", "v1"),
    ];
    for q in &plan.queries {
        assert_eq!(q.matchers.to_vec(), want_matchers);
        assert_eq!(q.group_by, Some(vec!["path".into()].into()).into());
        assert_eq!(q.time, QueryTime::Range { start: 900, end: 1005, step: 10 });
    }
    assert_eq!((plan.queries[0].metric.as_str(), plan.queries[0].func), ("g", RangeFunc::None));
    assert_eq!(
        (plan.queries[1].metric.as_str(), plan.queries[1].func, plan.queries[1].window_secs),
        ("c_total", RangeFunc::Rate, 60)
    );
    assert_eq!(plan.queries[2].histogram, HistogramStat::Avg);
    assert_eq!(plan.queries[3].histogram, HistogramStat::Quantile(0.5));
    assert_eq!(plan.queries[4].histogram, HistogramStat::Quantile(0.99));
    assert_eq!(
        plan.charts[2].data,
        ChartData::Histogram(vec![("avg".into(), 2), ("0.5".into(), 3), ("0.99".into(), 4)])
    );
}

#[test]
fn irate_no_avg_no_version() {
    let p = params(&[("rateFunc", "irate"), ("avg", "false"), ("rateInterval", "2m")]);
    let plan = custom_dashboard_plan(&template(), "ns", "a", &p, 1000);
    assert_eq!(plan.queries.len(), 2, "no histogram statistic asked for");
    assert_eq!((plan.queries[1].func, plan.queries[1].window_secs), (RangeFunc::Irate, 120));
    assert_eq!(plan.queries[0].matchers.len(), 2);
    assert_eq!(
        plan.queries[0].group_by.clone().into_option().map(|g| g.len()),
        Some(0),
        "plain sum"
    );
    assert_eq!(plan.charts[2].data, ChartData::Histogram(vec![]));
}

#[test]
fn aggregations_are_the_union_deduplicated_and_sorted() {
    let plan = custom_dashboard_plan(&template(), "ns", "a", &params(&[]), 1000);
    let names: Vec<_> = plan.aggregations.iter().map(|a| a.display_name.as_str()).collect();
    assert_eq!(names, ["Code", "Method", "Path"]);
}

fn series(labels: &[(&str, &str)], samples: &[(f64, f64)]) -> Series {
    Series {
        labels: labels.iter().map(|(k, v)| Label::new(*k, *v)).collect(),
        samples: samples.iter().map(|(t, v)| Sample { t: *t, v: *v }).collect(),
    }
}

#[test]
fn results_are_shaped_into_the_dashboard_json() {
    let p = params(&[("quantiles[]", "0.95")]);
    let plan = custom_dashboard_plan(&template(), "ns", "a", &p, 1000);
    let results: Vec<Result<QueryResult, PluginError>> = (0..plan.queries.len())
        .map(|i| Ok(QueryResult { series: vec![series(&[], &[(1000.0, i as f64 + 0.5)])].into() }))
        .collect();
    let v = plan.assemble(results).unwrap();
    assert_eq!(v["title"], "My dashboard");
    assert_eq!(v["aggregations"][0], json!({"label": "code", "displayName": "Code"}));
    assert_eq!(
        v["charts"][0],
        json!({"name": "Gauge", "unit": "u", "spans": 4, "metric": {"matrix": [{"metric": {}, "values": [[1000, "0.5"]]}]}})
    );
    assert_eq!(v["charts"][1]["metric"]["matrix"][0]["values"][0][1], "1.5");
    assert_eq!(v["charts"][2]["histogram"]["avg"]["matrix"][0]["values"][0][1], "2.5");
    assert_eq!(v["charts"][2]["histogram"]["0.95"]["matrix"][0]["values"][0][1], "3.5");
    assert!(v["charts"][2].get("metric").is_none());
}

#[test]
fn a_store_that_is_down_is_a_503_and_other_failures_500() {
    let plan = custom_dashboard_plan(&template(), "ns", "a", &params(&[]), 1000);
    let n = plan.queries.len();
    let mut r: Vec<Result<QueryResult, PluginError>> =
        (0..n).map(|_| Ok(QueryResult::default())).collect();
    r[0] = Err(PluginError::internal("bad"));
    r[1] = Err(PluginError::unavailable("connection refused"));
    let e = plan.assemble(r).unwrap_err();
    assert_eq!(e.status(), 503);
    assert!(e.to_string().contains("connection refused"));
    let mut r: Vec<Result<QueryResult, PluginError>> =
        (0..n).map(|_| Ok(QueryResult::default())).collect();
    r[2] = Err(PluginError::timeout("deadline"));
    assert_eq!(plan.assemble(r).unwrap_err().status(), 503);
    let mut r: Vec<Result<QueryResult, PluginError>> =
        (0..n).map(|_| Ok(QueryResult::default())).collect();
    r[0] = Err(PluginError::internal("boom"));
    assert_eq!(plan.assemble(r).unwrap_err().status(), 500);
}

#[tokio::test]
async fn execute_sends_every_query_once_and_concurrently() {
    use std::sync::{Arc, Mutex};
    let p = params(&[("quantiles[]", "0.5"), ("quantiles[]", "0.9"), ("quantiles[]", "0.99")]);
    let plan = custom_dashboard_plan(&template(), "ns", "a", &p, 1000);
    let in_flight = Arc::new(Mutex::new((0usize, 0usize, 0usize))); // (now, max, total)
    let f = in_flight.clone();
    let v = plan
        .execute(move |_q| {
            let f = f.clone();
            async move {
                {
                    let mut g = f.lock().unwrap();
                    g.0 += 1;
                    g.1 = g.1.max(g.0);
                    g.2 += 1;
                }
                tokio::task::yield_now().await;
                f.lock().unwrap().0 -= 1;
                Ok(QueryResult::default())
            }
        })
        .await
        .unwrap();
    let g = *in_flight.lock().unwrap();
    assert_eq!(g.2, 6, "raw + rate + avg + 3 quantiles");
    assert_eq!(g.1, 6, "all in flight at once");
    assert_eq!(v["charts"].as_array().unwrap().len(), 3);
}

#[test]
fn the_app_dashboard_is_kialis_fixed_one() {
    let p = AppParams::parse("direction=inbound&requestProtocol=http").unwrap();
    let plan = app_dashboard_plan("bookinfo", "reviews", &p, DurationHistogram::Milliseconds, 1000);
    assert_eq!(plan.title, "Inbound Metrics");
    let names: Vec<_> = plan.charts.iter().map(|c| (c.name.as_str(), c.unit.as_str())).collect();
    assert_eq!(
        names,
        [
            ("Request volume", "ops"),
            ("Request duration", "s"),
            ("Request size", "B"),
            ("Response size", "B"),
            ("TCP received", "bps"),
            ("TCP sent", "bps")
        ]
    );
    let aggs: Vec<_> =
        plan.aggregations.iter().map(|a| (a.label.as_str(), a.display_name.as_str())).collect();
    assert_eq!(
        aggs,
        [
            ("destination_version", "Local version"),
            ("source_app", "Remote app"),
            ("source_version", "Remote version"),
            ("response_code", "Response code")
        ]
    );
    assert_eq!(
        plan.queries[0].matchers.to_vec(),
        vec![
            Matcher::eq("reporter", "source"),
            Matcher::eq("destination_workload_namespace", "bookinfo"),
            Matcher::eq("destination_app", "reviews"),
            Matcher::eq("request_protocol", "http"),
        ]
    );
    assert_eq!(plan.queries[1].metric.as_str(), "istio_request_duration_milliseconds");
    assert_eq!(plan.queries.len(), 6, "3 rates + 3 histogram averages");
    let out = app_dashboard_plan(
        "bookinfo",
        "reviews",
        &AppParams::parse("").unwrap(),
        DurationHistogram::Seconds,
        1000,
    );
    assert_eq!(out.title, "Outbound Metrics");
    assert_eq!(out.charts[1].unit, "s");
    assert_eq!(out.aggregations[0].label, "source_version");
    assert_eq!(out.queries[0].matchers[1], Matcher::eq("source_workload_namespace", "bookinfo"));
}

#[test]
fn request_durations_of_the_milliseconds_histogram_are_charted_in_seconds() {
    let mut t = template();
    t.charts = vec![
        chart("Duration", "istio_request_duration_milliseconds", DataType::Histogram, &[]),
        chart("Time spent", "istio_request_duration_milliseconds_sum", DataType::Rate, &[]),
        chart("Requests", "istio_request_duration_milliseconds_count", DataType::Rate, &[]),
        chart("Seconds", "istio_request_duration_seconds", DataType::Histogram, &[]),
    ]
    .into();
    let plan = custom_dashboard_plan(&t, "ns", "app", &params(&[("quantiles[]", "0.5")]), 1000);
    let units: Vec<_> = plan.charts.iter().map(|c| c.unit.as_str()).collect();
    assert_eq!(
        units,
        ["s", "s", "u", "u"],
        "only what the milliseconds histogram measures in ms changes unit"
    );
    let divisors: Vec<f64> = plan.queries.iter().map(duration_divisor).collect();
    // Duration: avg + p50; Time spent; Requests; Seconds: avg + p50.
    assert_eq!(divisors, [1000.0, 1000.0, 1000.0, 1.0, 1.0, 1.0]);
    let results = plan
        .queries
        .iter()
        .map(|_| Ok(QueryResult { series: vec![series(&[], &[(10.0, 25.0)])].into() }))
        .collect();
    let v = plan.assemble(results).unwrap();
    assert_eq!(v["charts"][0]["histogram"]["avg"]["matrix"][0]["values"][0][1], "0.025");
    assert_eq!(v["charts"][0]["histogram"]["0.5"]["matrix"][0]["values"][0][1], "0.025");
    assert_eq!(v["charts"][1]["metric"]["matrix"][0]["values"][0][1], "0.025");
    assert_eq!(v["charts"][2]["metric"]["matrix"][0]["values"][0][1], "25");
    assert_eq!(v["charts"][3]["histogram"]["avg"]["matrix"][0]["values"][0][1], "25");
}

#[test]
fn workload_and_service_dashboards_select_their_own_labels() {
    let out = AppParams::parse("direction=inbound").unwrap();
    let w = istio_dashboard_plan(
        "bookinfo",
        DashboardTarget::Workload("reviews-v1"),
        &out,
        DurationHistogram::Milliseconds,
        1000,
    );
    assert_eq!(w.title, "Inbound Metrics");
    assert_eq!(
        w.queries[0].matchers.to_vec(),
        vec![
            Matcher::eq("reporter", "source"),
            Matcher::eq("destination_workload_namespace", "bookinfo"),
            Matcher::eq("destination_workload", "reviews-v1"),
        ]
    );
    let limits = crate::ParamLimits::default();
    let p = AppParams::parse_service_with("requestProtocol=http", &limits).unwrap();
    let s = istio_dashboard_plan(
        "bookinfo",
        DashboardTarget::Service("reviews"),
        &p,
        DurationHistogram::Milliseconds,
        1000,
    );
    assert_eq!(s.title, "Inbound Metrics");
    assert_eq!(
        s.queries[0].matchers.to_vec(),
        vec![
            Matcher::eq("reporter", "source"),
            Matcher::eq("destination_service_name", "reviews"),
            Matcher::eq("destination_service_namespace", "bookinfo"),
            Matcher::eq("request_protocol", "http"),
        ]
    );
    assert_eq!(s.aggregations[1].label, "source_app");
    let e = AppParams::parse_service_with("direction=outbound", &limits).unwrap_err();
    assert!(matches!(e, DashboardError::BadRequest(ref m) if m.starts_with("direction")), "{e:?}");
}

#[test]
fn a_cluster_selects_the_targets_own_side() {
    let mut p = AppParams::parse("").unwrap();
    p.cluster = Some("west".into());
    let plan = |target, p: &AppParams| {
        istio_dashboard_plan("bookinfo", target, p, DurationHistogram::Seconds, 1000)
    };
    let out = plan(DashboardTarget::App("reviews"), &p);
    assert!(
        out.queries
            .iter()
            .all(|q| q.matchers.last() == Some(&Matcher::eq("source_cluster", "west")))
    );
    p.direction = Direction::Inbound;
    for target in [DashboardTarget::Workload("reviews-v1"), DashboardTarget::Service("reviews")] {
        let inb = plan(target, &p);
        assert!(
            inb.queries
                .iter()
                .all(|q| q.matchers.last() == Some(&Matcher::eq("destination_cluster", "west"))),
            "{target:?}"
        );
    }
    // Custom dashboards select by the app's own labels only (Kiali v2 too).
    let custom = custom_dashboard_plan(&template(), "bookinfo", "reviews", &params(&[]), 1000);
    assert!(
        custom.queries.iter().flat_map(|q| q.matchers.iter()).all(|m| !m.name.contains("cluster"))
    );
}
