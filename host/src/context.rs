//! One request's context, passed as an argument to everything that works on its behalf:
//! its id, deadline and cancellation flag ([`Scope`]), the count of backend queries it
//! caused, and what its log line names (operation, user).
//!
//! It replaces two task-locals: being an argument, it reaches the metrics engine and the CPU
//! pool without depending on which task runs the work, and tests can make one directly.

use std::{
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use warp::http::HeaderMap;

pub use crate::limits::Scope;

/// The request id header: taken from the request when usable, else generated; always echoed.
pub const REQUEST_ID: &str = "x-request-id";

/// How a backend query of a request was answered.
#[derive(Clone, Copy, Debug)]
pub enum QueryOutcome {
    /// Sent to the backend.
    Sent,
    /// Joined an identical query in flight.
    Coalesced,
    /// Answered from the answer cache.
    Cached,
}

/// One request's context; cheap to clone (shared).
#[derive(Clone)]
pub struct RequestContext {
    inner: Arc<Inner>,
}

struct Inner {
    id: String,
    scope: Scope,
    sent: AtomicU64,
    coalesced: AtomicU64,
    cached: AtomicU64,
    user: Mutex<Option<String>>,
    /// The matched operation id (unset: `unmatched`).
    operation: OnceLock<&'static str>,
}

impl RequestContext {
    /// A context with the client's `X-Request-Id` (printable ASCII, at most 128 bytes) or a
    /// new id, due within `timeout`.
    pub fn new(headers: &HeaderMap, timeout: Duration) -> RequestContext {
        let given =
            headers.get(REQUEST_ID).and_then(|v| v.to_str().ok()).map(str::trim).filter(|v| {
                !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic())
            });
        let id = given.map(str::to_string).unwrap_or_else(new_id);
        RequestContext::with_id(id, Scope::new(timeout))
    }

    /// Work that no client waits for (background jobs, tests, benchmarks): a fresh id and a
    /// deadline far enough away that only the engine's own timeouts apply.
    pub fn background() -> RequestContext {
        RequestContext::with_id(new_id(), Scope::new(Duration::from_secs(24 * 3600)))
    }

    fn with_id(id: String, scope: Scope) -> RequestContext {
        RequestContext {
            inner: Arc::new(Inner {
                id,
                scope,
                sent: AtomicU64::new(0),
                coalesced: AtomicU64::new(0),
                cached: AtomicU64::new(0),
                user: Mutex::new(None),
                operation: OnceLock::new(),
            }),
        }
    }

    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The deadline and cancellation flag.
    pub fn scope(&self) -> &Scope {
        &self.inner.scope
    }

    /// Counts one backend query made for this request.
    pub fn count_query(&self, outcome: QueryOutcome) {
        let counter = match outcome {
            QueryOutcome::Sent => &self.inner.sent,
            QueryOutcome::Coalesced => &self.inner.coalesced,
            QueryOutcome::Cached => &self.inner.cached,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Queries (sent, coalesced, cached) so far.
    pub fn queries(&self) -> (u64, u64, u64) {
        let i = &self.inner;
        (
            i.sent.load(Ordering::Relaxed),
            i.coalesced.load(Ordering::Relaxed),
            i.cached.load(Ordering::Relaxed),
        )
    }

    /// Names the request's operation (the first name given counts).
    pub fn set_operation(&self, op: &'static str) {
        let _ = self.inner.operation.set(op);
    }

    /// The matched operation id, once known.
    pub fn operation(&self) -> Option<&'static str> {
        self.inner.operation.get().copied()
    }

    /// Names the request's user in its log line.
    pub fn set_user(&self, name: &str) {
        *self.inner.user.lock().unwrap_or_else(|e| e.into_inner()) = Some(name.to_string());
    }

    /// The authenticated user, when the request named one.
    pub fn user(&self) -> Option<String> {
        self.inner.user.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

// 16 random bytes in hex; a process-local counter if the OS has no randomness to give.
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        static FALLBACK: AtomicU64 = AtomicU64::new(0);
        bytes[..8].copy_from_slice(&FALLBACK.fetch_add(1, Ordering::Relaxed).to_be_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_usable_client_id_is_kept_and_counts_are_per_context() {
        let mut h = HeaderMap::new();
        h.insert(REQUEST_ID, "abc-1".parse().unwrap());
        let a = RequestContext::new(&h, Duration::from_secs(5));
        assert_eq!(a.id(), "abc-1");
        h.insert(REQUEST_ID, "has space".parse().unwrap());
        let b = RequestContext::new(&h, Duration::from_secs(5));
        assert_eq!(b.id().len(), 32, "an unusable id is replaced");
        a.count_query(QueryOutcome::Sent);
        a.clone().count_query(QueryOutcome::Cached);
        assert_eq!(a.queries(), (1, 0, 1));
        assert_eq!(b.queries(), (0, 0, 0));
        a.set_operation("graphNamespaces");
        a.set_operation("other");
        assert_eq!(a.operation(), Some("graphNamespaces"));
    }
}
