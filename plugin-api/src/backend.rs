//! Metrics backends: the one kind of plugin that talks to a store.
//!
//! Calls are synchronous at the boundary (a plugin cannot see the host's tokio runtime).
//! The host calls them from its blocking pool; a backend that does network I/O owns its
//! own client and runtime.
//!
//! The host calls [`MetricsBackend::query_cancellable`] (plugin-api 0.1.2): a backend stops
//! early once the host's [`Cancel`] flag is set. A library built against 0.1.0 or 0.1.1 has
//! no such entry in its vtable, and the trait object falls back to the method's default,
//! which runs `query` to its deadline, as before.

use std::{sync::RwLock, time::Duration};

use abi_stable::{
    sabi_trait,
    sabi_trait::TD_Opaque,
    std_types::{RBox, RResult, RStr, RString},
};

use crate::{
    cancel::Cancel,
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
    /// Like `query`, and gives up early once `cancel` is set (no request waits for the
    /// answer any more). Appended in 0.1.2: methods after `last_prefix_field` are optional
    /// in the vtable, and for an older library, which lacks this one, the trait object runs
    /// this default body on the host's side.
    fn query_cancellable(
        &self,
        query: &MetricQuery,
        timeout_ms: u64,
        cancel: Cancel,
    ) -> RResult<QueryResult, PluginError> {
        drop(cancel);
        self.query(query, timeout_ms)
    }
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
    /// Runs one query; must give up after `timeout`, and should give up as soon as it can
    /// once `cancel` is set ([`PluginError::cancelled`]). The host calls this one; the
    /// default ignores `cancel` (a store that cannot stop early runs to its deadline).
    fn query_cancellable(
        &self,
        query: &MetricQuery,
        timeout: Duration,
        cancel: &Cancel,
    ) -> Result<QueryResult, PluginError> {
        let _ = cancel;
        self.query(query, timeout)
    }
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
    fn query_cancellable(
        &self,
        query: &MetricQuery,
        timeout_ms: u64,
        cancel: Cancel,
    ) -> RResult<QueryResult, PluginError> {
        guard("backend query", || {
            self.read().query_cancellable(query, Duration::from_millis(timeout_ms), &cancel)
        })
    }
    fn status(&self) -> RResult<BackendStatus, PluginError> {
        guard("backend status", || self.read().status())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers one series whose value says which entry point ran: 1 `query`, 2 the
    /// cancellable one (-1 when it saw the flag set).
    struct Store;

    impl MetricsStore for Store {
        fn name(&self) -> &str {
            "store"
        }
        fn configure(&mut self, _: &serde_json::Value) -> Result<(), PluginError> {
            Ok(())
        }
        fn query(&self, _: &MetricQuery, _: Duration) -> Result<QueryResult, PluginError> {
            Ok(answer(1.0))
        }
        fn query_cancellable(
            &self,
            _: &MetricQuery,
            _: Duration,
            cancel: &Cancel,
        ) -> Result<QueryResult, PluginError> {
            Ok(answer(if cancel.is_cancelled() { -1.0 } else { 2.0 }))
        }
        fn status(&self) -> Result<BackendStatus, PluginError> {
            Err(PluginError::unavailable("down"))
        }
    }

    /// Implements `query` alone, as every store written before 0.1.2.
    struct OnlyQuery;

    impl MetricsStore for OnlyQuery {
        fn name(&self) -> &str {
            "only-query"
        }
        fn configure(&mut self, _: &serde_json::Value) -> Result<(), PluginError> {
            Ok(())
        }
        fn query(&self, _: &MetricQuery, _: Duration) -> Result<QueryResult, PluginError> {
            Ok(answer(1.0))
        }
        fn status(&self) -> Result<BackendStatus, PluginError> {
            Err(PluginError::unavailable("down"))
        }
    }

    fn answer(v: f64) -> QueryResult {
        QueryResult {
            series: vec![crate::Series {
                labels: Default::default(),
                samples: vec![crate::Sample { t: 0.0, v }].into(),
            }]
            .into(),
        }
    }

    fn value(r: RResult<QueryResult, PluginError>) -> f64 {
        r.into_result().expect("an answer").series[0].samples[0].v
    }

    fn query() -> MetricQuery {
        MetricQuery {
            metric: "m".into(),
            matchers: Vec::new().into(),
            func: crate::RangeFunc::None,
            window_secs: 0,
            group_by: abi_stable::std_types::RNone,
            histogram: crate::HistogramStat::None,
            time: crate::QueryTime::Instant(1),
        }
    }

    #[test]
    fn the_flag_crosses_the_boundary() {
        let b = MetricsAdapter::boxed(Store);
        let cancel = Cancel::new();
        assert_eq!(value(b.query_cancellable(&query(), 1000, cancel.clone())), 2.0);
        cancel.cancel();
        assert_eq!(value(b.query_cancellable(&query(), 1000, cancel)), -1.0);
        assert_eq!(value(b.query(&query(), 1000)), 1.0, "query stays as it was");
    }

    #[test]
    fn a_store_with_query_alone_answers_the_cancellable_call() {
        let cancel = Cancel::new();
        cancel.cancel();
        let b = MetricsAdapter::boxed(OnlyQuery);
        assert_eq!(value(b.query_cancellable(&query(), 1000, cancel)), 1.0);
    }
}
