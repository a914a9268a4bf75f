//! Metrics backend `openmetrics_file`: the embedded store for the demo and offline use.
//!
//! Config table `[metrics.openmetrics_file]`:
//!
//! | key | meaning |
//! |---|---|
//! | `path` | the exposition file (required); see [`parse`] for what it may contain |
//! | `reload` | re-read the file when its modification time changes (default `true`; checked at most every 5 s, on a query) |
//! | `timeout_ms` | set by the host; queries get their own deadline per call |
//! | `max_series` | set by the host (`[limits]`): evaluation stops once an answer would hold more series |
//! | `max_bytes` | set by the host; accepted and unused (answers are not read from a wire) |
//!
//! Any other key is an error naming it. The whole file is held in memory and queries are
//! answered with Prometheus's semantics, by the store the `simulator` backend shares
//! (`metrics-store`). This is the offline option: a file captured from a real store.
#![forbid(unsafe_code)]

use std::{
    path::PathBuf,
    sync::{Arc, Mutex, RwLock},
    time::{Duration, Instant, SystemTime},
};

use plugin_api::{BackendStatus, Cancel, MetricQuery, MetricsStore, PluginError, QueryResult};

use metrics_store::{
    cap,
    eval::{self, Stop},
    parse,
    store::Store,
};

const KNOWN_KEYS: &[&str] = &["path", "reload", "timeout_ms", "max_series", "max_bytes"];
const RELOAD_CHECK: Duration = Duration::from_secs(5);

struct Loaded {
    store: Arc<Store>,
    mtime: Option<SystemTime>,
}

struct Configured {
    path: PathBuf,
    reload: bool,
    max_series: usize,
    current: RwLock<Loaded>,
    /// When the file's time was last looked at; also serialises reloads.
    last_check: Mutex<Instant>,
}

/// The backend; unusable until `configure` succeeded.
#[derive(Default)]
pub struct OpenMetricsFile {
    inner: Option<Configured>,
}

fn mtime(path: &std::path::Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn load(path: &std::path::Path) -> Result<Loaded, PluginError> {
    let before = mtime(path);
    let started = Instant::now();
    let store = parse::load(path).map_err(|e| PluginError::invalid(e.to_string()))?;
    tracing::info!(
        file = %path.display(),
        series = store.series.len(),
        samples = store.sample_count(),
        ms = started.elapsed().as_millis() as u64,
        "loaded metrics file"
    );
    Ok(Loaded { store: Arc::new(store), mtime: before })
}

impl Configured {
    /// The current store, re-read first when the file changed.
    fn store(&self) -> Arc<Store> {
        if self.reload
            && let Ok(mut last) = self.last_check.try_lock()
            && last.elapsed() >= RELOAD_CHECK
        {
            *last = Instant::now();
            let now = mtime(&self.path);
            let seen = self.current.read().unwrap_or_else(|e| e.into_inner()).mtime;
            if now.is_some() && now != seen {
                match load(&self.path) {
                    Ok(fresh) => *self.current.write().unwrap_or_else(|e| e.into_inner()) = fresh,
                    // Keep answering from the old data; the file may be half written.
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot reload the metrics file; keeping the old data")
                    }
                }
            }
        }
        self.current.read().unwrap_or_else(|e| e.into_inner()).store.clone()
    }
}

impl MetricsStore for OpenMetricsFile {
    fn name(&self) -> &str {
        "openmetrics_file"
    }

    fn configure(&mut self, config: &serde_json::Value) -> Result<(), PluginError> {
        let Some(table) = config.as_object() else {
            return Err(PluginError::invalid(
                "metrics.openmetrics_file must be a table with a path",
            ));
        };
        if let Some(unknown) = table.keys().find(|k| !KNOWN_KEYS.contains(&k.as_str())) {
            return Err(PluginError::invalid(format!(
                "metrics.openmetrics_file: unknown key {unknown:?} (known keys: {})",
                KNOWN_KEYS.join(", ")
            )));
        }
        let path = match table.get("path") {
            Some(serde_json::Value::String(p)) if !p.is_empty() => PathBuf::from(p),
            _ => {
                return Err(PluginError::invalid(
                    "metrics.openmetrics_file.path is required (a file name)",
                ));
            }
        };
        let reload = match table.get("reload") {
            None => true,
            Some(serde_json::Value::Bool(b)) => *b,
            Some(_) => {
                return Err(PluginError::invalid(
                    "metrics.openmetrics_file.reload must be true or false",
                ));
            }
        };
        let max_series = cap::max_series("openmetrics_file", table.get("max_series"))?;
        let loaded = load(&path)?;
        self.inner = Some(Configured {
            path,
            reload,
            max_series,
            current: RwLock::new(loaded),
            last_check: Mutex::new(Instant::now()),
        });
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
        let stop = Stop::within(timeout, cancel);
        let c = self.configured()?;
        eval::evaluate_until(&c.store(), query, stop, c.max_series)
    }

    fn status(&self) -> Result<BackendStatus, PluginError> {
        let c = self.configured()?;
        Ok(BackendStatus {
            name: "OpenMetrics file".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            url: c.path.display().to_string().into(),
        })
    }
}

impl OpenMetricsFile {
    fn configured(&self) -> Result<&Configured, PluginError> {
        self.inner
            .as_ref()
            .ok_or_else(|| PluginError::internal("the openmetrics_file backend is not configured"))
    }
}

plugin_api::register_metrics_backend!(OpenMetricsFile::default());
plugin_api::export_plugin!(name: "metrics-openmetrics-file", version: env!("CARGO_PKG_VERSION"));
