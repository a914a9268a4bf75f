//! Splitting per-element work of a big graph across the machine's cores.
//!
//! Matching series to edges, hashing ids and writing JSON are per element and independent;
//! on a graph of 40,000 elements they were most of the request. Small inputs stay on the
//! calling thread. No async runtime is involved: these are scoped OS threads.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Elements per unit of work: big enough that claiming one costs nothing, small enough that
/// the threads finish together.
const CHUNK: usize = 1024;
/// Below this, starting a thread costs more than it saves.
const MIN_PARALLEL: usize = 4 * CHUNK;
/// More threads than this only add copying for the caller to join.
const MAX_THREADS: usize = 4;

/// `f(start, chunk)` over consecutive chunks of `items`, results in chunk order.
///
/// A panic in `f` reaches the caller as a panic, whichever thread it happened on.
pub fn map_chunks<'t, T: Sync, R: Send>(items: &'t [T], f: impl Fn(usize, &'t [T]) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS);
    if threads < 2 || items.len() < MIN_PARALLEL {
        return vec![f(0, items)];
    }
    let chunks: Vec<&'t [T]> = items.chunks(CHUNK).collect();
    let next = AtomicUsize::new(0);
    // Each thread claims the next unclaimed chunk until none is left.
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(chunk) = chunks.get(i) else { break };
            done.push((i, f(i * CHUNK, chunk)));
        }
        done
    };
    let mut all = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut all = work();
        for h in helpers {
            match h.join() {
                Ok(done) => all.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    all.sort_unstable_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_order_and_cover_every_item_once() {
        for n in [0, 1, CHUNK - 1, MIN_PARALLEL - 1, MIN_PARALLEL, 10 * CHUNK + 7] {
            let items: Vec<usize> = (0..n).collect();
            let parts = map_chunks(&items, |start, c| {
                assert!(c.first().is_none_or(|&x| x == start), "start is the chunk's offset");
                c.iter().map(|x| x * 2).collect::<Vec<_>>()
            });
            let joined: Vec<usize> = parts.concat();
            assert_eq!(joined, items.iter().map(|x| x * 2).collect::<Vec<_>>(), "n = {n}");
        }
    }

    #[test]
    fn a_panic_in_a_chunk_reaches_the_caller() {
        let items: Vec<usize> = (0..MIN_PARALLEL * 2).collect();
        let r = std::panic::catch_unwind(|| map_chunks(&items, |start, c| assert!(!(start..start + c.len()).contains(&(3 * CHUNK)), "boom")));
        assert!(r.is_err());
    }
}
