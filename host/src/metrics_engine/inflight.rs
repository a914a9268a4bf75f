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
        Joined { shared, waiter: Waiter { inflight: self, key, sending }, coalesced }
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
    sending: Arc<Sending>,
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        let mut map = self.inflight.lock();
        // After an answer the task has removed the entry already (or marked it answered):
        // nothing to cancel.
        let Some(e) = map.get_mut(&self.key) else { return };
        if !Arc::ptr_eq(&e.sending, &self.sending) {
            return;
        }
        e.waiters = e.waiters.saturating_sub(1);
        if e.waiters > 0 || e.answered {
            return;
        }
        // Under the lock: nobody can join between the last waiter leaving and the flag.
        map.remove(&self.key);
        self.sending.cancel.cancel();
        self.sending.abandoned.notify_one();
    }
}
