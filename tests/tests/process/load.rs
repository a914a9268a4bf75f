//! Under load, on a generated mesh (20 namespaces of 5 workloads) backed by real Prometheus:
//!
//! - 100 concurrent all-namespace graph requests (2 slots, 4 places in the queue): the ones
//!   past the slots and the queue are
//!   refused at once with 503 and `Retry-After`, the rest are answered, and `/healthz` and
//!   the namespace list keep answering throughout (their p99 is printed, not asserted);
//! - `wrk` with 2,000 connections for 15 s on that graph (default `[limits]`): every answer is 200 or 503 with
//!   `Retry-After`, and the server's peak RSS stays under 256 MiB.

use std::{
    io::{Read, Write},
    net::TcpStream,
    sync::{Arc, Barrier, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use integration_tests::{
    load::{Wrk, proc_status},
    mesh::TestMesh,
    server::Meshlens,
};

const NAMESPACES: usize = 20;
const WORKLOADS: usize = 5;

/// One load at a time: the two tests would otherwise load each other's server.
fn alone() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    v.get(((v.len() as f64 * p).ceil() as usize).saturating_sub(1)).copied().unwrap_or_default()
}

/// Answers `/healthz` and `/api/namespaces` in turn until `done` says stop (at most
/// `max` rounds); every answer must be 200. Their latencies.
fn cheap_calls(m: &Meshlens, done: impl Fn() -> bool, max: usize) -> Vec<Duration> {
    let mut took = Vec::new();
    while took.len() < max && !done() {
        for path in ["/healthz", "/api/namespaces"] {
            // As a probe calls it: a new connection, the request, the answer read to the end.
            // (The shared test helper also starts a thread, builds a client and checks the
            // body against the API document: the test's time, not the service's.)
            let t = Instant::now();
            let conn = TcpStream::connect(&m.addr).expect("connect");
            let r = raw_get(conn, path);
            took.push(t.elapsed());
            assert_eq!(r.status, 200, "{path} under load: {}", r.body);
        }
    }
    took
}

/// One answer read off a raw connection: status, `Retry-After`, body.
struct Raw {
    status: u16,
    retry_after: Option<String>,
    body: String,
    took: Duration,
}

/// Sends `GET path` on an open connection and reads the answer to the end (the request asks
/// for `Connection: close`).
fn raw_get(mut conn: TcpStream, path: &str) -> Raw {
    let t = Instant::now();
    conn.set_read_timeout(Some(Duration::from_secs(60))).expect("read timeout");
    write!(conn, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").expect("send");
    let mut text = String::new();
    conn.read_to_string(&mut text).expect("read the answer");
    let took = t.elapsed();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let retry_after = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("retry-after").then(|| v.trim().to_string())
    });
    Raw { status, retry_after, body: body.to_string(), took }
}

#[test]
fn a_hundred_concurrent_all_namespace_graphs_are_admitted_or_refused_at_once() {
    let _alone = alone();
    let mesh = TestMesh::new(NAMESPACES, WORKLOADS);
    // Two slots and four places: with the default 16 + 64, an optimised build answers a
    // 20-namespace graph faster than 100 requests arrive, and nothing is ever refused.
    let m =
        Arc::new(mesh.meshlens("[limits]\nmax_concurrent_requests = 2\nmax_queued_requests = 4\n"));
    let url = mesh.graph_path();
    let warm = m.get(&url);
    assert_eq!(warm.status, 200, "{}", warm.text());
    assert!(warm.json()["elements"]["nodes"].as_array().is_some_and(|n| n.len() >= NAMESPACES));

    // 100 connections opened first, so the requests arrive together.
    let conns: Vec<TcpStream> =
        (0..100).map(|_| TcpStream::connect(&m.addr).expect("connect")).collect();
    let barrier = Arc::new(Barrier::new(101));
    let workers: Vec<_> = conns
        .into_iter()
        .map(|conn| {
            let (url, barrier) = (url.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                raw_get(conn, &url)
            })
        })
        .collect();
    barrier.wait();
    let took = cheap_calls(&m, || workers.iter().all(|w| w.is_finished()), 2_000);
    let answers: Vec<Raw> = workers.into_iter().map(|w| w.join().expect("worker")).collect();

    let statuses: Vec<u16> = answers.iter().map(|r| r.status).collect();
    assert!(statuses.iter().all(|s| *s == 200 || *s == 503), "{statuses:?}");
    let ok: Vec<&Raw> = answers.iter().filter(|r| r.status == 200).collect();
    // 2 slots and 2 + 4 places for 100 requests arriving together.
    let refused_at_once: Vec<&Raw> = answers
        .iter()
        .filter(|r| r.status == 503 && r.body.contains("too many requests are waiting"))
        .collect();
    assert!(!refused_at_once.is_empty(), "the requests past the queue are refused: {statuses:?}");
    assert!(ok.len() >= 2, "the admitted requests are answered: {statuses:?}");
    for r in answers.iter().filter(|r| r.status == 503) {
        assert_eq!(r.retry_after.as_deref(), Some("1"), "{}", r.body);
    }
    assert!(!took.is_empty(), "cheap operations were called during the burst");
    let slowest_refusal = refused_at_once.iter().map(|r| r.took).max().unwrap_or_default();
    let fastest_graph = ok.iter().map(|r| r.took).min().unwrap_or_default();
    println!(
        "100 graphs of {NAMESPACES} namespaces: {} answered (fastest {fastest_graph:?}), {} refused at once \
         (slowest refusal {slowest_refusal:?}), {} refused after the queue wait; during the burst \
         {} cheap calls (/healthz, /api/namespaces): p50 {:?}, p99 {:?}",
        ok.len(),
        refused_at_once.len(),
        100 - ok.len() - refused_at_once.len(),
        took.len(),
        percentile(took.clone(), 0.5),
        percentile(took, 0.99),
    );
}

/// Connection caps that let wrk's 2,000 connections from 127.0.0.1 all open.
const TWO_THOUSAND_CONNECTIONS: &[(&str, &str)] = &[
    ("MESHLENS_SERVER__MAX_CONNECTIONS", "4000"),
    ("MESHLENS_SERVER__MAX_CONNECTIONS_PER_ADDRESS", "4000"),
];

#[test]
fn two_thousand_connections_get_200_or_503_and_rss_stays_under_256_mib() {
    let _alone = alone();
    let mesh = TestMesh::new(NAMESPACES, WORKLOADS);
    // 2,000 connections from one address, all served: above the default caps (1,000 open,
    // 200 per address), which exist for the Deployment's memory and for fairness.
    let m = mesh.meshlens_with_env("", TWO_THOUSAND_CONNECTIONS);
    let url = mesh.graph_path();
    assert_eq!(m.get(&url).status, 200, "warm-up");
    let pid = m.pid();
    let rss_start = proc_status(pid, "VmRSS").expect("VmRSS");

    let wrk = Wrk::start(&m.addr, &[url], 2_000, 15);
    // Cheap calls during the run (bounded), and the RSS as it goes.
    let mut took = Vec::new();
    let mut rss_max = rss_start;
    let until = Instant::now() + Duration::from_secs(15);
    while Instant::now() < until && took.len() < 1_000 {
        took.extend(cheap_calls(&m, || false, 1));
        rss_max = rss_max.max(proc_status(pid, "VmRSS").unwrap_or(0));
        std::thread::sleep(Duration::from_millis(100));
    }
    let run = wrk.finish();
    let peak = proc_status(pid, "VmHWM").expect("VmHWM");
    let threads = proc_status(pid, "Threads").unwrap_or(0);
    println!(
        "wrk 2,000 connections x 15 s on the {NAMESPACES}-namespace graph: {run:?}; RSS {} MiB at start, \
         {} MiB sampled max, {} MiB peak (VmHWM), {threads} threads; cheap calls p99 {:?}",
        rss_start / 1024,
        rss_max / 1024,
        peak / 1024,
        percentile(took, 0.99)
    );
    assert!(run.ok > 0, "some graphs are answered: {run:?}");
    assert_eq!(run.other, 0, "every answer is 200 or 503 (other: {}): {run:?}", run.other_status);
    assert_eq!(run.busy_without_retry_after, 0, "every 503 carries Retry-After: {run:?}");
    assert!(peak < 256 * 1024, "peak RSS {} MiB, over 256 MiB", peak / 1024);
    // Still serving once the queue has drained (bounded wait).
    let mut status = 0;
    for _ in 0..20 {
        status = m.get(&mesh.graph_path()).status;
        if status == 200 {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(status, 200, "graphs are answered after the load");
}
