//! Request-scoped telemetry: the request id, the one log line per request, the per-request
//! count of backend queries, the `/metrics` endpoint, and the log set-up.
//!
//! The registry itself lives in the `meshlens-telemetry` crate so that every crate can
//! record into it; this module is the host's side: what belongs to one request.

use std::{
    io::IsTerminal,
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use warp::http::{HeaderMap, HeaderValue, Response, StatusCode, header};

use crate::config::{LogConfig, LogFormat};

pub use meshlens_telemetry::metrics;

/// The request id header: taken from the request when usable, else generated; always echoed.
pub const REQUEST_ID: &str = "x-request-id";

/// What one request did, filled in while it runs.
pub struct RequestScope {
    pub id: String,
    sent: AtomicU64,
    coalesced: AtomicU64,
    cached: AtomicU64,
    user: Mutex<Option<String>>,
    /// The matched operation id (unset: `unmatched`).
    operation: OnceLock<&'static str>,
}

tokio::task_local! {
    static REQUEST: Arc<RequestScope>;
}

/// How a backend query of the current request was answered.
#[derive(Clone, Copy)]
pub enum QueryOutcome {
    /// Sent to the backend.
    Sent,
    /// Joined an identical query in flight.
    Coalesced,
    /// Answered from the answer cache.
    Cached,
}

impl RequestScope {
    /// A scope with the client's `X-Request-Id` (printable ASCII, at most 128 bytes) or a new id.
    pub fn new(headers: &HeaderMap) -> Arc<RequestScope> {
        let given =
            headers.get(REQUEST_ID).and_then(|v| v.to_str().ok()).map(str::trim).filter(|v| {
                !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic())
            });
        let id = given.map(str::to_string).unwrap_or_else(new_id);
        Arc::new(RequestScope {
            id,
            sent: AtomicU64::new(0),
            coalesced: AtomicU64::new(0),
            cached: AtomicU64::new(0),
            user: Mutex::new(None),
            operation: OnceLock::new(),
        })
    }

    /// The matched operation id, once known.
    pub fn operation(&self) -> Option<&'static str> {
        self.operation.get().copied()
    }

    /// Names the operation of a request answered outside [`RequestScope::run`].
    pub fn set_operation(&self, op: &'static str) {
        let _ = self.operation.set(op);
    }

    /// Runs `fut` with this scope as the current request's.
    pub async fn run<F: Future>(self: Arc<Self>, fut: F) -> F::Output {
        REQUEST.scope(self, fut).await
    }

    /// Queries (sent, coalesced, cached) so far.
    pub fn queries(&self) -> (u64, u64, u64) {
        (
            self.sent.load(Ordering::Relaxed),
            self.coalesced.load(Ordering::Relaxed),
            self.cached.load(Ordering::Relaxed),
        )
    }

    /// The authenticated user, when the request named one.
    pub fn user(&self) -> Option<String> {
        self.user.lock().unwrap_or_else(|e| e.into_inner()).clone()
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

/// Counts a backend query of the current request (no-op outside a request).
pub fn count_query(outcome: QueryOutcome) {
    let _ = REQUEST.try_with(|r| {
        let counter = match outcome {
            QueryOutcome::Sent => &r.sent,
            QueryOutcome::Coalesced => &r.coalesced,
            QueryOutcome::Cached => &r.cached,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    });
}

/// Names the current request's operation (once the route matched).
pub fn set_operation(op: &'static str) {
    let _ = REQUEST.try_with(|r| r.operation.set(op));
}

/// Names the current request's user in its log line.
pub fn set_user(name: &str) {
    let _ = REQUEST
        .try_with(|r| *r.user.lock().unwrap_or_else(|e| e.into_inner()) = Some(name.to_string()));
}

/// Keeps `meshlens_api_requests_in_flight` up while alive.
pub struct InFlight(());

impl InFlight {
    pub fn enter() -> InFlight {
        metrics().api_requests_in_flight.inc();
        InFlight(())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        metrics().api_requests_in_flight.dec();
    }
}

/// Records the request in the metrics and writes its log line.
pub fn finish(scope: &RequestScope, method: &str, path: &str, status: StatusCode, took: Duration) {
    let operation = scope.operation.get().copied().unwrap_or("unmatched");
    let m = metrics();
    let status = status.as_u16();
    m.api_requests.get_or_create(&meshlens_telemetry::RequestLabels { operation, status }).inc();
    m.api_request_duration
        .get_or_create(&meshlens_telemetry::OperationLabels { operation })
        .observe(took.as_secs_f64());
    if status == 401 {
        m.auth_failures.get_or_create(&meshlens_telemetry::OperationLabels { operation }).inc();
    }
    let (sent, coalesced, cached) = scope.queries();
    let user = scope.user();
    tracing::info!(
        target: "meshlens::request",
        request_id = %scope.id,
        operation,
        method,
        path,
        status,
        duration_ms = took.as_secs_f64() * 1000.0,
        user = user.as_deref(),
        backend_queries = sent,
        backend_coalesced = coalesced,
        backend_cached = cached,
        "request"
    );
}

/// The `/metrics` answer: the registry, with the cluster gauges read now.
pub async fn metrics_response(state: &crate::state::AppState) -> Response<Vec<u8>> {
    for (kind, count) in state.cluster.object_counts() {
        metrics().cluster_object_count(kind, count);
    }
    // Read now: a hung backend never finishes the probe that would set it.
    metrics().backend_up.set(i64::from(crate::lifecycle::backend_up(state)));
    let mut resp = Response::new(meshlens_telemetry::encode().into_bytes());
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(meshlens_telemetry::CONTENT_TYPE));
    resp
}

/// Sets up the log: `RUST_LOG` when set and valid, else `[log] level`; text or JSON lines on
/// stderr, written by their own thread ([`crate::logwriter`]) so that no worker waits for
/// the log's reader. Call [`crate::logwriter::flush`] before exiting.
pub fn init_logging(cfg: &LogConfig) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&cfg.level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let queue = match crate::logwriter::start() {
        Ok(q) => q,
        Err(e) => {
            // Without its thread, the log goes to stderr directly, as it always could.
            eprintln!("meshlens: cannot start the log writer, logging directly: {e}");
            let builder =
                tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
            match cfg.format {
                LogFormat::Json => builder
                    .json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .with_span_list(false)
                    .init(),
                LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
            }
            return;
        }
    };
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(queue);
    match cfg.format {
        LogFormat::Json => {
            builder.json().flatten_event(true).with_current_span(false).with_span_list(false).init()
        }
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
    }
}
