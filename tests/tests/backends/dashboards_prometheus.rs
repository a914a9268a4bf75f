//! customDashboard and appDashboard through the service (in this process) against a real Prometheus
//! holding the generated demo traffic (Vert.x metrics for app `reviews`, Go metrics for
//! app `ratings`). Every number is checked against a hand-written PromQL query sent
//! straight to the same Prometheus, and gauges also against the generator's own record.

use std::collections::BTreeMap;

use integration_tests::{
    inprocess::InProcess as Meshlens,
    prometheus::{Fixture, PromServer, fixture, http_get, percent_encode},
    server::{Response, plugin_dir},
};
use meshlens::config::Config;
use serde_json::Value;

const PLUGINS: &[&str] =
    &["metrics-prometheus", "dashboards-builtin", "dashboards-folder", "dashboards-monitoring"];

pub struct Setup {
    pub m: Meshlens,
    pub prom: PromServer,
    pub f: std::sync::Arc<Fixture>,
}

fn demo() -> std::sync::Arc<Fixture> {
    fixture(&["--topology", "demo", "--minutes", "30"])
}

fn setup() -> Setup {
    setup_with(|_| {})
}

fn setup_with(adjust: impl FnOnce(&mut Config)) -> Setup {
    setup_over(demo(), adjust)
}

/// meshlens (its configuration changed by `adjust`) over a Prometheus holding `f`.
fn setup_over(f: std::sync::Arc<Fixture>, adjust: impl FnOnce(&mut Config)) -> Setup {
    let prom = PromServer::start(&f);
    let dir = plugin_dir(PLUGINS);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [metrics]\nbackend = \"prometheus\"\ntimeout = \"3s\"\n[metrics.prometheus]\nurl = {:?}\n",
        dir.path().display().to_string(),
        prom.url()
    );
    let m = Meshlens::configured(&cfg, adjust, vec![dir])
        .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"));
    Setup { m, prom, f }
}

type Labels = BTreeMap<String, String>;

/// An instant PromQL query sent straight to Prometheus: (labels, value) per series.
fn promql(prom: &PromServer, query: &str, t: f64) -> Vec<(Labels, f64)> {
    let path = format!("/api/v1/query?query={}&time={t}", percent_encode(query));
    let (status, text) =
        http_get(prom.port(), &path).unwrap_or_else(|| panic!("Prometheus did not answer {query}"));
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((status, &body["status"]), (200, &Value::from("success")), "{query}: {body}");
    body["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let labels = s["metric"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect();
            (labels, s["value"][1].as_str().unwrap().parse::<f64>().unwrap())
        })
        .collect()
}

/// The series of one MetricSeries: labels and samples.
fn matrix(series: &Value) -> Vec<(Labels, Vec<(f64, f64)>)> {
    series["matrix"]
        .as_array()
        .unwrap_or_else(|| panic!("no matrix in {series}"))
        .iter()
        .map(|s| {
            let labels = s["metric"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect();
            let values = s["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (p[0].as_f64().unwrap(), p[1].as_str().unwrap().parse::<f64>().unwrap()))
                .collect();
            (labels, values)
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// Every sample of `series` equals `query` evaluated at its time; returns the series' last values by labels.
fn assert_matches_promql(prom: &PromServer, series: &Value, query: &str) -> BTreeMap<Labels, f64> {
    let ours = matrix(series);
    assert!(!ours.is_empty(), "no series for {query}");
    let mut last = BTreeMap::new();
    for (labels, samples) in &ours {
        assert!(!samples.is_empty());
        // First, middle and last points: enough to catch a wrong window or function.
        for &i in &[0, samples.len() / 2, samples.len() - 1] {
            let (t, v) = samples[i];
            let theirs = promql(prom, query, t);
            let (_, want) = theirs
                .iter()
                .find(|(l, _)| l == labels)
                .unwrap_or_else(|| panic!("{query} at {t}: no series {labels:?} in {theirs:?}"));
            assert!(close(v, *want), "{query} at {t} {labels:?}: ours {v}, Prometheus {want}");
        }
        last.insert(labels.clone(), samples[samples.len() - 1].1);
    }
    assert_eq!(
        ours.len(),
        promql(prom, query, ours[0].1[ours[0].1.len() - 1].0).len(),
        "{query}: series count"
    );
    last
}

fn get_json(m: &Meshlens, path: &str) -> Value {
    let r = m.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json()
}

fn chart<'a>(d: &'a Value, name: &str) -> &'a Value {
    d["charts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no chart {name} in {d}"))
}

fn by_version(last: &BTreeMap<Labels, f64>) -> BTreeMap<String, f64> {
    last.iter().map(|(l, v)| (l.get("version").cloned().unwrap_or_default(), *v)).collect()
}

/// The generator's record of a gauge: sum per version for an app.
fn gauge_by_version(f: &Fixture, name: &str, app: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for g in f.expected["gauges"].as_array().unwrap() {
        if g["name"] == name && g["labels"]["app"] == app {
            *out.entry(g["labels"]["version"].as_str().unwrap().to_string()).or_insert(0.0) +=
                g["value"].as_f64().unwrap();
        }
    }
    assert!(!out.is_empty(), "the generator recorded no {name} for {app}");
    out
}

const SEL: &str = r#"namespace="bookinfo",app="reviews""#;

#[test]
fn custom_dashboard_matches_promql_for_each_data_type() {
    let s = setup();
    let end = s.f.end();
    let d = get_json(
        &s.m,
        &format!(
            "/api/namespaces/bookinfo/apps/reviews/customdashboard/vertx-server?queryTime={end}&duration=600&step=60\
             &byLabels[]=version&quantiles[]=0.5&quantiles[]=0.95&quantiles[]=0.99"
        ),
    );
    assert_eq!(d["title"], "Vert.x Server Metrics");
    let names: Vec<&str> = d["aggregations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["displayName"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(names, sorted, "union, de-duplicated, sorted by displayName");
    assert!(names.contains(&"Route") && names.contains(&"Error code"));
    assert_eq!(d["charts"].as_array().unwrap().len(), 6);

    // rate
    let c = chart(&d, "Server request count rate");
    assert_eq!((c["unit"].as_str(), c["spans"].as_i64()), (Some("ops"), Some(6)));
    let last = assert_matches_promql(
        &s.prom,
        &c["metric"],
        &format!("sum by (version) (rate(vertx_http_server_requests_total{{{SEL}}}[1m]))"),
    );
    let v = by_version(&last);
    assert!(close(v["v1"], 5.0) && close(v["v2"], 3.0) && close(v["v3"], 2.0), "{v:?}");
    // raw
    let c = chart(&d, "Server active connections");
    let last = assert_matches_promql(
        &s.prom,
        &c["metric"],
        &format!("sum by (version) (vertx_http_server_connections{{{SEL}}})"),
    );
    assert_eq!(
        by_version(&last),
        gauge_by_version(&s.f, "vertx_http_server_connections", "reviews")
    );
    // histogram: avg and three quantiles
    let h = &chart(&d, "Server response time")["histogram"];
    let keys: Vec<&String> = h.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 4, "{keys:?}");
    let m = "vertx_http_server_responseTime_seconds";
    let last = assert_matches_promql(
        &s.prom,
        &h["avg"],
        &format!(
            "sum by (version) (rate({m}_sum{{{SEL}}}[1m])) / sum by (version) (rate({m}_count{{{SEL}}}[1m]))"
        ),
    );
    // 90 % of requests average 20 ms and 10 % average 200 ms.
    assert!(by_version(&last).values().all(|v| (v - 0.038).abs() < 1e-6), "{last:?}");
    for q in ["0.5", "0.95", "0.99"] {
        assert_matches_promql(
            &s.prom,
            &h[q],
            &format!(
                "histogram_quantile({q}, sum by (le, version) (rate({m}_bucket{{{SEL}}}[1m])))"
            ),
        );
    }
    // A metric the app does not export gives an empty matrix, not an error.
    assert_eq!(chart(&d, "Server active websockets")["metric"]["matrix"], serde_json::json!([]));
}

#[test]
fn version_filter_irate_grouping_and_no_avg() {
    let s = setup();
    let end = s.f.end();
    let base = format!(
        "/api/namespaces/bookinfo/apps/reviews/customdashboard/vertx-server?queryTime={end}&duration=300&step=30"
    );
    let d = get_json(
        &s.m,
        &format!("{base}&version=v2&rateFunc=irate&avg=false&quantiles[]=0.5&rateInterval=2m"),
    );
    let sel = r#"namespace="bookinfo",app="reviews",version="v2""#;
    let c = chart(&d, "Server request count rate");
    let last = assert_matches_promql(
        &s.prom,
        &c["metric"],
        &format!("sum(irate(vertx_http_server_requests_total{{{sel}}}[2m]))"),
    );
    assert_eq!(last.len(), 1);
    assert!(close(*last.values().next().unwrap(), 3.0), "{last:?}");
    let h = chart(&d, "Server response time")["histogram"].as_object().unwrap().clone();
    assert_eq!(h.keys().collect::<Vec<_>>(), ["0.5"], "avg=false leaves only the quantile");
    // Grouping by two labels.
    let d = get_json(&s.m, &format!("{base}&byLabels[]=version&byLabels[]=code"));
    let c = chart(&d, "Server request count rate");
    let last = assert_matches_promql(
        &s.prom,
        &c["metric"],
        &format!("sum by (version, code) (rate(vertx_http_server_requests_total{{{SEL}}}[1m]))"),
    );
    assert_eq!(last.len(), 6, "3 versions x 2 codes");
    let errors: f64 = last.iter().filter(|(l, _)| l["code"] == "500").map(|(_, v)| v).sum();
    assert!(close(errors, 1.0), "{last:?}");
}

#[test]
fn go_runtime_dashboard_of_ratings() {
    let s = setup();
    let end = s.f.end();
    let d = get_json(
        &s.m,
        &format!(
            "/api/namespaces/bookinfo/apps/ratings/customdashboard/go?queryTime={end}&duration=300&step=60"
        ),
    );
    assert_eq!(d["title"], "Go Metrics");
    let sel = r#"namespace="bookinfo",app="ratings""#;
    let last = assert_matches_promql(
        &s.prom,
        &chart(&d, "Goroutines")["metric"],
        &format!("sum(go_goroutines{{{sel}}})"),
    );
    let want: f64 = gauge_by_version(&s.f, "go_goroutines", "ratings").values().sum();
    assert!(close(*last.values().next().unwrap(), want));
    assert_matches_promql(
        &s.prom,
        &chart(&d, "GC duration")["histogram"]["avg"],
        &format!(
            "sum(rate(go_gc_duration_seconds_sum{{{sel}}}[1m])) / sum(rate(go_gc_duration_seconds_count{{{sel}}}[1m]))"
        ),
    );
    assert_matches_promql(
        &s.prom,
        &chart(&d, "Heap allocation rate")["metric"],
        &format!("sum(rate(go_memstats_alloc_bytes_total{{{sel}}}[1m]))"),
    );
}

fn assert_400(r: &Response, words: &[&str]) {
    assert_eq!(r.status, 400, "{}", r.text());
    let body = r.json();
    assert_eq!(body["code"], 400);
    let msg = body["message"].as_str().unwrap();
    for w in words {
        assert!(msg.contains(w), "{msg:?} should name {w}");
    }
}

#[test]
fn every_bad_request_is_a_400_naming_what_is_wrong() {
    let s = setup();
    let custom = "/api/namespaces/bookinfo/apps/reviews/customdashboard/vertx-server";
    // The message lists the known templates but never repeats the name sent.
    let r = s.m.get("/api/namespaces/bookinfo/apps/reviews/customdashboard/no-such-template");
    assert_400(&r, &["template", "vertx-server"]);
    assert!(!r.text().contains("no-such-template"), "{}", r.text());
    assert_400(&s.m.get("/api/namespaces/bookinfo/apps/no-such-app/customdashboard/go"), &["app"]);
    assert_400(
        &s.m.get("/api/namespaces/no-such-ns/apps/reviews/customdashboard/go"),
        &["namespace"],
    );
    assert_400(&s.m.get("/api/namespaces/bookinfo/apps/no-such-app/dashboard"), &["app"]);
    assert_400(&s.m.get("/api/namespaces/no-such-ns/apps/reviews/dashboard"), &["namespace"]);
    for (param, value) in [
        ("avg", "maybe"),
        ("byLabels[]", "not-a-label"),
        ("duration", "-1"),
        ("quantiles[]", "1.5"),
        ("rateFunc", "increase"),
        ("rateInterval", "soon"),
        ("step", "0"),
        ("version", ""),
    ] {
        assert_400(&s.m.get(&format!("{custom}?{param}={value}")), &[&format!("'{param}'")]);
    }
    for (param, value) in [
        ("direction", "sideways"),
        ("reporter", "nobody"),
        ("requestProtocol", "h%20t"),
        ("step", "x"),
    ] {
        assert_400(
            &s.m.get(&format!("/api/namespaces/bookinfo/apps/reviews/dashboard?{param}={value}")),
            &[&format!("'{param}'")],
        );
    }
    // Without the /api prefix too.
    assert_eq!(
        s.m.get("/namespaces/bookinfo/apps/reviews/customdashboard/vertx-server").status,
        200
    );
}

#[test]
fn app_dashboard_inbound_and_outbound() {
    let s = setup();
    let end = s.f.end();
    let base = format!(
        "/api/namespaces/bookinfo/apps/ratings/dashboard?queryTime={end}&duration=300&step=60"
    );
    let d = get_json(&s.m, &format!("{base}&direction=inbound&quantiles[]=0.95"));
    assert_eq!(d["title"], "Inbound Metrics");
    let charts: Vec<(&str, &str)> = d["charts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["unit"].as_str().unwrap()))
        .collect();
    assert_eq!(
        charts,
        [
            ("Request volume", "ops"),
            ("Request duration", "s"),
            ("Request size", "B"),
            ("Response size", "B"),
            ("TCP received", "bps"),
            ("TCP sent", "bps")
        ]
    );
    let aggs: Vec<&str> = d["aggregations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["label"].as_str().unwrap())
        .collect();
    assert_eq!(aggs, ["destination_version", "source_app", "source_version", "response_code"]);
    let sel =
        r#"reporter="source",destination_workload_namespace="bookinfo",destination_app="ratings""#;
    let last = assert_matches_promql(
        &s.prom,
        &chart(&d, "Request volume")["metric"],
        &format!("sum(rate(istio_requests_total{{{sel}}}[1m]))"),
    );
    // reviews-v2 -> ratings http 3 req/s plus reviews-v3 -> ratings grpc 2 req/s.
    assert!(close(*last.values().next().unwrap(), 5.0), "{last:?}");
    let m = "istio_request_duration_milliseconds";
    let h = &chart(&d, "Request duration")["histogram"];
    // Seconds, from the milliseconds histogram.
    assert_matches_promql(
        &s.prom,
        &h["avg"],
        &format!("sum(rate({m}_sum{{{sel}}}[1m])) / sum(rate({m}_count{{{sel}}}[1m])) / 1000"),
    );
    assert_matches_promql(
        &s.prom,
        &h["0.95"],
        &format!("histogram_quantile(0.95, sum by (le) (rate({m}_bucket{{{sel}}}[1m]))) / 1000"),
    );

    // gRPC only, reported by the destination.
    let d = get_json(
        &s.m,
        &format!("{base}&direction=inbound&reporter=destination&requestProtocol=grpc"),
    );
    let sel = r#"reporter="destination",destination_workload_namespace="bookinfo",destination_app="ratings",request_protocol="grpc""#;
    let last = assert_matches_promql(
        &s.prom,
        &chart(&d, "Request volume")["metric"],
        &format!("sum(rate(istio_requests_total{{{sel}}}[1m]))"),
    );
    assert!(close(*last.values().next().unwrap(), 2.0), "{last:?}");

    // Outbound (the default): ratings talks TCP to mongodb.
    let d = get_json(&s.m, &format!("{base}&byLabels[]=destination_app"));
    assert_eq!(d["title"], "Outbound Metrics");
    assert_eq!(d["aggregations"][0]["label"], "source_version");
    let sel = r#"reporter="source",source_workload_namespace="bookinfo",source_app="ratings""#;
    let sent = assert_matches_promql(
        &s.prom,
        &chart(&d, "TCP sent")["metric"],
        &format!("sum by (destination_app) (rate(istio_tcp_sent_bytes_total{{{sel}}}[1m]))"),
    );
    let mongo: Labels = [("destination_app".to_string(), "mongodb".to_string())].into();
    assert!(close(sent[&mongo], 2000.0), "{sent:?}");
    assert_eq!(
        chart(&d, "Request volume")["metric"]["matrix"],
        serde_json::json!([]),
        "ratings sends no HTTP"
    );
}

#[test]
fn a_store_that_is_down_is_a_503() {
    // Without the answer cache, which would answer from memory for one TTL.
    let mut s = setup_with(|c| {
        c.metrics.cache_ttl = meshlens_params::HumanDuration(std::time::Duration::ZERO)
    });
    assert_eq!(
        s.m.get("/api/namespaces/bookinfo/apps/reviews/customdashboard/vertx-server").status,
        200
    );
    s.prom.stop();
    for path in [
        "/api/namespaces/bookinfo/apps/reviews/customdashboard/vertx-server",
        "/api/namespaces/bookinfo/apps/reviews/dashboard",
    ] {
        let r = s.m.get(path);
        assert_eq!(r.status, 503, "{path}: {}", r.text());
        assert_eq!(r.json()["code"], 503);
    }
}

/// meshlens over a Prometheus holding the demo traffic with request durations in `unit`
/// (`ms`: `istio_request_duration_milliseconds`, `s`: the older `_seconds`), at a fixed end.
/// Both stores hold the same hour around this process's start (namespaceMetrics never
/// reaches back before the snapshot's namespaces were created, so the data is current).
fn setup_with_duration_unit(unit: &str) -> (Setup, i64) {
    static NOW: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    let now = *NOW.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64)
    });
    let end = (now + 1800).to_string();
    (
        setup_over(
            fixture(&[
                "--topology",
                "demo",
                "--minutes",
                "60",
                "--end",
                &end,
                "--duration-unit",
                unit,
            ]),
            |_| {},
        ),
        now,
    )
}

/// Every value of every series of a MetricSeries, in order.
fn all_values(series: &Value) -> Vec<f64> {
    matrix(series)
        .into_iter()
        .flat_map(|(_, samples)| samples.into_iter().map(|(_, v)| v))
        .collect()
}

fn assert_same_numbers(ms: &Value, s: &Value, what: &str) {
    let (a, b) = (all_values(ms), all_values(s));
    assert!(!a.is_empty(), "{what}: no values");
    assert_eq!(a.len(), b.len(), "{what}: {a:?} vs {b:?}");
    for (x, y) in a.iter().zip(&b) {
        assert!(close(*x, *y), "{what}: milliseconds store {x}, seconds store {y}");
    }
}

#[test]
fn request_duration_is_in_seconds_whichever_histogram_the_store_holds() {
    let ((ms, end), (s, _)) = (setup_with_duration_unit("ms"), setup_with_duration_unit("s"));
    assert_eq!(ms.f.end(), s.f.end());
    let app = format!(
        "/api/namespaces/bookinfo/apps/ratings/dashboard?queryTime={end}&duration=300&step=60&direction=inbound&quantiles[]=0.5&quantiles[]=0.95"
    );
    let (a, b) = (get_json(&ms.m, &app), get_json(&s.m, &app));
    let (ca, cb) = (chart(&a, "Request duration"), chart(&b, "Request duration"));
    assert_eq!((&ca["unit"], &cb["unit"]), (&Value::from("s"), &Value::from("s")));
    // Istio's two bucket layouts share their bounds from 5 ms up (the milliseconds one adds
    // 0.5 and 1 ms), so averages, and quantiles above 5 ms, are the same numbers; a median of
    // a few milliseconds is interpolated in different buckets but is still in seconds.
    for stat in ["avg", "0.95"] {
        assert_same_numbers(
            &ca["histogram"][stat],
            &cb["histogram"][stat],
            &format!("appDashboard {stat}"),
        );
    }
    for (x, y) in
        all_values(&ca["histogram"]["0.5"]).into_iter().zip(all_values(&cb["histogram"]["0.5"]))
    {
        assert!(
            x / y > 0.5 && x / y < 2.0,
            "appDashboard median: milliseconds store {x}, seconds store {y}"
        );
    }
    // Seconds, not milliseconds: the demo's ratings answers in tens of milliseconds.
    let avg = all_values(&ca["histogram"]["avg"]);
    assert!(avg.iter().all(|v| *v > 0.001 && *v < 1.0), "{avg:?}");

    let ns = format!(
        "/api/namespaces/bookinfo/metrics?queryTime={end}&duration=300&step=60&filters[]=request_duration&quantiles[]=0.95&quantiles[]=0.99"
    );
    let (a, b) = (get_json(&ms.m, &ns), get_json(&s.m, &ns));
    for stat in ["avg", "0.95", "0.99"] {
        let (x, y) = (
            &a["histograms"]["request_duration"][stat],
            &b["histograms"]["request_duration"][stat],
        );
        assert_same_numbers(x, y, &format!("namespaceMetrics {stat}"));
    }
}
