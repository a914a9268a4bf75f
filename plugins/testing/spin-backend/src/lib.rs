//! Test plugin with two metrics backends:
//!
//! - `spin`: every query keeps a core busy until the host cancels it or its deadline passes,
//!   then fails. It logs (through the host's log) `spin query started` and then
//!   `spin query stopped: cancelled` or `spin query stopped: deadline`, with the time spun.
//! - `plain`: implements `query` alone, as every backend written before plugin-api 0.1.2,
//!   and answers every query at once with no series.
#![forbid(unsafe_code)]

use std::time::{Duration, Instant};

use plugin_api::{BackendStatus, Cancel, MetricQuery, MetricsStore, PluginError, QueryResult};

/// Spins until cancelled or out of time.
pub struct Spin;

impl MetricsStore for Spin {
    fn name(&self) -> &str {
        "spin"
    }
    fn configure(&mut self, _: &serde_json::Value) -> Result<(), PluginError> {
        Ok(())
    }
    fn query(&self, query: &MetricQuery, timeout: Duration) -> Result<QueryResult, PluginError> {
        self.query_cancellable(query, timeout, &Cancel::new())
    }
    fn query_cancellable(
        &self,
        query: &MetricQuery,
        timeout: Duration,
        cancel: &Cancel,
    ) -> Result<QueryResult, PluginError> {
        let started = Instant::now();
        tracing::info!(metric = %query.metric, timeout_ms = timeout.as_millis() as u64, "spin query started");
        let mut x: u64 = 1;
        loop {
            // About a microsecond of work between looks at the flag and the clock.
            for _ in 0..1_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            let how = if cancel.is_cancelled() {
                "cancelled"
            } else if started.elapsed() >= timeout {
                "deadline"
            } else {
                continue;
            };
            let ms = started.elapsed().as_millis() as u64;
            tracing::info!(ms, "spin query stopped: {how}");
            return Err(if how == "cancelled" {
                PluginError::cancelled()
            } else {
                PluginError::timeout(format!("spun for the whole {} ms", timeout.as_millis()))
            });
        }
    }
    fn status(&self) -> Result<BackendStatus, PluginError> {
        Ok(BackendStatus { name: "Spin".into(), version: "1".into(), url: "".into() })
    }
}

/// A backend as written before `query_cancellable` existed.
pub struct Plain;

impl MetricsStore for Plain {
    fn name(&self) -> &str {
        "plain"
    }
    fn configure(&mut self, _: &serde_json::Value) -> Result<(), PluginError> {
        Ok(())
    }
    fn query(&self, _: &MetricQuery, _: Duration) -> Result<QueryResult, PluginError> {
        tracing::info!("plain query answered");
        Ok(QueryResult::default())
    }
    fn status(&self) -> Result<BackendStatus, PluginError> {
        Ok(BackendStatus { name: "Plain".into(), version: "1".into(), url: "".into() })
    }
}

plugin_api::register_metrics_backend!(Spin);
plugin_api::register_metrics_backend!(Plain);
plugin_api::export_plugin!(name: "spin-backend", version: env!("CARGO_PKG_VERSION"));
