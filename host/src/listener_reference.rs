//! The listener against a reference implementation, `warp::serve` (docs/exceptions.md):
//! the same filter served both ways answers the same requests with the same bytes (less
//! the `date` header). The listener adds caps, timeouts and a drain deadline around
//! hyper's connections; the HTTP itself must stay hyper's and warp's.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use warp::Filter;

use super::{Limits, run};
use crate::config::ServerConfig;

/// Sends `request` on a new connection and reads until the server closes it.
async fn exchange(addr: std::net::SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(request).await.expect("send");
    let mut out = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(10), s.read_to_end(&mut out));
    read.await.expect("answered within 10 s").expect("read");
    let text = String::from_utf8_lossy(&out).into_owned();
    // Only the clock may differ.
    text.split("\r\n")
        .filter(|l| !l.to_ascii_lowercase().starts_with("date:"))
        .collect::<Vec<_>>()
        .join("\r\n")
}

#[tokio::test]
async fn answers_equal_warp_serve_byte_for_byte() {
    let filter = warp::path!("hello" / String)
        .map(|name: String| format!("hello {name}"))
        .or(warp::post().and(warp::path("echo")).and(warp::body::bytes()).map(
            |b: hyper::body::Bytes| {
                warp::reply::with_status(b.to_vec(), warp::http::StatusCode::CREATED)
            },
        ))
        .or(warp::path("json").map(|| warp::reply::json(&serde_json::json!({"a": [1, 2]}))));

    let reference = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let reference_addr = reference.local_addr().expect("addr");
    tokio::spawn(warp::serve(filter).incoming(reference).run());

    let ours = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let ours_addr = ours.local_addr().expect("addr");
    let limits =
        Arc::new(Limits::from_config(&ServerConfig { http2: false, ..Default::default() }));
    let service = hyper_util::service::TowerToHyperService::new(warp::service(filter));
    let (_stop_tx, stop) = tokio::sync::watch::channel(false);
    tokio::spawn(run(ours, None, limits, service, stop));

    let requests: [&[u8]; 8] = [
        b"GET /hello/world HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"GET /missing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"HEAD /hello/world HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"GET /json HTTP/1.0\r\n\r\n",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nabcde",
        b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        // Two pipelined on one keep-alive connection, the second closing it.
        b"GET /hello/a HTTP/1.1\r\nHost: x\r\n\r\nGET /hello/b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"NOT HTTP\r\n\r\n",
    ];
    for r in requests {
        let (want, got) = (exchange(reference_addr, r).await, exchange(ours_addr, r).await);
        assert_eq!(got, want, "request {:?}", String::from_utf8_lossy(r));
        assert!(!want.is_empty() || r.starts_with(b"NOT"), "answered");
    }
}
