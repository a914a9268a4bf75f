//! Requests from a chosen loopback source address (127.0.0.2, ...), for limits kept per
//! client address, and the resident memory of a process.

use std::{net::IpAddr, time::Duration};

use crate::server::{Response, install_crypto_provider};

/// A GET to `addr` (host:port) from `source`, on a thread of its own (callable from sync and
/// async tests alike). Errors are returned, not panicked, so load loops can count them.
pub fn get_from(
    source: IpAddr,
    addr: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Response, String> {
    let url = format!("http://{addr}{path}");
    let headers: Vec<(String, String)> =
        headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    std::thread::scope(|s| {
        s.spawn(|| {
            install_crypto_provider();
            let client = reqwest::blocking::Client::builder()
                .local_address(source)
                .timeout(Duration::from_secs(30))
                .no_proxy()
                .build()
                .map_err(|e| format!("HTTP client: {e}"))?;
            let mut req = client.get(&url);
            for (k, v) in &headers {
                req = req.header(k, v);
            }
            let resp = req.send().map_err(|e| format!("{url}: {e}"))?;
            let status = resp.status().as_u16();
            let headers = resp
                .headers()
                .iter()
                .map(|(k, v)| {
                    (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned())
                })
                .collect();
            let body = resp.bytes().map_err(|e| format!("{url}: body: {e}"))?.to_vec();
            Ok(Response { status, headers, body })
        })
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
    })
}

/// `VmRSS` of process `pid` in KiB, from `/proc/<pid>/status`.
pub fn rss_kib(pid: u32) -> Option<u64> {
    proc_status_kib(pid, "VmRSS:")
}

/// `VmHWM` (the peak resident size so far) of process `pid` in KiB.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    proc_status_kib(pid, "VmHWM:")
}

fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].trim().trim_end_matches("kB").trim().parse().ok()
}
