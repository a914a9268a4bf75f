//! Metrics backends: the one kind of plugin that talks to a store.
//!
//! Calls are synchronous at the boundary (a plugin cannot see the host's tokio runtime).
//! The host calls them from its blocking pool; a backend that does network I/O owns its
//! own client and runtime.

use std::{sync::RwLock, time::Duration};

use abi_stable::{
    sabi_trait,
    sabi_trait::TD_Opaque,
    std_types::{RBox, RResult, RStr, RString},
};

use crate::{
    guard::{guard, parse_config},
    metrics::{BackendStatus, MetricQuery, QueryResult},
    types::PluginError,
};

/// The stable-ABI metrics backend interface.
#[sabi_trait]
pub trait MetricsBackend: Send + Sync {
    /// The backend's unique name (the value of `metrics.backend`).
    fn name(&self) -> RResult<RString, PluginError>;
    /// Receives the backend's table (`[metrics.<name>]`, plus `timeout_ms`) as JSON.
    fn configure(&self, config_json: RStr<'_>) -> RResult<(), PluginError>;
    /// Runs one structured query within `timeout_ms`.
    fn query(&self, query: &MetricQuery, timeout_ms: u64) -> RResult<QueryResult, PluginError>;
    /// Reports the store's name and version.
    #[sabi(last_prefix_field)]
    fn status(&self) -> RResult<BackendStatus, PluginError>;
}

/// A metrics backend as it crosses the boundary.
pub type MetricsBackendBox = MetricsBackend_TO<'static, RBox<()>>;

/// What a plugin author implements for a metrics backend.
pub trait MetricsStore: Send + Sync + 'static {
    /// The backend's unique name.
    fn name(&self) -> &str;
    /// Takes the backend's config table. Called once before any query.
    fn configure(&mut self, config: &serde_json::Value) -> Result<(), PluginError>;
    /// Runs one query; must give up after `timeout`.
    fn query(&self, query: &MetricQuery, timeout: Duration) -> Result<QueryResult, PluginError>;
    /// The store's name, version and address.
    fn status(&self) -> Result<BackendStatus, PluginError>;
}

/// Wraps a [`MetricsStore`] so that every entry point catches panics.
pub struct MetricsAdapter<T>(RwLock<T>);

impl<T: MetricsStore> MetricsAdapter<T> {
    /// Boxes `inner` as a stable trait object.
    pub fn boxed(inner: T) -> MetricsBackendBox {
        MetricsBackend_TO::from_value(MetricsAdapter(RwLock::new(inner)), TD_Opaque)
    }
    fn read(&self) -> std::sync::RwLockReadGuard<'_, T> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: MetricsStore> MetricsBackend for MetricsAdapter<T> {
    fn name(&self) -> RResult<RString, PluginError> {
        guard("backend name", || Ok(RString::from(self.read().name())))
    }
    fn configure(&self, config_json: RStr<'_>) -> RResult<(), PluginError> {
        guard("backend configure", || {
            let cfg = parse_config(config_json.as_str())?;
            self.0.write().unwrap_or_else(|e| e.into_inner()).configure(&cfg)
        })
    }
    fn query(&self, query: &MetricQuery, timeout_ms: u64) -> RResult<QueryResult, PluginError> {
        guard("backend query", || self.read().query(query, Duration::from_millis(timeout_ms)))
    }
    fn status(&self) -> RResult<BackendStatus, PluginError> {
        guard("backend status", || self.read().status())
    }
}
