//! par-chunks against rayon on the work it is used for: a per-element step of a graph
//! (here, formatting an id and hashing it) over 1,000 to 120,000 elements, on a pool of
//! one thread per core as the service's CPU pool is. Prints the median of each.
//!
//! `cargo bench -p par-chunks --bench par_chunks`

use std::hint::black_box;
use std::time::{Duration, Instant};

use rayon::prelude::*;

const RUNS: usize = 15;

/// About the cost of resolving one series or hashing one id (a few hundred ns).
fn work(x: &u64) -> u64 {
    let s = format!("ns-{}_workload-{}_v{}", x % 200, x / 200, x % 3);
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for _ in 0..8 {
        for b in s.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

fn time(f: impl Fn() -> Vec<u64>) -> (f64, Vec<u64>) {
    let mut out = f();
    let mut runs = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let t = Instant::now();
        out = black_box(f());
        runs.push(t.elapsed());
    }
    (median(runs), out)
}

fn main() {
    let pool = rayon::ThreadPoolBuilder::new().build().expect("pool");
    println!(
        "par_chunks: median ms of {RUNS} runs, pool of {} threads (par-chunks uses at most 4)",
        pool.current_num_threads()
    );
    println!(
        "  {:>8} {:>11} {:>14} {:>17} {:>18} {:>20}",
        "elements",
        "sequential",
        "rayon par_iter",
        "rayon par_chunks",
        "par-chunks (pool)",
        "par-chunks (no pool)"
    );
    for n in [1_000u64, 10_000, 40_000, 120_000] {
        let items: Vec<u64> = (0..n).collect();
        let (seq, want) = time(|| items.iter().map(work).collect());
        let (par_iter, a) = pool.install(|| time(|| items.par_iter().map(work).collect()));
        let (rayon_chunks, b) = pool.install(|| {
            time(|| items.par_chunks(1024).flat_map_iter(|c| c.iter().map(work)).collect())
        });
        let ours = || {
            par_chunks::map_chunks(&items, |_, c| c.iter().map(work).collect::<Vec<_>>()).concat()
        };
        let (pc_pool, c) = pool.install(|| time(ours));
        let (pc_off, d) = time(ours);
        assert!(a == want && b == want && c == want && d == want, "results differ");
        println!(
            "  {n:>8} {seq:>11.2} {par_iter:>14.2} {rayon_chunks:>17.2} {pc_pool:>18.2} {pc_off:>20.2}"
        );
    }
}
