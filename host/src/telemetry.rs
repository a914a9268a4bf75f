//! Request telemetry: the one log line and the counters per request (from its
//! [`RequestContext`]), the in-flight gauge, and the log set-up.
//!
//! The registry itself lives in the `meshlens-telemetry` crate so that every crate can
//! record into it; this module is the host's side: what belongs to one request.

use std::{io::IsTerminal, sync::Arc, time::Duration};

pub use meshlens_telemetry::Metrics;

use serde::{Deserialize, Serialize};
use warp::http::StatusCode;

use crate::context::RequestContext;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// `[log]`: where the service's own log lines go (stderr) and how they look.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    pub format: LogFormat,
    /// A tracing filter (`info`, `warn,meshlens=debug`); `RUST_LOG` overrides it.
    pub level: String,
}

impl LogConfig {
    /// The checks of `[log]` serde cannot make, each reported to `fail` with its key.
    pub(crate) fn problems(&self, fail: &mut impl FnMut(&str, &str)) {
        if tracing_subscriber::EnvFilter::try_new(&self.level).is_err() {
            fail(
                "log.level",
                "expected a level such as \"info\" or a filter such as \"warn,meshlens=debug\"",
            );
        }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig { format: LogFormat::Text, level: "info".into() }
    }
}

/// Keeps `meshlens_api_requests_in_flight` up while alive.
pub struct InFlight(Arc<Metrics>);

impl InFlight {
    pub fn enter(m: &Arc<Metrics>) -> InFlight {
        m.api_requests_in_flight.inc();
        InFlight(m.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.api_requests_in_flight.dec();
    }
}

/// Records the request in the metrics `m` and writes its log line.
pub fn finish(
    m: &Metrics,
    rc: &RequestContext,
    method: &str,
    path: &str,
    status: StatusCode,
    took: Duration,
) {
    let operation = rc.operation().unwrap_or("unmatched");
    let status = status.as_u16();
    m.api_requests.get_or_create(&meshlens_telemetry::RequestLabels { operation, status }).inc();
    m.api_request_duration
        .get_or_create(&meshlens_telemetry::OperationLabels { operation })
        .observe(took.as_secs_f64());
    if status == 401 {
        m.auth_failures.get_or_create(&meshlens_telemetry::OperationLabels { operation }).inc();
    }
    let (sent, coalesced, cached) = rc.queries();
    let user = rc.user();
    tracing::info!(
        target: "meshlens::request",
        request_id = %rc.id(),
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
