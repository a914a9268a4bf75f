//! Shared flights: concurrent callers asking the same question await one answer.
//!
//! The first caller of a key runs the work; the others wait for its result. If the first
//! caller is cancelled (its request ended), the next waiter runs the work instead, so a
//! cancelled request never leaves the others hanging. The key is forgotten once answered:
//! callers keep their own cache of answers; this only joins questions in flight.

use std::{
    collections::HashMap,
    future::Future,
    hash::Hash,
    sync::{Arc, Mutex},
};

use tokio::sync::OnceCell;

pub struct Flights<K, V> {
    inflight: Mutex<HashMap<K, Arc<OnceCell<V>>>>,
}

impl<K, V> Default for Flights<K, V> {
    fn default() -> Self {
        Flights { inflight: Mutex::default() }
    }
}

impl<K: Eq + Hash + Clone, V: Clone> Flights<K, V> {
    /// The answer to `key`: `work`'s, or that of a flight already under way.
    pub async fn run<F, Fut>(&self, key: K, work: F) -> V
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = V>,
    {
        let cell = self.lock().entry(key.clone()).or_default().clone();
        let value = cell.get_or_init(work).await.clone();
        let mut map = self.lock();
        if map.get(&key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
            map.remove(&key);
        }
        value
    }

    /// Questions in flight now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Arc<OnceCell<V>>>> {
        self.inflight.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::{
        sync::atomic::{AtomicUsize, Ordering},
        time::Duration,
    };

    use super::*;

    #[tokio::test]
    async fn concurrent_callers_share_one_run_and_later_ones_run_again() {
        let f: Arc<Flights<&str, usize>> = Arc::default();
        let runs = Arc::new(AtomicUsize::new(0));
        let call = |f: Arc<Flights<&'static str, usize>>, runs: Arc<AtomicUsize>| async move {
            f.run("q", || async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                runs.fetch_add(1, Ordering::SeqCst) + 1
            })
            .await
        };
        let all = futures::future::join_all((0..10).map(|_| call(f.clone(), runs.clone()))).await;
        assert_eq!(all, vec![1; 10]);
        assert!(f.is_empty(), "answered questions are forgotten");
        assert_eq!(call(f.clone(), runs.clone()).await, 2);
    }

    #[tokio::test]
    async fn a_cancelled_leader_hands_the_work_to_a_waiter() {
        let f: Arc<Flights<u8, u8>> = Arc::default();
        let leader = {
            let f = f.clone();
            tokio::spawn(async move { f.run(1, std::future::pending).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let waiter = {
            let f = f.clone();
            tokio::spawn(async move { f.run(1, || async { 7 }).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        leader.abort();
        let got = tokio::time::timeout(Duration::from_secs(2), waiter).await;
        assert_eq!(got.expect("not left hanging").expect("joined"), 7);
    }
}
