//! Splitting per-element work of a big graph across the machine's cores.
//!
//! Matching series to edges, hashing ids and writing JSON are per element and independent;
//! on a graph of 40,000 elements they were most of the request. Small inputs stay on the
//! calling thread. No async runtime is involved: these are scoped OS threads.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

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
pub fn map_chunks<'t, T: Sync, R: Send>(
    items: &'t [T],
    f: impl Fn(usize, &'t [T]) -> R + Sync,
) -> Vec<R> {
    let mut all = Vec::new();
    map_chunks_in_order(items, f, |r| all.push(r));
    all
}

/// `f(start, chunk)` over consecutive chunks of `items`, each result handed to `consume` on
/// the calling thread in chunk order, while other threads compute the chunks ahead.
///
/// For work whose last step must be sequential (adding to one graph): that step overlaps
/// the parallel one instead of waiting for all of it. The calling thread computes chunks
/// too whenever the next one is not ready. A panic in `f` or `consume` reaches the caller.
pub fn map_chunks_in_order<'t, T: Sync, R: Send>(
    items: &'t [T],
    f: impl Fn(usize, &'t [T]) -> R + Sync,
    mut consume: impl FnMut(R),
) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS);
    if threads < 2 || items.len() < MIN_PARALLEL {
        consume(f(0, items));
        return;
    }
    let chunks: Vec<&'t [T]> = items.chunks(CHUNK).collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let slots: Mutex<Vec<Option<R>>> = Mutex::new(chunks.iter().map(|_| None).collect());
    let ready = Condvar::new();
    let lock = || slots.lock().unwrap_or_else(PoisonError::into_inner);
    // Claims the next unclaimed chunk, computes it and files the result.
    let step = || -> bool {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(chunk) = chunks.get(i) else { return false };
        let r = f(i * CHUNK, chunk);
        lock()[i] = Some(r);
        ready.notify_all();
        true
    };
    std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads)
            .map(|_| {
                s.spawn(|| {
                    // Wakes the caller if this thread dies, so that it does not wait forever.
                    struct OnPanic<'a>(&'a AtomicBool, &'a Condvar);
                    impl Drop for OnPanic<'_> {
                        fn drop(&mut self) {
                            if std::thread::panicking() {
                                self.0.store(true, Ordering::Relaxed);
                                self.1.notify_all();
                            }
                        }
                    }
                    let _guard = OnPanic(&failed, &ready);
                    while step() {}
                })
            })
            .collect();
        for i in 0..chunks.len() {
            let r = loop {
                let mut filed = lock();
                if let Some(r) = filed[i].take() {
                    break Some(r);
                }
                if failed.load(Ordering::Relaxed) {
                    break None;
                }
                if next.load(Ordering::Relaxed) < chunks.len() {
                    drop(filed);
                    step();
                    continue;
                }
                // Claimed by a helper and not filed yet.
                drop(ready.wait(filed).unwrap_or_else(PoisonError::into_inner));
            };
            match r {
                Some(r) => consume(r),
                None => break,
            }
        }
        for h in helpers {
            if let Err(panic) = h.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
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
    fn in_order_hands_every_chunk_to_the_caller_once_in_order() {
        for n in [0, 1, CHUNK - 1, MIN_PARALLEL - 1, MIN_PARALLEL, 10 * CHUNK + 7] {
            let items: Vec<usize> = (0..n).collect();
            let mut seen = Vec::new();
            let caller = std::thread::current().id();
            map_chunks_in_order(
                &items,
                |_, c| c.iter().map(|x| x * 2).collect::<Vec<_>>(),
                |part| {
                    assert_eq!(
                        std::thread::current().id(),
                        caller,
                        "consumed on the calling thread"
                    );
                    seen.extend(part);
                },
            );
            assert_eq!(seen, items.iter().map(|x| x * 2).collect::<Vec<_>>(), "n = {n}");
        }
    }

    #[test]
    fn in_order_a_panic_in_any_chunk_reaches_the_caller_without_hanging() {
        let items: Vec<usize> = (0..MIN_PARALLEL * 4).collect();
        for bad in [0, CHUNK, 3 * CHUNK, items.len() - 1] {
            let r = std::panic::catch_unwind(|| {
                map_chunks_in_order(
                    &items,
                    |start, c| assert!(!(start..start + c.len()).contains(&bad), "boom"),
                    |_| {},
                )
            });
            assert!(r.is_err(), "panic at {bad}");
        }
    }

    #[test]
    fn a_panic_in_a_chunk_reaches_the_caller() {
        let items: Vec<usize> = (0..MIN_PARALLEL * 2).collect();
        let r = std::panic::catch_unwind(|| {
            map_chunks(&items, |start, c| {
                assert!(!(start..start + c.len()).contains(&(3 * CHUNK)), "boom")
            })
        });
        assert!(r.is_err());
    }
}
