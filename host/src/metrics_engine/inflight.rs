//! Identical queries in flight at once: sent once, their answer shared, and cancelled as
//! soon as no caller waits for it.
//!
//! Each caller holds a [`Waiter`] while it awaits the shared answer. When the last one goes
//! (its request was answered with an error, timed out, or its client went away), the entry
//! leaves the map and its backend call is cancelled; a later identical query is sent afresh
//! instead of joining one that is being abandoned.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
};

use futures::future::{BoxFuture, Shared};
use plugin_api::{Cancel, QueryResult};
use tokio::sync::Notify;

use super::MetricsError;

pub(super) type SharedQuery = Shared<BoxFuture<'static, Result<Arc<QueryResult>, MetricsError>>>;

/// What the task sending one query watches.
#[derive(Default)]
pub(super) struct Sending {
    /// Handed to the backend call; set when nobody waits for the answer any more.
    pub cancel: Cancel,
    /// Wakes the task while it waits for a backend slot, so it gives up at once.
    pub abandoned: Notify,
}

struct Entry {
    shared: SharedQuery,
    sending: Arc<Sending>,
    /// Callers holding a [`Waiter`] on this entry.
    waiters: usize,
    /// The answer is in: callers leaving now do not cancel it (newcomers still share it).
    answered: bool,
}

/// The queries in flight, by [`plugin_api::MetricQuery::cache_key`].
#[derive(Default)]
pub(super) struct Inflight(Mutex<HashMap<String, Entry>>);

/// A caller's share of a query in flight.
pub(super) struct Joined<'a> {
    pub shared: SharedQuery,
    /// Hold it while awaiting `shared`: dropping the last one cancels the query.
    pub waiter: Waiter<'a>,
    /// Whether an identical query was already in flight.
    pub coalesced: bool,
}

impl Inflight {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Joins the query in flight under `key`, or starts it with `start` (called under the
    /// map's lock, so it must only spawn).
    pub fn join(&self, key: String, start: impl FnOnce(Arc<Sending>) -> SharedQuery) -> Joined<'_> {
        let mut map = self.lock();
        let (shared, sending, coalesced) = match map.get_mut(&key) {
            Some(e) => {
                e.waiters += 1;
                (e.shared.clone(), e.sending.clone(), true)
            }
            None => {
                let sending = Arc::new(Sending::default());
                let shared = start(sending.clone());
                let entry = Entry {
                    shared: shared.clone(),
                    sending: sending.clone(),
                    waiters: 1,
                    answered: false,
                };
                map.insert(key.clone(), entry);
                (shared, sending, false)
            }
        };
        Joined { shared, waiter: Waiter { inflight: self, key, sending: Some(sending) }, coalesced }
    }

    /// Called by the query's task once the backend answered: whether the answer still
    /// counts (the query was not cancelled first). From then on it cannot be cancelled.
    pub fn answered(&self, key: &str, sending: &Arc<Sending>) -> bool {
        let mut map = self.lock();
        match map.get_mut(key) {
            Some(e) if Arc::ptr_eq(&e.sending, sending) => {
                e.answered = true;
                true
            }
            // Cancelled (the entry left with its last waiter), and maybe sent again since.
            _ => false,
        }
    }

    /// Whether the query sent with `sending` still has callers waiting (checked by its task
    /// once it has a backend slot, just before the backend call).
    pub fn wanted(&self, key: &str, sending: &Arc<Sending>) -> bool {
        self.lock().get(key).is_some_and(|e| Arc::ptr_eq(&e.sending, sending))
    }

    /// Removes the query's own entry; a later identical query's entry stays.
    pub fn finish(&self, key: &str, sending: &Arc<Sending>) {
        let mut map = self.lock();
        if map.get(key).is_some_and(|e| Arc::ptr_eq(&e.sending, sending)) {
            map.remove(key);
        }
    }

    /// Whether no query is in flight.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Callers waiting for the query under `key` (0: none in flight).
    #[cfg(test)]
    pub fn waiters(&self, key: &str) -> usize {
        self.lock().get(key).map_or(0, |e| e.waiters)
    }
}

/// One caller waiting for a query's answer; see [`Inflight::join`].
pub(super) struct Waiter<'a> {
    inflight: &'a Inflight,
    key: String,
    /// `None` once it has left.
    sending: Option<Arc<Sending>>,
}

impl Waiter<'_> {
    /// Leaves the entry, under the map's lock; the last caller to leave cancels the query.
    fn leave(&mut self, map: &mut HashMap<String, Entry>) {
        let Some(sending) = self.sending.take() else { return };
        // After an answer the task has removed the entry already (or marked it answered):
        // nothing to cancel.
        let Some(e) = map.get_mut(&self.key) else { return };
        if !Arc::ptr_eq(&e.sending, &sending) {
            return;
        }
        e.waiters = e.waiters.saturating_sub(1);
        if e.waiters > 0 || e.answered {
            return;
        }
        // Under the lock: nobody can join between the last waiter leaving and the flag.
        map.remove(&self.key);
        sending.cancel.cancel();
        sending.abandoned.notify_one();
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        if self.sending.is_some() {
            let inflight = self.inflight;
            self.leave(&mut inflight.lock());
        }
    }
}

/// One request's waiters on its queries, which all leave at once, under one hold of the
/// map's lock. Left one by one, a query that was waiting for a backend slot could take the
/// slot that its sibling's cancellation freed, and reach the backend, before its own
/// waiter had left; [`Inflight::wanted`] waits for this lock.
pub(super) struct Waiters<'a>(pub Vec<Waiter<'a>>);

impl Drop for Waiters<'_> {
    fn drop(&mut self) {
        let Some(inflight) = self.0.first().map(|w| w.inflight) else { return };
        let mut map = inflight.lock();
        for w in &mut self.0 {
            w.leave(&mut map);
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;

    use super::*;

    /// Joins a query nobody answers; returns the waiter and what its task would watch.
    fn join<'a>(inflight: &'a Inflight, key: &str) -> (Waiter<'a>, Arc<Sending>) {
        let mut seen = None;
        let j = inflight.join(key.into(), |s| {
            seen = Some(s);
            futures::future::pending().boxed().shared()
        });
        (j.waiter, seen.expect("started"))
    }

    /// A request's queries leave together: a sibling that takes the slot freed by the first
    /// one's cancellation (here, the instant that flag is set) finds itself no longer wanted.
    /// (Left one by one, that sibling could be wanted still in that instant, if the leaving
    /// thread was preempted between the two: a rare race, which the end-to-end test
    /// `backend_cancel` once lost.)
    #[test]
    fn a_request_leaving_gives_up_all_its_queries_before_any_slot_frees() {
        for round in 0..200 {
            let inflight = Inflight::default();
            let (wa, a) = join(&inflight, "a");
            let (wb, b) = join(&inflight, "b");
            let seen_wanted = std::thread::scope(|t| {
                let sibling = t.spawn(|| {
                    // The slot holder stops as soon as it sees its flag; the sibling gets the
                    // slot and asks, as `send` does, whether it is still wanted.
                    while !a.cancel.is_cancelled() {
                        std::hint::spin_loop();
                    }
                    inflight.wanted("b", &b)
                });
                drop(Waiters(vec![wa, wb]));
                sibling.join().expect("sibling")
            });
            assert!(!seen_wanted, "round {round}: the sibling was still wanted");
            assert!(b.cancel.is_cancelled());
            assert!(inflight.is_empty());
        }
    }

    #[test]
    fn a_waiter_of_a_query_another_caller_shares_leaves_it_running() {
        let inflight = Inflight::default();
        let (first, sending) = join(&inflight, "a");
        let second = inflight.join("a".into(), |_| unreachable!("joined, not started"));
        assert!(second.coalesced);
        drop(Waiters(vec![first]));
        assert!(!sending.cancel.is_cancelled());
        assert!(inflight.wanted("a", &sending));
        drop(second);
        assert!(sending.cancel.is_cancelled());
        assert!(!inflight.wanted("a", &sending));
    }
}
