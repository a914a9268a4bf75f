//! Backend calls nobody waits for stop (plugin-api 0.1.2's `query_cancellable`), end to end:
//! the service (in this process) with the `spin-backend` test plugin, whose `spin` backend keeps a core
//! busy on every query until the host cancels it or its deadline (30 s here) passes.
//!
//! - A client that goes away while its graph waits for a backend query: the plugin sees the
//!   flag and stops, the service logs and counts the query as cancelled, and a later
//!   identical query is sent afresh.
//! - A backend that implements only `query` (as every one before 0.1.2) still answers.

use std::{
    io::Write,
    net::TcpStream,
    time::{Duration, Instant},
};

use integration_tests::{inprocess::InProcess as Meshlens, server::plugin_dir};

/// Past, so that every request asks the same queries (and the answer cache may keep them).
const GRAPH: &str =
    "/api/namespaces/graph?namespaces=bookinfo&duration=10m&appenders=&queryTime=1700000000";

fn start(backend: &str) -> Meshlens {
    let dir = plugin_dir(&["spin-backend"]);
    // One backend query at a time, so exactly one spins while the rest wait for the slot;
    // every deadline long enough that only cancellation can stop a query in this test.
    let cfg = format!(
        "[server]\nport = 0\nrequest_timeout = \"30s\"\n[auth]\nstrategy = \"anonymous\"\n\
         [plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [metrics]\nbackend = \"{backend}\"\ntimeout = \"30s\"\nduration_histogram = \"milliseconds\"\n\
         [limits]\nmax_backend_queries = 1\n",
        dir.path()
    );
    Meshlens::start(&cfg, &[], vec![dir]).unwrap_or_else(|e| panic!("meshlens: {e:?}"))
}

/// Log lines containing `text` so far.
fn count(m: &Meshlens, text: &str) -> usize {
    m.logs.lock().map(|l| l.iter().filter(|l| l.contains(text)).count()).unwrap_or(0)
}

/// Waits (bounded, well inside the 30 s deadlines) for `n` log lines containing `text`.
fn wait_for(m: &Meshlens, text: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while count(m, text) < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(count(m, text), n, "log lines with {text:?}");
}

/// `meshlens_backend_queries_total{backend="spin",outcome}` from the service's /metrics.
fn queries(m: &Meshlens, outcome: &str) -> u64 {
    let r = m.get("/metrics");
    assert_eq!(r.status, 200, "{}", r.text());
    r.text()
        .lines()
        .filter(|l| {
            l.starts_with("meshlens_backend_queries_total{")
                && l.contains("backend=\"spin\"")
                && l.contains(&format!("outcome=\"{outcome}\""))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// Sends the graph request, waits until its `n`-th backend query spins, and leaves.
fn leave_while_spinning(m: &Meshlens, n: usize) {
    let mut conn = TcpStream::connect(&m.addr).expect("connect");
    write!(conn, "GET {GRAPH} HTTP/1.1\r\nHost: x\r\n\r\n").expect("send");
    wait_for(m, "spin query started", n);
    let left = Instant::now();
    drop(conn);
    wait_for(m, "spin query stopped: cancelled", n);
    // A figure, not an assertion (polled every 5 ms; speed is for benchmarks).
    println!("the plugin stopped {} ms after the client left", left.elapsed().as_millis());
}

#[test]
fn a_backend_query_stops_when_its_client_goes_away() {
    let m = start("spin");
    leave_while_spinning(&m, 1);
    // The plugin's own line names it; the service says so too, in its log and its metrics.
    let line = m
        .logs
        .lock()
        .ok()
        .and_then(|l| l.iter().find(|l| l.contains("spin query stopped")).cloned())
        .unwrap_or_default();
    assert!(line.contains("spin-backend"), "{line}");
    wait_for(&m, "backend query cancelled: no request waits for its answer", 1);
    assert!(queries(&m, "cancelled") >= 1, "counted as cancelled");
    assert_eq!(queries(&m, "ok"), 0);
    // The queries that waited for the slot never reached the plugin.
    assert_eq!(count(&m, "spin query started"), 1);

    // The same graph again: its query is sent afresh (not joined to the cancelled one),
    // and stops in turn when this client leaves too.
    leave_while_spinning(&m, 2);
    assert_eq!(count(&m, "spin query stopped: deadline"), 0, "no query ran to its deadline");
    // The service goes on answering.
    assert_eq!(m.get("/api/namespaces").status, 200);
}

#[test]
fn a_backend_with_query_alone_still_answers() {
    let m = start("plain");
    let r = m.get(GRAPH);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.json()["elements"].is_object(), "{}", r.text());
    // Its queries went through `query` (the default `query_cancellable`).
    let deadline = Instant::now() + Duration::from_secs(10);
    while count(&m, "plain query answered") == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(count(&m, "plain query answered") > 0, "the plugin answered");
}
