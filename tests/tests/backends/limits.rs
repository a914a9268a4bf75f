//! `[limits]` end to end: the service (in this process) on the demo mesh, real Prometheus
//! (and the embedded store) behind it.
//!
//! - Every cost limit answers 400 naming the parameter and the limit, and no query reaches
//!   Prometheus (counted by Prometheus itself, `prometheus_http_requests_total`).
//! - Answers over the series or byte cap fail the request with a message saying so.
//! - Admission control: a burst of graph requests gets some 503s with `Retry-After`
//!   while the namespace list keeps answering.
//! - A request whose client goes away, or whose deadline passes, stops its CPU work and
//!   frees its slot for the next request, also in the middle of one long graph build.

use std::{
    io::{Read, Write},
    net::TcpStream,
    sync::{Arc, Barrier},
    time::{Duration, Instant},
};

use integration_tests::{
    inprocess::InProcess as Meshlens,
    prometheus::{PromServer, fixture, http_get},
    server::{BUNDLED, plugin_dir},
};
use meshlens::config::Config;

const ARGS: &[&str] = &["--end", "1700000000", "--minutes", "30"];
const END: i64 = 1_700_000_000;

/// The configuration over `prom` with the bundled plugins and `extra_plugins` (in `dir`).
fn config(prom: &PromServer, extra_plugins: &[&str], extra: &str) -> (String, tempfile::TempDir) {
    let mut packages: Vec<&str> = BUNDLED.to_vec();
    packages.extend_from_slice(extra_plugins);
    let dir = plugin_dir(&packages);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [metrics]\nbackend = \"prometheus\"\n[metrics.prometheus]\nurl = {:?}\n{extra}",
        dir.path(),
        prom.url()
    );
    (cfg, dir)
}

fn start(prom: &PromServer, extra_plugins: &[&str], extra: &str) -> Meshlens {
    start_with(prom, extra_plugins, extra, |_| {})
}

/// Like [`start`], the configuration then changed by `adjust`.
fn start_with(
    prom: &PromServer,
    extra_plugins: &[&str],
    extra: &str,
    adjust: impl FnOnce(&mut Config),
) -> Meshlens {
    let (cfg, dir) = config(prom, extra_plugins, extra);
    Meshlens::configured(&cfg, adjust, vec![dir])
        .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"))
}

/// Queries Prometheus has answered so far (instant and range), by its own counter.
fn queries_at(prom: &PromServer) -> u64 {
    let (status, text) = http_get(prom.port(), "/metrics").expect("Prometheus /metrics");
    assert_eq!(status, 200);
    text.lines()
        .filter(|l| {
            l.starts_with("prometheus_http_requests_total{")
                && (l.contains("handler=\"/api/v1/query\"")
                    || l.contains("handler=\"/api/v1/query_range\""))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[test]
fn every_cost_limit_is_a_400_naming_it_before_any_query() {
    let f = fixture(ARGS);
    let prom = PromServer::start(&f);
    let m = start(&prom, &[], "");
    // A request within the limits reaches Prometheus (so the counter does count ours).
    let before = queries_at(&prom);
    let ok =
        m.get(&format!("/api/namespaces/graph?namespaces=bookinfo&queryTime={END}&duration=10m"));
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert!(queries_at(&prom) > before, "a graph request sends queries");

    let many_ns: Vec<String> = (0..1001).map(|i| format!("ns{i}")).collect();
    let q11: String = (0..11).map(|i| format!("&quantiles[]=0.{i}")).collect();
    let l11: String = (0..11).map(|i| format!("&byLabels[]=label_{i}")).collect();
    let future = now() + 3600;
    let dash = "/api/namespaces/bookinfo/apps/reviews/dashboard";
    let cases: Vec<(String, &str, &str)> = vec![
        (format!("{dash}?queryTime={END}{q11}"), "quantiles[]", "limits.max_quantiles"),
        (format!("{dash}?queryTime={END}{l11}"), "byLabels[]", "limits.max_by_labels"),
        (
            format!("/api/namespaces/graph?namespaces={}", many_ns.join(",")),
            "namespaces",
            "limits.max_graph_namespaces",
        ),
        (
            "/api/namespaces/graph?namespaces=bookinfo&duration=721h".to_string(),
            "duration",
            "limits.max_window",
        ),
        (format!("{dash}?duration=2678400&step=3600"), "duration", "limits.max_window"),
        (format!("{dash}?rateInterval=31d"), "rateInterval", "limits.max_window"),
        (
            "/api/namespaces/bookinfo/health?rateInterval=31d".to_string(),
            "rateInterval",
            "limits.max_window",
        ),
        (
            "/api/namespaces/bookinfo/apps/reviews/health?rateInterval=31d".to_string(),
            "rateInterval",
            "limits.max_window",
        ),
        (
            format!("/api/namespaces/graph?namespaces=bookinfo&queryTime={future}"),
            "queryTime",
            "limits.max_query_time_skew",
        ),
        (format!("{dash}?queryTime={future}"), "queryTime", "limits.max_query_time_skew"),
        (format!("{dash}?duration=86400&step=1"), "step", "limits.max_points"),
        (
            "/api/namespaces/bookinfo/metrics?duration=86400&step=5".to_string(),
            "step",
            "limits.max_points",
        ),
    ];
    for (url, param, key) in cases {
        let before = queries_at(&prom);
        let r = m.get(&url);
        assert_eq!(r.status, 400, "{url}: {}", r.text());
        let body = r.json();
        assert_eq!(body["code"], 400);
        let msg = body["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains(param) && msg.contains(key),
            "{url}: message should name {param} and {key}: {msg}"
        );
        assert_eq!(queries_at(&prom), before, "{url}: no query may reach the backend");
    }
}

#[test]
fn answers_over_the_caps_fail_the_request_and_say_so() {
    let f = fixture(ARGS);
    let prom = PromServer::start(&f);
    // Prometheus: the plugin stops reading past the byte cap.
    let m = start(&prom, &[], "[limits]\nmax_answer_bytes = 400\n");
    let r =
        m.get(&format!("/api/namespaces/graph?namespaces=bookinfo&queryTime={END}&duration=10m"));
    assert_eq!(r.status, 500, "{}", r.text());
    let msg = r.json()["message"].as_str().unwrap_or_default().to_string();
    assert!(msg.contains("too large") && msg.contains("bytes"), "{msg}");
    // The embedded store stops evaluating past the series cap.
    let dir = plugin_dir(BUNDLED);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [metrics]\nbackend = \"openmetrics_file\"\n[metrics.openmetrics_file]\npath = {:?}\n\
         [limits]\nmax_answer_series = 2\n",
        dir.path(),
        f.openmetrics
    );
    let m = Meshlens::start(&cfg, &[], vec![dir]).expect("meshlens starts");
    let r =
        m.get(&format!("/api/namespaces/graph?namespaces=bookinfo&queryTime={END}&duration=10m"));
    assert_eq!(r.status, 500, "{}", r.text());
    let msg = r.json()["message"].as_str().unwrap_or_default().to_string();
    assert!(msg.contains("too large") && msg.contains("max_answer_series"), "{msg}");
}

#[test]
fn a_burst_of_graphs_gets_503_with_retry_after_while_cheap_operations_answer() {
    let f = fixture(ARGS);
    let prom = PromServer::start(&f);
    // Each graph keeps a core busy for a second (the `slow1` appender spins), so the two slots
    // and eight queue places are still taken when the rest of the burst arrives, however
    // fast the build: without it an optimised or idle machine answered all 100 in time.
    let m = Arc::new(start(
        &prom,
        &["slow-appender"],
        "[limits]\nmax_concurrent_requests = 2\nmax_queued_requests = 8\nqueue_wait = \"2s\"\n",
    ));
    let url = format!(
        "/api/namespaces/graph?namespaces=bookinfo,istio-system&queryTime={END}&duration=10m&graphType=versionedApp&appenders=slow1"
    );
    let barrier = Arc::new(Barrier::new(101));
    let workers: Vec<_> = (0..100)
        .map(|_| {
            let (m, url, barrier) = (m.clone(), url.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                m.get(&url)
            })
        })
        .collect();
    barrier.wait();
    // The namespace list and the status keep answering throughout (bounded loop).
    let mut cheap = 0;
    while cheap < 200 && !workers.iter().all(|w| w.is_finished()) {
        let r = m.get("/api/namespaces");
        assert_eq!(r.status, 200, "namespace list during the burst: {}", r.text());
        assert_eq!(m.get("/api/status").status, 200);
        cheap += 1;
    }
    let answers: Vec<_> = workers.into_iter().map(|w| w.join().expect("worker")).collect();
    let busy: Vec<_> = answers.iter().filter(|r| r.status == 503).collect();
    let ok = answers.iter().filter(|r| r.status == 200).count();
    assert_eq!(
        busy.len() + ok,
        100,
        "every answer is 200 or 503: {:?}",
        answers.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert!(!busy.is_empty(), "some requests are refused");
    assert!(ok >= 2, "the admitted ones are answered");
    for r in busy {
        assert_eq!(r.header("retry-after"), Some("1"), "{}", r.text());
        assert!(r.json()["message"].as_str().unwrap_or_default().contains("busy"), "{}", r.text());
    }
    assert!(cheap > 0);
}

/// The log lines saying a request's CPU work stopped early.
fn stopped(m: &Meshlens) -> usize {
    m.logs
        .lock()
        .map(|l| l.iter().filter(|l| l.contains("its CPU work stopped")).count())
        .unwrap_or(0)
}

/// Waits (bounded) for `n` such lines, then checks there are exactly `n`: the log has
/// its own writer thread, so a line may land a moment after the answer that follows it.
fn assert_stopped(m: &Meshlens, n: usize, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while stopped(m) < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(stopped(m), n, "{what}");
}

/// `meshlens_cpu_pool_busy` from the service's own /metrics, read off a raw connection: the
/// shared helper also starts a thread, builds a client and checks the body, which took longer
/// than the service itself and was most of the printed time to a freed pool.
fn cpu_busy(m: &Meshlens) -> Option<u64> {
    let mut conn = TcpStream::connect(&m.addr).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(30))).expect("read timeout");
    write!(conn, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").expect("send");
    let mut text = String::new();
    conn.read_to_string(&mut text).expect("read /metrics");
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    text.lines().find_map(|l| l.strip_prefix("meshlens_cpu_pool_busy ")?.trim().parse().ok())
}

/// How long the CPU work of a request ran on after the request was gone, in µs, as the
/// service logged it when the work stopped (the last such line).
fn stopped_after_us(m: &Meshlens) -> Option<u64> {
    let logs = m.logs.lock().ok()?;
    let line = logs.iter().rev().find(|l| l.contains("its CPU work stopped"))?;
    line.split("stopped_after_us=").nth(1)?.split_whitespace().next()?.parse().ok()
}

/// Waits (bounded) until the CPU pool runs `n` jobs. Polled every 10 ms, so the printed
/// time to a freed pool is not mostly the poll's period.
fn wait_for_busy(m: &Meshlens, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while cpu_busy(m) != Some(n) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(cpu_busy(m), Some(n), "CPU pool jobs");
}

/// Waits (bounded) for a log line containing `text`.
fn wait_for_log(m: &Meshlens, text: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !m.logged(text) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    m.logged(text)
}

/// One slot, one CPU thread; six appenders of one second each: a graph costs six seconds
/// unless it is stopped. Each appender checks the request's cancellation flag while it
/// spins. The next request may wait four seconds.
fn slow_graph_server(prom: &PromServer, adjust: impl FnOnce(&mut Config)) -> Meshlens {
    start_with(
        prom,
        &["slow-appender"],
        "[limits]\nmax_concurrent_requests = 1\ncpu_threads = 1\nqueue_wait = \"4s\"\n",
        adjust,
    )
}

const SLOW_GRAPH: &str = "/api/namespaces/graph?namespaces=bookinfo&duration=10m&appenders=slow1,slow2,slow3,slow4,slow5,slow6&queryTime=1700000000";

#[test]
fn a_cancelled_request_releases_its_cpu_and_its_slot() {
    let f = fixture(ARGS);
    let prom = PromServer::start(&f);
    let m = slow_graph_server(&prom, |_| {});
    // The client goes away mid-build (six seconds of appenders ahead).
    let mut conn = TcpStream::connect(&m.addr).expect("connect");
    write!(conn, "GET {SLOW_GRAPH} HTTP/1.1\r\nHost: x\r\n\r\n").expect("send");
    wait_for_busy(&m, 1);
    drop(conn);
    // The pool frees up and says why.
    wait_for_busy(&m, 0);
    assert_stopped(&m, 1, "the build was stopped, not finished");
    // The appender under way saw the flag and stopped mid-way, not at its end. Which one is
    // under way depends on how soon the close is seen: on a loaded machine (the test binary
    // runs other files' tests beside this one) slow1 may have ended first, and slow2 is told.
    assert!(wait_for_log(&m, "stopped: the request is gone"), "the appender under way was told");
    // Its slot is free: the next expensive request is admitted, not refused after the wait.
    let r = m.get("/api/namespaces/bookinfo/health");
    assert_eq!(r.status, 200, "after a client went away: {}", r.text());
}

#[test]
fn a_request_past_its_deadline_releases_its_cpu_and_its_slot() {
    let f = fixture(ARGS);
    let prom = PromServer::start(&f);
    // Half-way through the third appender: at a whole second, the deadline fell where one
    // appender ends and the next begins, and a late timer on a busy machine found the job
    // between the two (stopped, but no appender told).
    let m = slow_graph_server(&prom, |c| {
        c.server.request_timeout = meshlens_params::HumanDuration(Duration::from_millis(2500))
    });
    let r = m.get(SLOW_GRAPH);
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.text().contains("timed out"), "{}", r.text());
    wait_for_busy(&m, 0);
    assert_stopped(&m, 1, "the build was stopped, not finished");
    // The appender under way at the deadline was told, and stopped mid-way.
    assert!(wait_for_log(&m, "stopped: the request is gone"), "the appender was told");
    let r = m.get("/api/namespaces/bookinfo/health");
    assert_eq!(r.status, 200, "after a request timed out: {}", r.text());
}

/// `meshlens_graph_phase_duration_seconds` of the build phase: (builds finished, seconds).
fn builds(m: &Meshlens) -> (u64, f64) {
    let text = m.get("/metrics").text();
    let value = |suffix: &str| {
        text.lines()
            .filter(|l| l.starts_with(&format!("meshlens_graph_phase_duration_seconds_{suffix}{{")))
            .filter(|l| l.contains("phase=\"build\""))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    (value("count") as u64, value("sum"))
}

/// One CPU thread, one slot, and a backend whose traffic answer has 120,000 series (the
/// `big-traffic` test plugin), without appenders: a graph is one long build. A client that
/// leaves while it is being built stops it (the build is never recorded as finished) and the
/// pool and slot free up; before, the build ran to its end.
#[test]
fn a_request_cancelled_mid_build_stops_building() {
    let dir = plugin_dir(&["big-traffic"]);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [metrics]\nbackend = \"big_traffic\"\nduration_histogram = \"milliseconds\"\n\
         [metrics.big_traffic]\nseries = 120000\n\
         [limits]\nmax_concurrent_requests = 1\ncpu_threads = 1\nqueue_wait = \"4s\"\n\
         max_answer_series = 200000\n",
        dir.path()
    );
    let m = Meshlens::start(&cfg, &[], vec![dir]).unwrap_or_else(|e| panic!("meshlens: {e:?}"));
    let path = format!(
        "/api/namespaces/graph?namespaces=bookinfo&graphType=workload&appenders=&queryTime={}",
        now() - 60
    );
    // Whole, the graph is built once: its 120,000 edges, and one build phase recorded.
    let r = m.get(&path);
    assert_eq!(r.status, 200, "{}", r.text());
    let edges = r.json()["elements"]["edges"].as_array().map_or(0, Vec::len);
    assert_eq!(edges, 120_000);
    let (count, secs) = builds(&m);
    assert_eq!(count, 1);
    println!("one build of 120,000 series: {:.0} ms", secs * 1000.0);

    // The client leaves as soon as the build has started.
    let mut conn = TcpStream::connect(&m.addr).expect("connect");
    write!(conn, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").expect("send");
    wait_for_busy(&m, 1);
    let left = Instant::now();
    drop(conn);
    wait_for_busy(&m, 0);
    println!("CPU pool free {} ms after the client left", left.elapsed().as_millis());
    assert_stopped(&m, 1, "the request's CPU work stopped early");
    let late = stopped_after_us(&m).expect("the service logs how long the work ran on");
    println!(
        "  (by the service: its CPU work ended {:.1} ms after the request did)",
        late as f64 / 1e3
    );
    assert_eq!(builds(&m).0, 1, "the second build was stopped before its end");
    // The slot is free: the next graph is admitted and built.
    let r = m.get(&path);
    assert_eq!(r.status, 200, "after a client left mid-build: {}", r.text());
    assert_eq!(builds(&m).0, 2);
}
