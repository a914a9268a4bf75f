//! Everything a request handler can reach, built once at start-up.

use std::{path::PathBuf, sync::Arc, time::Instant};

use abi_stable::std_types::{RResult, RStr};
use meshlens_telemetry::Metrics;
use plugin_api::MetricsBackendBox;
use warp::http::{HeaderValue, Response, header};

use crate::{
    access::{RemoteReviewers, Reviews},
    auth,
    clusters::{ClusterSet, ClusterView},
    config::Config,
    lifecycle::Lifecycle,
    limits::{Admission, CpuPool},
    metrics_engine::MetricsEngine,
    plugins::{Registry, RegistryError},
};

/// Apps' runtime discoveries are kept this long (pods and exporters change rarely).
const RUNTIME_TTL: std::time::Duration = std::time::Duration::from_secs(60);

/// Shared state of the running service.
pub struct AppState {
    pub config: Config,
    pub plugins: Arc<Registry>,
    pub metrics: Arc<MetricsEngine>,
    /// Every cluster read: home first, then `[[cluster.remotes]]`.
    pub clusters: ClusterSet,
    /// Credentials, session tokens and (strategies `token`, `header`) access reviews.
    pub auth: auth::Auth,
    /// Each remote's access reviews, asked of its own API server (`auth.reviewer` is home's).
    pub remote_reviewers: RemoteReviewers,
    pub started: Instant,
    /// Start-up problems shown in `/status` `warningMessages`.
    pub warnings: Vec<String>,
    /// Draining flag and the backend status the background probe keeps.
    pub lifecycle: Lifecycle,
    /// Admission control for expensive operations (`[limits]`).
    pub admission: Admission,
    /// Where graph builds, appenders and output run.
    pub cpu: CpuPool,
    /// Apps' discovered runtimes (app details), per instance: two instances in one process
    /// (the in-process tests) must not answer from each other's discoveries.
    pub runtimes: meshlens_dashboards::RuntimeCache,
    /// Finished graphs, re-scoped without rebuilding (the answer cache's TTL).
    pub graph_cache: crate::service::graph_cache::GraphCache,
    /// The self-metrics served at `/metrics`, per instance for the same reason.
    pub telemetry: Arc<Metrics>,
}

/// Why the service cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("invalid configuration: `{key}`: {reason}")]
    PluginConfig { key: String, reason: String },
    #[error("cannot make a signing key: {0}")]
    Random(String),
    #[error("{0}")]
    Other(String),
}

/// What the state reads and asks through, given by the caller; each one left `None` is the
/// real one made from the configuration, as [`AppState::build`] does. Tests give their own:
/// a store as the backend, hand-made cluster views (a remote that is lost), a reviewer that
/// allows what the test says, and call the router over that state without a process.
#[derive(Default)]
pub struct Seams {
    /// The metrics backend in place of the configured one (a store made in the caller's
    /// process, e.g. with [`plugin_api::MetricsAdapter`]).
    pub backend: Option<Arc<MetricsBackendBox>>,
    /// The clusters read (home first) in place of starting `[cluster]`'s sources.
    pub clusters: Option<ClusterSet>,
    /// The access reviews in place of [`Reviews::new`] over the clusters' clients.
    pub reviews: Option<Reviews>,
}

impl AppState {
    /// Loads plugins from `plugins.dirs`, configures them and prepares the shared services.
    pub async fn build(config: Config) -> Result<AppState, StartupError> {
        let dirs: Vec<PathBuf> = config.plugins.dirs.iter().map(PathBuf::from).collect();
        let registry = Registry::load(&dirs)?;
        AppState::assemble(config, registry, None).await
    }

    /// The state from plugins already loaded, and optionally a metrics backend given directly
    /// (a store made in the caller's process, e.g. with [`plugin_api::MetricsAdapter`]) in
    /// place of the configured one. Tests build the service this way without the binary.
    pub async fn assemble(
        config: Config,
        registry: Registry,
        backend: Option<Arc<MetricsBackendBox>>,
    ) -> Result<AppState, StartupError> {
        AppState::assemble_with(config, registry, Seams { backend, ..Seams::default() }).await
    }

    /// The state from plugins already loaded and the [`Seams`] the caller gives.
    pub async fn assemble_with(
        config: Config,
        registry: Registry,
        seams: Seams,
    ) -> Result<AppState, StartupError> {
        let Seams { backend, clusters, reviews } = seams;
        let started = Instant::now();
        let telemetry = Arc::new(Metrics::new());
        let mut warnings: Vec<String> = registry
            .refused
            .iter()
            .map(|r| format!("plugin {} was not loaded: {}", r.path.display(), r.reason))
            .collect();

        for a in &registry.appenders {
            let mut table =
                config.appenders.get(&a.name).cloned().unwrap_or_else(|| serde_json::json!({}));
            // The health appender judges nodes by the same `[health]` rules as the API.
            if a.name == "health"
                && let Some(t) = table.as_object_mut()
            {
                t.entry("rate").or_insert_with(|| serde_json::json!(config.health.rate));
            }
            configure(&format!("appenders.{}", a.name), |json| a.object.configure(json), &table)?;
        }
        let dash_table =
            serde_json::to_value(&config.dashboards).unwrap_or_else(|_| serde_json::json!({}));
        for d in &registry.dashboard_providers {
            configure("dashboards", |json| d.object.configure(json), &dash_table)?;
        }

        let backend_name = config.metrics.backend.clone();
        let loaded = registry.metrics_backends.iter().find(|b| b.name == backend_name);
        let (backend, missing) = match (backend, loaded) {
            (Some(given), _) => (Some(given), String::new()),
            (None, Some(b)) => {
                configure(
                    &format!("metrics.{backend_name}"),
                    |json| b.object.configure(json),
                    &config.backend_table(&backend_name),
                )?;
                (Some(b.object.clone()), String::new())
            }
            (None, None) => {
                let msg = format!(
                    "metrics backend `{backend_name}` is not loaded (check plugins.dirs); metric operations answer 503"
                );
                tracing::warn!("{msg}");
                warnings.push(msg.clone());
                (None, msg)
            }
        };
        let metrics = Arc::new(
            MetricsEngine::new(backend, &backend_name, missing, config.metrics.timeout.0)
                .with_cache(config.metrics.cache_ttl.0, config.metrics.cache_max_bytes)
                .with_limits(config.limits.max_backend_queries, config.limits.max_answer_series)
                .with_telemetry(telemetry.clone()),
        );
        let admission = Admission::new(&config.limits).with_telemetry(telemetry.clone());
        let cpu = CpuPool::new(config.limits.cpu_threads)
            .map_err(StartupError::Other)?
            .with_telemetry(telemetry.clone());

        let clusters = match clusters {
            Some(given) => given,
            None => ClusterSet::start(&config.cluster, &telemetry)
                .await
                .map_err(|e| StartupError::Other(e.to_string()))?,
        };
        for m in clusters.members() {
            warnings.extend(m.cluster.warnings());
        }

        let a = &config.auth;
        let Reviews { home: reviewer, remotes: remote_reviewers } =
            reviews.unwrap_or_else(|| Reviews::new(&clusters, a));
        let (auth, generated) =
            auth::Auth::new(a, reviewer).map_err(|e| StartupError::Random(e.to_string()))?;
        if generated {
            tracing::warn!(
                "auth.signing_key is not set: using a random key; tokens will not survive a restart"
            );
        }

        let graph_cache = crate::service::graph_cache::GraphCache::new(config.metrics.cache_ttl.0);
        Ok(AppState {
            config,
            plugins: Arc::new(registry),
            metrics,
            clusters,
            auth,
            remote_reviewers,
            started,
            warnings,
            lifecycle: Default::default(),
            admission,
            cpu,
            runtimes: meshlens_dashboards::RuntimeCache::new(RUNTIME_TTL),
            graph_cache,
            telemetry,
        })
    }
}

impl AppState {
    /// Asks the backend's status every `metrics.status_interval` for as long as the process
    /// runs. One probe at a time: a hung backend delays the next probe, never stacks them.
    pub fn spawn_status_refresh(self: &Arc<Self>) {
        let state = self.clone();
        let every = state.config.metrics.status_interval.0;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let outcome = state.metrics.probe().await.map_err(|e| e.to_string());
                if let Err(e) = &outcome {
                    tracing::debug!(error = %e, "metrics backend status probe failed");
                }
                state.lifecycle.record(outcome);
                state.telemetry.backend_up.set(i64::from(state.backend_up()));
            }
        });
    }

    /// The home cluster's view.
    pub fn home_cluster(&self) -> &Arc<dyn ClusterView> {
        &self.clusters.home().cluster
    }

    /// `Ok` when this replica should get traffic, or why not ([`Lifecycle::readiness`]).
    /// The home cluster only: a remote that is down (at start-up too) shows in `/status`
    /// and answers 503 for its `clusterName`, but never takes this replica out of service.
    pub fn readiness(&self) -> Result<(), String> {
        self.lifecycle.readiness(self.home_cluster().synced())
    }

    /// Whether the backend answered its status probe within `metrics.stale_after`.
    pub fn backend_up(&self) -> bool {
        self.lifecycle.backend_up(self.config.metrics.stale_after.0)
    }

    /// The `/status` warning about the backend ([`Lifecycle::backend_warning`]).
    pub fn backend_warning(&self, detailed: bool) -> Option<String> {
        self.lifecycle.backend_warning(self.config.metrics.stale_after.0, detailed)
    }

    /// The `/metrics` answer: the registry, with the cluster gauges read now.
    pub fn metrics_response(&self) -> Response<Vec<u8>> {
        let m = &self.telemetry;
        for (kind, count) in self.home_cluster().object_counts() {
            m.cluster_object_count(kind, count);
        }
        // Home and every remote by name (objects stay the home cluster's: one label set).
        for c in self.clusters.members() {
            m.cluster_availability(&c.name, c.unavailable().is_none());
        }
        // Read now: a hung backend never finishes the probe that would set it.
        m.backend_up.set(i64::from(self.backend_up()));
        let mut resp = Response::new(m.encode().into_bytes());
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(meshlens_telemetry::CONTENT_TYPE),
        );
        resp
    }
}

fn configure(
    key: &str,
    call: impl FnOnce(RStr<'_>) -> RResult<(), plugin_api::PluginError>,
    table: &serde_json::Value,
) -> Result<(), StartupError> {
    let text = table.to_string();
    match call(RStr::from_str(&text)) {
        RResult::ROk(()) => Ok(()),
        RResult::RErr(e) => {
            Err(StartupError::PluginConfig { key: key.to_string(), reason: e.message.to_string() })
        }
    }
}
