//! The hardened listener through the real binary: half-open and slow connections are closed
//! after `server.header_read_timeout` without locking other clients out, idle keep-alive
//! connections after `server.idle_timeout`, oversized heads get 431, HTTP/2 only when
//! switched on, and HTTPS with a certificate made here.

use std::{
    io::{ErrorKind, Read, Write},
    net::TcpStream,
    time::{Duration, Instant},
};

use integration_tests::server::{Meshlens, install_crypto_provider, request_within};

fn start(server: &str) -> Meshlens {
    let cfg = format!(
        "[server]\nport = 0\n{server}\n[auth]\nstrategy = \"anonymous\"\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n"
    );
    Meshlens::start(&cfg, &[], vec![]).unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"))
}

/// Whether the server closed `s`: a read ends (EOF or reset) within `within` instead of
/// timing out.
fn closed_by_server(mut s: &TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).ok();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn idle_half_open_connections_do_not_lock_clients_out_and_are_closed() {
    let m = start(
        "header_read_timeout = \"2s\"\nmax_connections = 10000\nmax_connections_per_address = 10000",
    );
    let idle: Vec<TcpStream> = (0..5000)
        .map(|i| TcpStream::connect(&m.addr).unwrap_or_else(|e| panic!("connection {i}: {e}")))
        .collect();
    // A slow client: half a request head, then nothing.
    let mut slow = TcpStream::connect(&m.addr).expect("connect");
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n").expect("send");

    let started = Instant::now();
    let r = request_within(&m.addr, "GET", "/healthz", &[], Duration::from_secs(2))
        .expect("/healthz answers next to 5,000 idle connections");
    println!("/healthz next to 5,000 idle connections: {:?}", started.elapsed());
    assert_eq!(r.status, 200);

    // Every idle one and the slow one are closed by the server (header_read_timeout = 2s).
    assert!(closed_by_server(&slow, Duration::from_secs(20)), "the slow head was not cut off");
    let open = idle.iter().filter(|s| !closed_by_server(s, Duration::from_secs(20))).count();
    assert_eq!(open, 0, "idle connections the server left open");
    assert_eq!(
        request_within(&m.addr, "GET", "/healthz", &[], Duration::from_secs(2))
            .expect("still serving")
            .status,
        200
    );
}

/// A kept-alive connection that has been answered 200 to one `GET /healthz`.
fn answered_keep_alive(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").expect("send");
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut buf = [0u8; 1024];
    let n = s.read(&mut buf).expect("answer");
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&buf[..n]));
    s
}

/// Clients past `max_connections` wait in the kernel's accept queue, and a burst of them is
/// not lost: with the one connection the service may serve held open, a thousand more (fewer
/// where the kernel caps the queue lower) connect and send their requests, and each is
/// answered once the holder leaves. (A plain bind's queue held 128: the 129th connect hung
/// in SYN retries.)
#[test]
fn a_burst_of_connections_past_the_limit_waits_in_the_accept_queue() {
    let m = start("max_connections = 1");
    let holder = answered_keep_alive(&m.addr);

    // The kernel caps the queue at net.core.somaxconn (4096 since Linux 5.4).
    let somaxconn: usize = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(4096);
    let burst = somaxconn.saturating_sub(8).min(1000);
    if burst <= 128 {
        println!("net.core.somaxconn is {somaxconn}: no burst past a plain bind's 128 fits");
        return;
    }
    let addr: std::net::SocketAddr = m.addr.parse().expect("address");
    let waiting: Vec<TcpStream> = (0..burst)
        .map(|i| {
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
                .unwrap_or_else(|e| panic!("connection {i} past the limit: {e}"));
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap_or_else(|e| panic!("request {i}: {e}"));
            s
        })
        .collect();
    drop(holder);
    for (i, mut s) in waiting.into_iter().enumerate() {
        s.set_read_timeout(Some(Duration::from_secs(30))).ok();
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).unwrap_or_else(|e| panic!("answer {i}: {e}"));
        assert!(
            answer.starts_with(b"HTTP/1.1 200"),
            "answer {i}: {}",
            String::from_utf8_lossy(&answer)
        );
    }
}

#[test]
fn idle_keep_alive_connections_are_closed_after_the_idle_timeout() {
    let m = start("header_read_timeout = \"60s\"\nidle_timeout = \"1s\"");
    let s = answered_keep_alive(&m.addr);
    // The header timeout (60 s) would keep it far longer than this wait.
    assert!(
        closed_by_server(&s, Duration::from_secs(20)),
        "the idle keep-alive connection stayed open"
    );
}

#[test]
fn oversized_heads_get_431() {
    let m = start("max_headers = 20\nmax_header_bytes = 8192");
    let many: Vec<(String, String)> =
        (0..40).map(|i| (format!("x-h{i}"), "v".to_string())).collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let r =
        request_within(&m.addr, "GET", "/healthz", &many, Duration::from_secs(10)).expect("answer");
    assert_eq!(r.status, 431, "{} header fields", many.len());
    let big = "a".repeat(10_000);
    let r = request_within(&m.addr, "GET", "/healthz", &[("x-big", &big)], Duration::from_secs(10))
        .expect("answer");
    assert_eq!(r.status, 431, "a 10 kB header");
    let r =
        request_within(&m.addr, "GET", "/healthz", &[("x-small", "ok")], Duration::from_secs(10))
            .expect("answer");
    assert_eq!(r.status, 200);
}

fn h2c_get(addr: &str, path: &str) -> Result<reqwest::Version, String> {
    install_crypto_provider();
    let client = reqwest::blocking::Client::builder()
        .http2_prior_knowledge()
        .timeout(Duration::from_secs(10))
        .no_proxy()
        .build()
        .map_err(|e| e.to_string())?;
    let r = client.get(format!("http://{addr}{path}")).send().map_err(|e| e.to_string())?;
    if r.status() != 200 {
        return Err(format!("status {}", r.status()));
    }
    Ok(r.version())
}

#[test]
fn http2_cleartext_only_when_switched_on() {
    let off = start("");
    assert!(
        h2c_get(&off.addr, "/healthz").is_err(),
        "HTTP/2 answered although server.http2 = false"
    );
    let on = start("http2 = true");
    assert_eq!(h2c_get(&on.addr, "/healthz"), Ok(reqwest::Version::HTTP_2));
    assert_eq!(
        request_within(&on.addr, "GET", "/healthz", &[], Duration::from_secs(10))
            .expect("HTTP/1.1 too")
            .status,
        200
    );
}

#[test]
fn https_with_a_generated_certificate() {
    let cert =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
    let dir = tempfile::tempdir().expect("temp dir");
    let (cert_path, key_path) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert_path, cert.cert.pem()).expect("write cert");
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).expect("write key");
    let m = start(&format!(
        "http2 = true\n[server.tls]\ncert = {:?}\nkey = {:?}",
        cert_path.display().to_string(),
        key_path.display().to_string()
    ));
    let port = m.addr.rsplit(':').next().expect("port");

    install_crypto_provider();
    let root =
        reqwest::Certificate::from_pem(cert.cert.pem().as_bytes()).expect("root certificate");
    let client = reqwest::blocking::Client::builder()
        .tls_certs_only([root])
        .resolve("localhost", m.addr.parse().expect("socket address"))
        .timeout(Duration::from_secs(10))
        .no_proxy()
        .build()
        .expect("HTTPS client");
    let r = client
        .get(format!("https://localhost:{port}/api/namespaces"))
        .send()
        .expect("HTTPS request");
    assert_eq!(r.status(), 200);
    assert_eq!(r.version(), reqwest::Version::HTTP_2, "ALPN h2 with server.http2 = true");
    let body: serde_json::Value = r.json().expect("JSON");
    assert!(body.as_array().is_some_and(|a| a.iter().any(|n| n["name"] == "bookinfo")), "{body}");
    // Plain HTTP on the TLS port gets no answer.
    assert!(request_within(&m.addr, "GET", "/healthz", &[], Duration::from_secs(5)).is_err());
    drop(dir);
}
