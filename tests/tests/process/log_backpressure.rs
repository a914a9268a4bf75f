//! A log reader that stops reading (a stuck container runtime, a slow pipe) does not stop the
//! service: every request logs a line, and those lines go through a bounded queue to a
//! thread of their own. When the queue is full, lines are dropped, and the log says how many
//! once its reader catches up. Before, the async workers wrote to stderr themselves and
//! blocked as soon as the pipe was full: every request, `/healthz` included, hung.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    process::{Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use integration_tests::server::{binary, workspace_root};

/// Requests sent while nobody reads the log: their lines are far more than the pipe
/// (64 KiB) and the queue (8,192 lines) hold.
const REQUESTS: usize = 10_000;

/// `GET path` on a kept-alive connection; the status (the body is read and dropped).
fn get(conn: &mut BufReader<TcpStream>, path: &str) -> u16 {
    // One write: a request split over several small ones would wait for delayed ACKs.
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
    conn.get_mut().write_all(request.as_bytes()).expect("send");
    let mut line = String::new();
    conn.read_line(&mut line).expect("status line (a stalled server times out here)");
    let status = line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut length = 0;
    loop {
        line.clear();
        conn.read_line(&mut line).expect("header");
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    conn.read_exact(&mut body).expect("body");
    status
}

#[test]
fn a_log_reader_that_stops_reading_does_not_stop_requests() {
    let mut cfg = tempfile::Builder::new().suffix(".toml").tempfile().expect("config");
    let demo = workspace_root().join("config").join("demo");
    write!(
        cfg,
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [{demo:?}]\n"
    )
    .expect("write config");
    let mut child = Command::new(binary())
        .arg("serve")
        .arg("--config")
        .arg(cfg.path())
        .current_dir(workspace_root())
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn meshlens");
    // stdout gives the address; stderr (the log) is not read until the end.
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("meshlens listening on http://") {
                let _ = tx.send(addr.to_string());
            }
        }
    });
    let addr = rx.recv_timeout(Duration::from_secs(60)).expect("meshlens started");
    let stream = TcpStream::connect(&addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    stream.set_nodelay(true).expect("nodelay");
    let mut conn = BufReader::new(stream);

    let started = Instant::now();
    for i in 0..REQUESTS {
        let path = if i % 2 == 0 { "/healthz" } else { "/api/namespaces" };
        assert_eq!(get(&mut conn, path), 200, "request {i}");
    }
    println!(
        "{REQUESTS} requests with the log unread: {:.0} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );

    // Once the log is read again, it says how many lines it could not keep.
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("log lines dropped") {
                let _ = tx.send(line);
            }
        }
    });
    // One more line to write, so the writer reports after catching up.
    assert_eq!(get(&mut conn, "/healthz"), 200);
    let report = rx.recv_timeout(Duration::from_secs(30)).expect("a report of dropped lines");
    let dropped: usize = report
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .expect("the report counts the lines");
    assert!(dropped > 0 && dropped < REQUESTS, "{report}");
    let _ = child.kill();
    let _ = child.wait();
}
