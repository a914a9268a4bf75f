//! namespaceMetrics against real Prometheus and the embedded store, checked against the
//! generator's own rates.

// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::InProcess as Meshlens;
use integration_tests::{
    prometheus::{Fixture, PromServer, fixture},
    server::plugin_dir,
};
use serde_json::Value;

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Data from 30 minutes before this process to 30 minutes after it, so ranges ending "now"
/// lie inside it.
fn demo() -> std::sync::Arc<Fixture> {
    static END: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let end = END.get_or_init(|| (now() + 1800).to_string());
    integration_tests::server::ensure_built();
    fixture(&["--topology", "demo", "--minutes", "60", "--end", end])
}

fn start(backend: &str, table: String) -> Meshlens {
    let package =
        if backend == "prometheus" { "metrics-prometheus" } else { "metrics-openmetrics-file" };
    let dir = plugin_dir(&[package]);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [\"{}\"]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [metrics]\nbackend = \"{backend}\"\n[metrics.{backend}]\n{table}\n",
        dir.path().display()
    );
    Meshlens::start(&cfg, &[], vec![dir]).expect("meshlens starts")
}

/// Sum over the generator's series of `field`, for series matching `keep`.
fn expected_sum(
    expected: &Value,
    keep: impl Fn(&Value, &Value, &Value) -> bool,
    field: &str,
) -> f64 {
    let mut total = 0.0;
    for edge in expected["edges"].as_array().expect("edges") {
        for s in edge["series"].as_array().expect("series") {
            if keep(edge, s, &edge["source"]) {
                total += s[field].as_f64().unwrap_or(0.0);
            }
        }
    }
    total
}

fn values(series: &Value) -> Vec<f64> {
    series["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|p| p[1].as_str().and_then(|v| v.parse().ok()).expect("value string"))
        .collect()
}

fn assert_all_close(series: &Value, want: f64, what: &str) {
    let vs = values(series);
    assert!(!vs.is_empty(), "{what}: no points");
    for v in vs {
        assert!((v - want).abs() <= 1e-6 * want.abs().max(1.0), "{what}: got {v}, expected {want}");
    }
}

fn check(m: &Meshlens, expected: &Value) {
    let t = now();
    let range = format!("queryTime={t}&duration=600&step=60&rateInterval=2m");
    let out_src = |e: &Value, s: &Value, src: &Value| {
        s["reporter"] == "source" && src["namespace"] == "bookinfo" && e["protocol"] != "tcp"
    };
    let v = m.get(&format!("/api/namespaces/bookinfo/metrics?{range}&quantiles[]=0.5"));
    assert_eq!(v.status, 200, "{}", v.text());
    let v = v.json();
    let rc = &v["metrics"]["request_count"]["matrix"];
    assert_eq!(rc.as_array().map(Vec::len), Some(1), "{rc}");
    assert_all_close(&rc[0], expected_sum(expected, out_src, "rate"), "request_count");
    let errors = expected_sum(
        expected,
        |e, s, src| {
            out_src(e, s, src)
                && s["response_code"]
                    .as_str()
                    .is_some_and(|c| c.starts_with('4') || c.starts_with('5'))
        },
        "rate",
    );
    assert_all_close(
        &v["metrics"]["request_error_count"]["matrix"][0],
        errors,
        "request_error_count",
    );
    let tcp = |e: &Value, s: &Value, src: &Value| {
        e["protocol"] == "tcp" && s["reporter"] == "source" && src["namespace"] == "bookinfo"
    };
    assert_all_close(
        &v["metrics"]["tcp_sent"]["matrix"][0],
        expected_sum(expected, tcp, "sent_bytes"),
        "tcp_sent",
    );
    assert_all_close(
        &v["metrics"]["tcp_received"]["matrix"][0],
        expected_sum(expected, tcp, "received_bytes"),
        "tcp_received",
    );
    // Histogram average = rate-weighted mean duration of the same requests.
    let weighted: f64 = expected_sum(
        expected,
        |e, s, src| out_src(e, s, src) && s["duration_mean"].is_number(),
        "rate",
    );
    let mut num = 0.0;
    for edge in expected["edges"].as_array().unwrap() {
        for s in edge["series"].as_array().unwrap() {
            if out_src(edge, s, &edge["source"]) && s["duration_mean"].is_number() {
                num += s["rate"].as_f64().unwrap() * s["duration_mean"].as_f64().unwrap();
            }
        }
    }
    // Always seconds, whichever histogram the store holds.
    let to_seconds = if expected["duration_metric"] == "istio_request_duration_milliseconds" {
        1000.0
    } else {
        1.0
    };
    let dur = &v["histograms"]["request_duration"];
    assert_all_close(&dur["avg"]["matrix"][0], num / weighted / to_seconds, "request_duration avg");
    assert!(dur["0.5"]["matrix"][0]["values"].as_array().is_some_and(|a| !a.is_empty()), "{dur}");
    for h in ["request_size", "response_size"] {
        assert!(v["histograms"][h]["avg"]["matrix"].is_array(), "{h}");
    }

    // Grouping by a label: one series per destination app, each with its own sum.
    let g = m.get(&format!("/api/namespaces/bookinfo/metrics?{range}&filters[]=request_count&byLabels[]=destination_app")).json();
    assert_eq!(g["metrics"].as_object().map(|o| o.len()), Some(1), "filters limit the answer: {g}");
    assert!(g["histograms"].as_object().is_some_and(|h| h.is_empty()));
    let matrix = g["metrics"]["request_count"]["matrix"].as_array().expect("matrix");
    for s in matrix {
        let app = s["metric"]["destination_app"].as_str().expect("destination_app label");
        let want = expected_sum(
            expected,
            |e, s, src| {
                out_src(e, s, src) && e["destination"]["app"].as_str().unwrap_or("unknown") == app
            },
            "rate",
        );
        assert_all_close(s, want, &format!("request_count to {app}"));
    }
    assert!(matrix.len() >= 4, "{matrix:?}");

    // Inbound, destination-reported.
    let inb = m.get(&format!("/api/namespaces/bookinfo/metrics?{range}&filters[]=request_count&direction=inbound&reporter=destination")).json();
    let want = expected_sum(
        expected,
        |e, s, _| {
            s["reporter"] == "destination"
                && e["destination"]["namespace"] == "bookinfo"
                && e["protocol"] != "tcp"
        },
        "rate",
    );
    assert_all_close(&inb["metrics"]["request_count"]["matrix"][0], want, "inbound request_count");
}

#[test]
fn namespace_metrics_on_real_prometheus() {
    let f = demo();
    let prom = PromServer::start(&f);
    let m = start("prometheus", format!("url = \"{}\"", prom.url()));
    check(&m, &f.expected);
}

#[test]
fn namespace_metrics_on_the_embedded_store() {
    let f = demo();
    let m = start("openmetrics_file", format!("path = \"{}\"", f.openmetrics.display()));
    check(&m, &f.expected);
}

#[test]
fn every_bad_parameter_is_a_400_naming_it() {
    let f = demo();
    let m = start("openmetrics_file", format!("path = \"{}\"", f.openmetrics.display()));
    for (q, param) in [
        ("filters[]=cpu", "filters"),
        ("direction=up", "direction"),
        ("reporter=both", "reporter"),
        ("rateInterval=soon", "rateInterval"),
        ("rateFunc=delta", "rateFunc"),
        ("queryTime=yesterday", "queryTime"),
        ("duration=-5", "duration"),
        ("step=0", "step"),
        ("quantiles[]=1.5", "quantiles"),
        ("avg=maybe", "avg"),
        ("byLabels[]=not-a-label", "byLabels"),
        ("requestProtocol=h%20ttp", "requestProtocol"),
    ] {
        let r = m.get(&format!("/api/namespaces/bookinfo/metrics?{q}"));
        assert_eq!(r.status, 400, "{q}: {}", r.text());
        let body = r.json();
        assert_eq!(body["code"], 400);
        assert!(body["message"].as_str().is_some_and(|msg| msg.contains(param)), "{q}: {body}");
    }
    assert_eq!(m.get("/api/namespaces/nowhere/metrics").status, 400);
}

/// A store made in the test (no plugin, no process): answers each query with one point of
/// `value`, or fails every query when `down`; counts the queries it is asked.
struct FakeStore {
    value: f64,
    down: bool,
    asked: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl plugin_api::MetricsStore for FakeStore {
    fn name(&self) -> &str {
        "fake"
    }
    fn configure(&mut self, _: &Value) -> Result<(), plugin_api::PluginError> {
        Ok(())
    }
    fn query(
        &self,
        q: &plugin_api::MetricQuery,
        _: std::time::Duration,
    ) -> Result<plugin_api::QueryResult, plugin_api::PluginError> {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.down {
            return Err(plugin_api::PluginError::unavailable("the fake store is down"));
        }
        let t = match q.time {
            plugin_api::QueryTime::Instant(t) => t,
            plugin_api::QueryTime::Range { end, .. } => end,
        };
        let series = plugin_api::Series {
            labels: Default::default(),
            samples: vec![plugin_api::Sample { t: t as f64, v: self.value }].into_iter().collect(),
        };
        Ok(plugin_api::QueryResult { series: vec![series].into_iter().collect() })
    }
    fn status(&self) -> Result<plugin_api::BackendStatus, plugin_api::PluginError> {
        Ok(plugin_api::BackendStatus {
            name: "FakeStore".into(),
            version: "9.9".into(),
            url: "".into(),
        })
    }
}

fn fake_service(
    value: f64,
    down: bool,
) -> (Meshlens, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let store = plugin_api::MetricsAdapter::boxed(FakeStore { value, down, asked: asked.clone() });
    let plugins = tempfile::tempdir().expect("temp dir");
    let cfg = format!(
        "[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [\"{}\"]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [metrics]\nbackend = \"fake\"\nstatus_interval = \"100ms\"\n",
        plugins.path().display()
    );
    let m = Meshlens::with_backend(&cfg, store, vec![plugins]).expect("meshlens starts");
    (m, asked)
}

#[test]
fn a_backend_made_in_the_test_answers_through_the_service() {
    let (m, asked) = fake_service(4.5, false);
    let t = now();
    let r = m.get(&format!(
        "/api/namespaces/bookinfo/metrics?queryTime={t}&duration=600&step=60&filters[]=request_count"
    ));
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    let series = body["metrics"]["request_count"]["matrix"].as_array().expect("request_count");
    assert!(!series.is_empty(), "{body}");
    assert!(values(&series[0]).iter().all(|v| *v == 4.5), "{body}");
    assert!(asked.load(std::sync::atomic::Ordering::SeqCst) > 0);
    // The background status probe reads the same store: /status names it.
    let named = (0..50).any(|_| {
        let s = m.get("/api/status").json();
        let found = s["externalServices"]
            .as_array()
            .is_some_and(|a| a.iter().any(|e| e["name"] == "FakeStore" && e["version"] == "9.9"));
        if !found {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        found
    });
    assert!(named, "the status probe never reached the fake store");
}

#[test]
fn a_backend_that_is_down_is_a_503_with_the_error_body() {
    let (m, asked) = fake_service(1.0, true);
    let r = m.get("/api/namespaces/bookinfo/metrics?filters[]=request_count");
    assert_eq!(r.status, 503, "{}", r.text());
    let body = r.json();
    assert_eq!(body["code"], 503);
    assert!(
        body["message"].as_str().is_some_and(|t| t.contains("the fake store is down")),
        "{body}"
    );
    assert!(asked.load(std::sync::atomic::Ordering::SeqCst) > 0);
}
