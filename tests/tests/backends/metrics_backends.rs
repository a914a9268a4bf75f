//! The `prometheus` backend's failure modes, auth and status, and the embedded backend's
//! config handling, through the real plugin boundary.

use std::{
    io::{BufRead, BufReader, Write},
    net::TcpListener,
    sync::mpsc,
    thread,
    time::Duration,
};

use integration_tests::prometheus::{PromServer, configured_backend, fixture, load_backend, tool};
use plugin_api::{
    Cancel, ErrorKind, HistogramStat, Matcher, MetricQuery, QueryTime, RangeFunc,
    abi_stable::std_types::{RSome, RVec},
};

fn rate_query(t: i64) -> MetricQuery {
    MetricQuery {
        metric: "istio_requests_total".into(),
        matchers: vec![
            Matcher::eq("reporter", "source"),
            Matcher::eq("destination_service_name", "reviews"),
        ]
        .into(),
        func: RangeFunc::Rate,
        window_secs: 60,
        group_by: RSome(RVec::new()),
        histogram: HistogramStat::None,
        time: QueryTime::Instant(t),
    }
}

/// A port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn a_store_that_is_down_is_unavailable() {
    let b = configured_backend(
        "metrics-prometheus",
        "prometheus",
        serde_json::json!({ "url": format!("http://127.0.0.1:{}", closed_port()) }),
    );
    let e = b.query(&rate_query(1_700_000_000), 5_000).into_result().unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unavailable, "{e}");
    assert!(e.message.contains("reach"), "{e}");
    let e = b.status().into_result().unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unavailable, "{e}");
}

#[test]
fn a_store_that_never_answers_is_a_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts connections and keeps them open without a word.
    thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().take(8) {
            held.push(conn);
        }
    });
    let b = configured_backend(
        "metrics-prometheus",
        "prometheus",
        serde_json::json!({ "url": format!("http://127.0.0.1:{port}") }),
    );
    let e = b.query(&rate_query(1_700_000_000), 300).into_result().unwrap_err();
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
}

/// A one-shot HTTP server: hands back the request head, answers with `body`.
fn fake_store(status: &'static str, body: &'static str) -> (u16, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for conn in listener.incoming().take(4) {
            let Ok(mut conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let mut head = String::new();
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let _ = write!(
                conn,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = tx.send(head);
        }
    });
    (port, rx)
}

const VECTOR: &str = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"b":"2","a":"1"},"value":[1700000000,"NaN"]}]}}"#;

#[test]
fn auth_headers_timeout_and_escaping_reach_the_store() {
    let (port, heads) = fake_store("200 OK", VECTOR);
    let b = configured_backend(
        "metrics-prometheus",
        "prometheus",
        serde_json::json!({
            "url": format!("http://127.0.0.1:{port}/prom"),
            "username": "alice", "password": "s3cret",
            "headers": {"X-Scope-OrgID": "tenant-1"}
        }),
    );
    let mut q = rate_query(1_700_000_000);
    q.matchers = vec![Matcher::eq("app", "we\"ird\\")].into();
    let r = b.query(&q, 2_500).into_result().unwrap();
    assert_eq!(r.series.len(), 1);
    assert!(r.series[0].samples[0].v.is_nan());
    assert_eq!(r.series[0].labels.get("a"), Some("1"));
    let head = heads.recv_timeout(Duration::from_secs(10)).unwrap();
    let lower = head.to_ascii_lowercase();
    // base64("alice:s3cret")
    assert!(lower.contains("authorization: basic ywxpy2u6cznjcmv0"), "{head}");
    assert!(lower.contains("x-scope-orgid: tenant-1"), "{head}");
    let request_line = head.lines().next().unwrap();
    assert!(request_line.starts_with("GET /prom/api/v1/query?"), "{request_line}");
    assert!(request_line.contains("timeout=2500ms"), "{request_line}");
    assert!(request_line.contains("time=1700000000"), "{request_line}");
    // app="we\"ird\\" url-encoded: the escapes are in the PromQL text.
    assert!(request_line.contains("we%5C%22ird%5C%5C"), "{request_line}");

    let (port, heads) = fake_store("200 OK", VECTOR);
    let b = configured_backend(
        "metrics-prometheus",
        "prometheus",
        serde_json::json!({ "url": format!("http://127.0.0.1:{port}"), "bearer_token": "tok" }),
    );
    b.query(&rate_query(1), 2_000).into_result().unwrap();
    let head = heads.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(head.to_ascii_lowercase().contains("authorization: bearer tok"), "{head}");
}

#[test]
fn a_refused_query_is_invalid_input_and_a_store_error_unavailable() {
    let (port, _) = fake_store(
        "400 Bad Request",
        r#"{"status":"error","errorType":"bad_data","error":"parse error: unexpected character"}"#,
    );
    let b = configured_backend(
        "metrics-prometheus",
        "prometheus",
        serde_json::json!({ "url": format!("http://127.0.0.1:{port}") }),
    );
    let e = b.query(&rate_query(1), 2_000).into_result().unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidInput, "{e}");
    assert!(e.message.contains("parse error"), "{e}");
    let (port, _) = fake_store(
        "503 Service Unavailable",
        r#"{"status":"error","errorType":"unavailable","error":"not ready"}"#,
    );
    let b = configured_backend(
        "metrics-prometheus",
        "prometheus",
        serde_json::json!({ "url": format!("http://127.0.0.1:{port}") }),
    );
    assert_eq!(
        b.query(&rate_query(1), 2_000).into_result().unwrap_err().kind,
        ErrorKind::Unavailable
    );
}

#[test]
fn unknown_config_keys_are_named() {
    let b = load_backend("metrics-prometheus", "prometheus");
    let e = b
        .configure(r#"{"url":"http://127.0.0.1:1","bearer":"x"}"#.into())
        .into_result()
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidInput);
    assert!(e.message.contains("\"bearer\""), "{e}");
    let b = load_backend("metrics-openmetrics-file", "openmetrics_file");
    let e = b.configure(r#"{"path":"/nonexistent","pth":"x"}"#.into()).into_result().unwrap_err();
    assert!(e.message.contains("\"pth\""), "{e}");
    let e = b.configure(r#"{"path":"/nonexistent/metrics.om"}"#.into()).into_result().unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidInput);
    assert!(e.message.contains("/nonexistent/metrics.om"), "{e}");
}

#[test]
fn status_reports_the_real_version_and_a_stopped_store_recovers() {
    let f = fixture(&["--end", "1700000000", "--minutes", "30"]);
    let mut server = PromServer::start(&f);
    let b = configured_backend(
        "metrics-prometheus",
        "prometheus",
        serde_json::json!({ "url": server.url() }),
    );
    let status = b.status().into_result().unwrap();
    // `prometheus --version` prints "prometheus, version 2.42.0+ds (branch: ...".
    let out = std::process::Command::new(tool("prometheus")).arg("--version").output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let version = text.split_whitespace().skip_while(|w| *w != "version").nth(1).unwrap();
    assert_eq!(status.name.as_str(), "Prometheus");
    assert_eq!(status.version.as_str(), version);
    assert_eq!(status.url.as_str().trim_end_matches('/'), server.url());

    let q = rate_query(1_700_000_000 - 60);
    let before = b.query(&q, 10_000).into_result().unwrap();
    assert_eq!(before.series.len(), 1);
    let port = server.port();
    server.stop();
    let e = b.query(&q, 5_000).into_result().unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unavailable, "{e}");
    server.restart();
    assert_eq!(server.port(), port);
    let after = b.query(&q, 10_000).into_result().unwrap();
    assert_eq!(after, before);
}

#[test]
fn the_embedded_store_answers_the_generated_rates() {
    let f = fixture(&["--end", "1700000000", "--minutes", "30"]);
    let b = configured_backend(
        "metrics-openmetrics-file",
        "openmetrics_file",
        serde_json::json!({ "path": f.openmetrics.to_str().unwrap(), "timeout_ms": 10000 }),
    );
    let mut q = rate_query(1_700_000_000 - 100);
    q.group_by = RSome(vec!["destination_workload".into(), "response_code".into()].into());
    let r = b.query(&q, 10_000).into_result().unwrap();
    // Every source-reported reviews row of the expected JSON, by workload and code.
    for edge in f.expected["edges"].as_array().unwrap() {
        if edge["destination"]["service_name"] != "reviews" {
            continue;
        }
        for row in edge["series"].as_array().unwrap().iter().filter(|r| r["reporter"] == "source") {
            let wl = edge["destination"]["workload"].as_str().unwrap();
            let code = row["response_code"].as_str().unwrap();
            let got = r
                .series
                .iter()
                .find(|s| {
                    s.labels.get("destination_workload") == Some(wl)
                        && s.labels.get("response_code") == Some(code)
                })
                .unwrap_or_else(|| panic!("no series for {wl} {code}"));
            let want = row["rate"].as_f64().unwrap();
            assert!(
                (got.samples[0].v - want).abs() < 1e-9 * want,
                "{wl} {code}: {} vs {want}",
                got.samples[0].v
            );
        }
    }
    assert_eq!(r.series.len(), 4, "{:?}", r.series);
    let status = b.status().into_result().unwrap();
    assert!(status.url.as_str().ends_with("metrics.om"));
}

fn embedded_over(
    args: &[&str],
) -> (std::sync::Arc<integration_tests::prometheus::Fixture>, plugin_api::MetricsBackendBox) {
    let f = fixture(args);
    let b = configured_backend(
        "metrics-openmetrics-file",
        "openmetrics_file",
        serde_json::json!({ "path": f.openmetrics.to_str().unwrap() }),
    );
    (f, b)
}

#[test]
fn the_generator_makes_a_counters_only_synthetic_mesh() {
    let (f, b) = embedded_over(&[
        "--end",
        "1700000000",
        "--minutes",
        "5",
        "--topology",
        "synthetic",
        "--namespaces",
        "3",
        "--workloads",
        "4",
    ]);
    let mut q = rate_query(1_700_000_000);
    q.matchers = vec![Matcher::eq("reporter", "source")].into();
    q.group_by = RSome(vec!["destination_workload_namespace".into()].into());
    let r = b.query(&q, 10_000).into_result().unwrap();
    assert_eq!(r.series.len(), 3, "{:?}", r.series);
    for s in r.series.iter() {
        let ns = s.labels.get("destination_workload_namespace").unwrap();
        let want: f64 = f.expected["edges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["destination"]["namespace"] == ns)
            .flat_map(|e| e["series"].as_array().unwrap().iter())
            .filter(|row| row["reporter"] == "source")
            .map(|row| row["rate"].as_f64().unwrap())
            .sum();
        assert!(want > 0.0);
        assert!((s.samples[0].v - want).abs() < 1e-9 * want, "{ns}: {} vs {want}", s.samples[0].v);
    }
    let mut h = rate_query(1_700_000_000);
    h.metric = "istio_request_duration_milliseconds".into();
    h.histogram = HistogramStat::Quantile(0.5);
    assert!(b.query(&h, 10_000).into_result().unwrap().series.is_empty(), "counters only");
}

#[test]
fn the_generator_can_use_the_older_seconds_histogram() {
    let (f, b) = embedded_over(&["--end", "1700000000", "--minutes", "5", "--duration-unit", "s"]);
    assert_eq!(f.expected["duration_metric"], "istio_request_duration_seconds");
    let mut h = rate_query(1_700_000_000);
    h.metric = "istio_request_duration_seconds".into();
    h.histogram = HistogramStat::Avg;
    h.matchers =
        vec![Matcher::eq("destination_workload", "reviews-v1"), Matcher::eq("reporter", "source")]
            .into();
    let r = b.query(&h, 10_000).into_result().unwrap();
    assert_eq!(r.series.len(), 1);
    // The generator's mean for the row, already in seconds.
    let want = f.expected["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["destination"]["workload"] == "reviews-v1")
        .map(|e| e["series"][0]["duration_mean"].as_f64().unwrap())
        .unwrap();
    assert!(
        (r.series[0].samples[0].v - want).abs() < 1e-9,
        "{} vs {want}",
        r.series[0].samples[0].v
    );
    h.metric = "istio_request_duration_milliseconds".into();
    assert!(b.query(&h, 10_000).into_result().unwrap().series.is_empty());
}

#[test]
fn the_embedded_backends_stop_a_query_the_host_cancelled() {
    let (_f, file) = embedded_over(&["--end", "1700000000", "--minutes", "30"]);
    let start = 1_700_000_000 - 1800;
    let simulator = configured_backend(
        "metrics-simulator",
        "simulator",
        serde_json::json!({
            "topology": integration_tests::server::workspace_root()
                .join("config/demo/topology.toml").display().to_string(),
            "start": start,
            "clock": "query",
        }),
    );
    let q = rate_query(1_700_000_000 - 100);
    for (name, b) in [("openmetrics_file", &file), ("simulator", &simulator)] {
        let fresh = Cancel::new();
        let r = b.query_cancellable(&q, 10_000, fresh).into_result();
        assert!(r.is_ok_and(|r| !r.series.is_empty()), "{name}: an unset flag changes nothing");
        // Set before the call: the evaluation stops at its first step.
        let set = Cancel::new();
        set.cancel();
        let e = b.query_cancellable(&q, 10_000, set).into_result().unwrap_err();
        assert!(e.message.contains("cancelled"), "{name}: {e}");
        assert_eq!(e.kind, ErrorKind::Timeout, "{name}: {e}");
    }
}

#[test]
fn a_cancelled_prometheus_query_closes_its_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Reads the request, never answers, and reports when the client closes the connection.
    let (arrived_tx, arrived) = mpsc::channel();
    let (closed_tx, closed) = mpsc::channel();
    thread::spawn(move || {
        let Ok((conn, _)) = listener.accept() else { return };
        let _ = conn.set_read_timeout(Some(Duration::from_secs(20)));
        let mut reader = BufReader::new(conn);
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
            line.clear();
        }
        let _ = arrived_tx.send(());
        let mut rest = Vec::new();
        // Ok: the client closed it; Err: still open when the read timed out.
        let _ = closed_tx.send(std::io::Read::read_to_end(&mut reader, &mut rest).is_ok());
    });
    let b = configured_backend(
        "metrics-prometheus",
        "prometheus",
        serde_json::json!({ "url": format!("http://127.0.0.1:{port}") }),
    );
    let cancel = Cancel::new();
    let call = thread::spawn({
        let cancel = cancel.clone();
        // Half a minute: only the flag can end it in time.
        move || b.query_cancellable(&rate_query(1_700_000_000), 30_000, cancel).into_result()
    });
    arrived.recv_timeout(Duration::from_secs(10)).expect("the query reached the store");
    let set = std::time::Instant::now();
    cancel.cancel();
    let e = call.join().expect("the call returns").unwrap_err();
    assert!(e.message.contains("cancelled"), "{e}");
    let was_closed = closed.recv_timeout(Duration::from_secs(30)).expect("the server's verdict");
    assert!(was_closed, "the plugin closed the connection");
    // A figure, not an assertion: speed is for benchmarks.
    println!("connection closed {:?} after the flag was set", set.elapsed());
}
