//! md5lanes against md-5 on what the graph hashes: 40,000 node and edge ids of 40 to 120
//! bytes. Prints the median of each and checks that the digests are equal.
//!
//! `cargo bench -p meshlens-traffic --bench md5lanes`

use std::hint::black_box;
use std::time::{Duration, Instant};

use md5::{Digest, Md5};
use meshlens_traffic::md5lanes::{LANES, digests};

// Many short runs: on a shared host the fastest shows the code's cost, the median the host's.
const RUNS: usize = 41;

/// Median and fastest, in ms.
fn figures(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    (v[v.len() / 2].as_secs_f64() * 1e3, v[0].as_secs_f64() * 1e3)
}

fn main() {
    // Shaped like internal ids: namespace, workload, version, service, protocol.
    let ids: Vec<String> = (0..40_000)
        .map(|i| {
            let mut s = format!(
                "ns-{}_workload-{}-v{}_svc-{}.ns-{}.svc.cluster.local",
                i % 200,
                i / 200,
                i % 3,
                i % 50,
                i % 200
            );
            if i % 2 == 0 {
                s.push_str(" -> destination_workload_edge_http_protocol");
            }
            s
        })
        .collect();
    let bytes: usize = ids.iter().map(String::len).sum();
    let (mut one, mut lanes) = (Vec::new(), Vec::new());
    let mut a: Vec<[u8; 16]> = Vec::new();
    let mut b: Vec<[u8; 16]> = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        a = black_box(ids.iter().map(|s| Md5::digest(s.as_bytes()).into()).collect());
        one.push(t.elapsed());
        let t = Instant::now();
        b = black_box(
            ids.chunks(LANES)
                .flat_map(|c| {
                    let msgs: Vec<&[u8]> = c.iter().map(|s| s.as_bytes()).collect();
                    digests(&msgs)
                })
                .collect(),
        );
        lanes.push(t.elapsed());
    }
    assert!(a == b, "md5lanes and md-5 disagree");
    let ((one, one_min), (lanes, lanes_min)) = (figures(one), figures(lanes));
    println!(
        "md5lanes: {} ids, {:.1} MB, median (fastest) of {RUNS} runs, one thread",
        ids.len(),
        bytes as f64 / 1e6
    );
    println!("  md-5, one at a time:      {one:.2} ms ({one_min:.2} ms)");
    println!(
        "  md5lanes, {LANES} side by side: {lanes:.2} ms ({lanes_min:.2} ms), {:.2}x ({:.2}x)",
        one / lanes,
        one_min / lanes_min
    );
}
