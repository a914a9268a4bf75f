//! Splitting per-element work of a big graph across the machine's cores.
//!
//! Matching series to edges, hashing ids and writing JSON are per element and independent;
//! on a graph of 40,000 elements they were most of the request. The extra threads are idle
//! threads of the rayon pool the caller runs on (the service's CPU pool), never new ones, so
//! concurrent CPU work never exceeds that pool's size. Off a pool (a plugin's own copy of
//! this crate, a test), and for small inputs, the work stays on the calling thread.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

/// Elements per unit of work: big enough that claiming one costs nothing, small enough that
/// the threads finish together, and that a stop request is seen within one chunk's work.
const CHUNK: usize = 1024;
/// Below this, handing work to another thread costs more than it saves.
const MIN_PARALLEL: usize = 4 * CHUNK;
/// More threads than this only add copying for the caller to join.
const MAX_THREADS: usize = 4;

/// The caller's `stop` said so before every chunk was done: the results are incomplete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

/// `f(start, chunk)` over consecutive chunks of `items`, results in chunk order.
///
/// A panic in `f` reaches the caller as a panic, whichever thread it happened on.
pub fn map_chunks<'t, T: Sync, R: Send>(
    items: &'t [T],
    f: impl Fn(usize, &'t [T]) -> R + Sync,
) -> Vec<R> {
    // Never stopped, so never the default.
    try_map_chunks(items, &|| false, f).unwrap_or_default()
}

/// [`map_chunks`] that asks `stop` before each chunk, as [`try_map_chunks_in_order`] does.
pub fn try_map_chunks<'t, T: Sync, R: Send>(
    items: &'t [T],
    stop: &(dyn Fn() -> bool + Sync),
    f: impl Fn(usize, &'t [T]) -> R + Sync,
) -> Result<Vec<R>, Stopped> {
    let mut all = Vec::new();
    try_map_chunks_in_order(items, stop, f, |r| all.push(r))?;
    Ok(all)
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
    consume: impl FnMut(R),
) {
    // Never stopped, so always `Ok`.
    let _ = try_map_chunks_in_order(items, &|| false, f, consume);
}

/// [`map_chunks_in_order`] that asks `stop` before each chunk (on every thread) and, once it
/// says yes, computes nothing more and returns [`Stopped`] after the chunks under way end.
/// For work whose answer may stop being wanted (a request timed out or its client left).
pub fn try_map_chunks_in_order<'t, T: Sync, R: Send>(
    items: &'t [T],
    stop: &(dyn Fn() -> bool + Sync),
    f: impl Fn(usize, &'t [T]) -> R + Sync,
    mut consume: impl FnMut(R),
) -> Result<(), Stopped> {
    if items.len() < MIN_PARALLEL {
        if stop() {
            return Err(Stopped);
        }
        consume(f(0, items));
        return Ok(());
    }
    let helpers = idle_helpers();
    if helpers == 0 {
        for (i, chunk) in items.chunks(CHUNK).enumerate() {
            if stop() {
                return Err(Stopped);
            }
            consume(f(i * CHUNK, chunk));
        }
        return Ok(());
    }
    let chunks: Vec<&'t [T]> = items.chunks(CHUNK).collect();
    let next = AtomicUsize::new(0);
    // A helper died: the caller must not wait for its chunk.
    let failed = AtomicBool::new(false);
    // The caller is done (finished, stopped or panicking): helpers claim nothing more.
    let halt = AtomicBool::new(false);
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
    let mut outcome = Ok(());
    // Helpers are jobs on the caller's pool: idle threads take them, busy ones do not, and
    // a helper still queued when the caller is done finds nothing left to claim.
    rayon::in_place_scope(|s| {
        for _ in 0..helpers {
            s.spawn(|_| {
                let _guard = OnPanic(&failed, &ready);
                while !halt.load(Ordering::Relaxed) && !stop() {
                    if !step() {
                        break;
                    }
                }
            });
        }
        let _halt = SetOnDrop(&halt);
        for i in 0..chunks.len() {
            let r = loop {
                if stop() {
                    break Err(Stopped);
                }
                let mut filed = lock();
                if let Some(r) = filed[i].take() {
                    break Ok(Some(r));
                }
                if failed.load(Ordering::Relaxed) {
                    break Ok(None);
                }
                if next.load(Ordering::Relaxed) < chunks.len() {
                    drop(filed);
                    step();
                    continue;
                }
                // Claimed by a helper and not filed yet: it is running, so this ends. The
                // timeout covers a helper's death signalled between the check and the wait.
                let waited = ready.wait_timeout(filed, std::time::Duration::from_millis(20));
                drop(waited.unwrap_or_else(PoisonError::into_inner));
            };
            match r {
                Ok(Some(r)) => consume(r),
                // The scope re-raises the helper's panic.
                Ok(None) => break,
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
    });
    outcome
}

/// Below this many bytes, [`concat`] copies on the calling thread.
const MIN_PARALLEL_BYTES: usize = 1 << 20;

/// `parts` end to end in one buffer. A big buffer is fresh memory: writing it first faults
/// its pages in, which on the 1,000-namespace graph's 11.5 MB answer took longer than the
/// copy itself; the parts are copied, and their pages faulted, by the caller's pool
/// threads together, each into its own slice of the buffer.
pub fn concat(parts: &[&[u8]]) -> Vec<u8> {
    let total = parts.iter().map(|p| p.len()).sum();
    if total < MIN_PARALLEL_BYTES || idle_helpers() == 0 {
        return parts.concat();
    }
    // Zeroed fresh memory is the OS's zero pages: not written until copied into.
    let mut out = vec![0u8; total];
    let mut rest = out.as_mut_slice();
    let mut pairs = Vec::with_capacity(parts.len());
    for p in parts {
        let (into, after) = rest.split_at_mut(p.len());
        pairs.push((into, *p));
        rest = after;
    }
    rayon::in_place_scope(|s| {
        for (into, from) in pairs {
            s.spawn(move |_| into.copy_from_slice(from));
        }
    });
    out
}

/// How many threads may help the caller: the other threads of the rayon pool it runs on
/// (up to [`MAX_THREADS`] in all), none off a pool.
fn idle_helpers() -> usize {
    if rayon::current_thread_index().is_none() {
        return 0;
    }
    rayon::current_num_threads().min(MAX_THREADS).saturating_sub(1)
}

/// Tells the caller when a helper dies, so that it does not wait for its chunk forever.
struct OnPanic<'a>(&'a AtomicBool, &'a Condvar);

impl Drop for OnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
            self.1.notify_all();
        }
    }
}

/// Sets the flag however the caller's loop ends, a panic in `consume` included.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn concat_joins_parts_in_order_on_and_off_a_pool() {
        let parts: Vec<Vec<u8>> =
            (0..40u8).map(|i| vec![i; 70_000 + usize::from(i) * 13]).collect();
        let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        let expected = refs.concat();
        assert!(expected.len() > super::MIN_PARALLEL_BYTES);
        assert_eq!(super::concat(&refs), expected, "off a pool");
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        assert_eq!(pool.install(|| super::concat(&refs)), expected, "on a pool");
        assert_eq!(pool.install(|| super::concat(&[b"ab", b"", b"c"])), b"abc");
        assert!(super::concat(&[]).is_empty());
    }

    use super::*;
    use std::collections::HashSet;

    /// Runs `f` off any pool, then on a pool of `threads` threads.
    fn both_ways(threads: usize, f: impl Fn() + Send + Sync) {
        f();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        pool.install(&f);
    }

    #[test]
    fn results_come_back_in_order_and_cover_every_item_once() {
        both_ways(4, || {
            for n in [0, 1, CHUNK - 1, MIN_PARALLEL - 1, MIN_PARALLEL, 10 * CHUNK + 7] {
                let items: Vec<usize> = (0..n).collect();
                let parts = map_chunks(&items, |start, c| {
                    assert!(c.first().is_none_or(|&x| x == start), "start is the chunk's offset");
                    c.iter().map(|x| x * 2).collect::<Vec<_>>()
                });
                let joined: Vec<usize> = parts.concat();
                assert_eq!(joined, items.iter().map(|x| x * 2).collect::<Vec<_>>(), "n = {n}");
            }
        });
    }

    #[test]
    fn results_equal_rayons_par_iter_on_uneven_sizes() {
        use rayon::prelude::*;
        // The reference implementation (docs/exceptions.md): rayon's own parallel map.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().expect("pool");
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = (x % 40_000) as usize;
            let items: Vec<u64> = (0..n as u64).map(|i| i.wrapping_mul(x)).collect();
            let f = |v: &u64| v.rotate_left(7) ^ 0xabcd;
            let want: Vec<u64> = pool.install(|| items.par_iter().map(f).collect());
            let got = pool
                .install(|| map_chunks(&items, |_, c| c.iter().map(f).collect::<Vec<_>>()))
                .concat();
            assert_eq!(got, want, "n = {n}");
        }
    }

    #[test]
    fn in_order_hands_every_chunk_to_the_caller_once_in_order() {
        both_ways(4, || {
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
        });
    }

    #[test]
    fn in_order_a_panic_in_any_chunk_reaches_the_caller_without_hanging() {
        let items: Vec<usize> = (0..MIN_PARALLEL * 4).collect();
        both_ways(4, || {
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
        });
    }

    #[test]
    fn a_panic_in_a_chunk_reaches_the_caller() {
        let items: Vec<usize> = (0..MIN_PARALLEL * 2).collect();
        both_ways(4, || {
            let r = std::panic::catch_unwind(|| {
                map_chunks(&items, |start, c| {
                    assert!(!(start..start + c.len()).contains(&(3 * CHUNK)), "boom")
                })
            });
            assert!(r.is_err());
        });
    }

    #[test]
    fn work_runs_only_on_the_callers_pool_however_many_callers() {
        // Two big jobs at once on a pool of two: every chunk is computed on one of the
        // pool's two threads; no thread is started for the helpers.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("pool");
        let items: Vec<usize> = (0..20 * CHUNK).collect();
        let threads = Mutex::new(HashSet::new());
        let job = || {
            let parts = map_chunks(&items, |_, c| {
                assert!(rayon::current_thread_index().is_some(), "a chunk off the pool");
                lock_set(&threads).insert(std::thread::current().id());
                c.iter().sum::<usize>()
            });
            assert_eq!(parts.iter().sum::<usize>(), items.iter().sum::<usize>());
        };
        pool.install(|| rayon::join(job, job));
        assert!(lock_set(&threads).len() <= 2, "{:?}", lock_set(&threads));
        // Off a pool, the calling thread does it all.
        lock_set(&threads).clear();
        let caller = std::thread::current().id();
        map_chunks(&items, |_, _| lock_set(&threads).insert(std::thread::current().id()));
        assert_eq!(*lock_set(&threads), HashSet::from([caller]));
    }

    fn lock_set<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[test]
    fn a_stop_ends_the_work_after_the_chunks_under_way() {
        let items: Vec<usize> = (0..40 * CHUNK).collect();
        both_ways(4, || {
            let (late, consumed) = (AtomicUsize::new(0), AtomicUsize::new(0));
            let stopped = || consumed.load(Ordering::SeqCst) >= 3;
            let mut seen = Vec::new();
            let r = try_map_chunks_in_order(
                &items,
                &stopped,
                |start, _| {
                    // Helpers may run ahead of the caller before the stop (all 40 chunks,
                    // when the caller is descheduled); after it they may not.
                    if stopped() {
                        late.fetch_add(1, Ordering::SeqCst);
                    }
                    start
                },
                |start| {
                    seen.push(start);
                    consumed.fetch_add(1, Ordering::SeqCst);
                },
            );
            assert_eq!(r, Err(Stopped));
            assert_eq!(seen, vec![0, CHUNK, 2 * CHUNK], "a prefix, in order");
            // At most one chunk per thread was claimed as the stop came, none after.
            assert!(late.load(Ordering::SeqCst) <= MAX_THREADS, "{late:?}");
            // Not stopped: all of it.
            let mut n = 0;
            assert_eq!(
                try_map_chunks_in_order(&items, &|| false, |_, c| c.len(), |k| n += k),
                Ok(())
            );
            assert_eq!(n, items.len());
        });
        // Stopped before anything: nothing computed, small inputs too.
        let small = [1, 2, 3];
        let r = try_map_chunks_in_order(&small, &|| true, |_, _| panic!("computed"), |_: ()| {});
        assert_eq!(r, Err(Stopped));
    }
}
