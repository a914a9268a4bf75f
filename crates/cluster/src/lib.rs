//! The cluster model of meshlens: namespaces, workloads, apps, services and mesh config,
//! read from a Kubernetes API server (through `kube` watch caches) or from manifests on disk.
//!
//! ```no_run
//! # async fn demo() -> Result<(), meshlens_cluster::ClusterError> {
//! use meshlens_cluster::{Cluster, ClusterConfig, SourceKind};
//! let cfg = ClusterConfig { source: SourceKind::Snapshot, snapshot: vec!["config/demo".into()], ..Default::default() };
//! let cluster = Cluster::start(cfg).await?;
//! let state = cluster.state().await?;
//! let list = state.workload_list("bookinfo")?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
mod kube_source;
pub mod labels;
mod liveness;
pub mod mesh;
pub mod model;
pub mod payload;
mod plugin;
pub mod raw;
pub mod records;
pub mod service_list;
pub mod snapshot;
pub mod trim;
mod watches;

use std::sync::{Arc, Mutex};

use meshlens_telemetry::Metrics;

pub use config::{ClusterConfig, RemoteCluster, Settings, SourceKind};
pub use mesh::{MeshKind, MeshObject, MeshSpec};
pub use meshlens_params::HumanDuration;
pub use model::{App, ClusterState, NamespaceState, Workload, WorkloadKind};
pub use plugin::{config_object, config_object_in, workload_info, workload_info_in};

/// What can go wrong in the cluster model.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A namespace or object does not exist (HTTP 404).
    #[error("{0}")]
    NotFound(String),
    /// The caches have not synced within the deadline (HTTP 503).
    #[error("{0}")]
    NotSynced(String),
    /// The `[cluster]` configuration is not usable (a start-up error).
    #[error("bad cluster configuration: {0}")]
    BadConfig(String),
    /// The Kubernetes client failed (HTTP 500).
    #[error("Kubernetes: {0}")]
    Kube(String),
    /// A request parameter is not acceptable (HTTP 400).
    #[error("{0}")]
    InvalidInput(String),
    /// The cluster's API server cannot be reached now, or has not been yet (HTTP 503).
    #[error("{0}")]
    Unavailable(String),
}

impl ClusterError {
    /// The HTTP status this error answers with.
    pub fn http_status(&self) -> u16 {
        match self {
            ClusterError::NotFound(_) => 404,
            ClusterError::NotSynced(_) | ClusterError::Unavailable(_) => 503,
            ClusterError::InvalidInput(_) => 400,
            ClusterError::BadConfig(_) | ClusterError::Kube(_) => 500,
        }
    }
}

enum Source {
    Kube(kube_source::KubeSource),
    /// The model and the object counts it was built from.
    Snapshot(Arc<ClusterState>, Vec<(&'static str, usize)>),
}

/// Records a completed list of the caches (or a snapshot load) in the self-metrics.
pub(crate) fn record_sync(m: &Metrics) {
    let now = meshlens_params::now() as f64;
    m.cluster_last_sync.set(now);
}

struct Inner {
    settings: Arc<Settings>,
    source: Source,
    warnings: Vec<String>,
    /// The last model built from the kube caches, with the generation it was built at.
    cache: Mutex<Option<(u64, Arc<ClusterState>)>>,
    build_lock: tokio::sync::Mutex<()>,
    /// The self-metrics of the service this cluster belongs to.
    telemetry: Arc<Metrics>,
}

/// The cluster model service; cheap to clone.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").field("version", &self.version()).finish()
    }
}

impl Cluster {
    /// Starts the configured source. The snapshot source loads its manifests now; the
    /// `kube` source builds its client now and syncs its caches in the background
    /// (must be called inside a tokio runtime). Nothing here contacts the API server, so a
    /// source whose server is down starts at once, retries, and syncs when it appears.
    pub async fn start(cfg: ClusterConfig) -> Result<Cluster, ClusterError> {
        Cluster::start_recording(cfg, Arc::default()).await
    }

    /// Like [`Cluster::start`], recording syncs, watch restarts and rebuild times in
    /// `telemetry` (the self-metrics of the service that serves it).
    pub async fn start_recording(
        cfg: ClusterConfig,
        telemetry: Arc<Metrics>,
    ) -> Result<Cluster, ClusterError> {
        let settings = Arc::new(Settings::from_config(&cfg)?);
        let (source, warnings) = match cfg.source {
            SourceKind::Snapshot => {
                if cfg.snapshot.is_empty() {
                    return Err(ClusterError::BadConfig(
                        "cluster.snapshot lists no manifest path".into(),
                    ));
                }
                let (raw, warnings) = snapshot::load(&cfg.snapshot)?;
                record_sync(&telemetry);
                (
                    Source::Snapshot(
                        Arc::new(ClusterState::build(&raw, settings.clone())),
                        raw.counts(),
                    ),
                    warnings,
                )
            }
            SourceKind::Kube => (
                Source::Kube(kube_source::KubeSource::start(&cfg, telemetry.clone()).await?),
                Vec::new(),
            ),
        };
        Ok(Cluster {
            inner: Arc::new(Inner {
                settings,
                source,
                warnings,
                cache: Mutex::new(None),
                build_lock: Default::default(),
                telemetry,
            }),
        })
    }

    /// A model over already-parsed objects (tests, tools).
    pub fn from_raw(raw: &raw::RawObjects, cfg: &ClusterConfig) -> Result<Cluster, ClusterError> {
        let settings = Arc::new(Settings::from_config(cfg)?);
        let state = Arc::new(ClusterState::build(raw, settings.clone()));
        Ok(Cluster {
            inner: Arc::new(Inner {
                settings,
                source: Source::Snapshot(state, raw.counts()),
                warnings: Vec::new(),
                cache: Mutex::new(None),
                build_lock: Default::default(),
                telemetry: Arc::default(),
            }),
        })
    }

    /// The current model. With the `kube` source this waits for the first sync up to
    /// `sync_timeout` ([`ClusterError::NotSynced`] after that), then never waits on the API
    /// server: the model is rebuilt from the caches only when a watch event arrived.
    pub async fn state(&self) -> Result<Arc<ClusterState>, ClusterError> {
        let kube = match &self.inner.source {
            Source::Snapshot(s, _) => return Ok(s.clone()),
            Source::Kube(k) => k,
        };
        kube.wait_synced(self.inner.settings.sync_timeout).await?;
        let cached = |generation: u64| -> Option<Arc<ClusterState>> {
            let guard = self.inner.cache.lock().ok()?;
            guard.as_ref().filter(|(g, _)| *g == generation).map(|(_, s)| s.clone())
        };
        if let Some(s) = cached(kube.generation()) {
            return Ok(s);
        }
        // One build at a time: requests that arrive during a build take its result.
        let _building = self.inner.build_lock.lock().await;
        let generation = kube.generation();
        if let Some(s) = cached(generation) {
            return Ok(s);
        }
        // The stale model is of no use to anyone arriving now (they wait for this build):
        // dropping it first keeps one model in memory, not two, while the new one is built.
        if let Ok(mut guard) = self.inner.cache.lock() {
            *guard = None;
        }
        let raw = kube
            .raw()
            .ok_or_else(|| ClusterError::NotSynced("the Kubernetes caches are not ready".into()))?;
        let settings = self.inner.settings.clone();
        // Building walks every object: keep it off the async workers.
        let started = std::time::Instant::now();
        let state =
            tokio::task::spawn_blocking(move || Arc::new(ClusterState::build(&raw, settings)))
                .await
                .map_err(|e| {
                    ClusterError::Kube(format!("building the cluster model failed: {e}"))
                })?;
        self.inner.telemetry.cluster_rebuild_duration.observe(started.elapsed().as_secs_f64());
        if let Ok(mut guard) = self.inner.cache.lock() {
            *guard = Some((generation, state.clone()));
        }
        Ok(state)
    }

    /// The current model, but only if the API server answers and the caches have synced:
    /// else [`ClusterError::Unavailable`] at once, neither waiting `sync_timeout` nor serving
    /// the last-known objects as current. For remote clusters, which must not slow a request
    /// down or pass old objects off as live; the home cluster keeps [`Cluster::state`].
    pub async fn state_if_reachable(&self) -> Result<Arc<ClusterState>, ClusterError> {
        if let Some(why) = self.lost() {
            return Err(ClusterError::Unavailable(why));
        }
        if !self.synced() {
            return Err(ClusterError::Unavailable(
                "the cluster's Kubernetes caches are not synced yet".into(),
            ));
        }
        self.state().await
    }

    /// Why the API server cannot be used now: `Some` at most about 12 s after it goes away
    /// (a second or two when its connections break), `None` again about 6 s (at most 16 s)
    /// after it answers, once the watches have resumed. Always `None` for a snapshot.
    /// Never waits.
    pub fn lost(&self) -> Option<String> {
        match &self.inner.source {
            Source::Snapshot(..) => None,
            Source::Kube(k) => k.lost(),
        }
    }

    /// The Kubernetes version for `/status`: the API server's, `snapshot`, or `unknown`
    /// before the first contact.
    pub fn version(&self) -> String {
        match &self.inner.source {
            Source::Snapshot(..) => "snapshot".into(),
            Source::Kube(k) => k.version().unwrap_or_else(|| "unknown".into()),
        }
    }

    /// Objects held, by kind: the kube caches now, or the snapshot as loaded.
    pub fn object_counts(&self) -> Vec<(&'static str, usize)> {
        match &self.inner.source {
            Source::Snapshot(_, counts) => counts.clone(),
            Source::Kube(k) => k.object_counts(),
        }
    }

    /// Whether the model can be read without waiting: snapshots always, the `kube` source
    /// once its caches have synced (never waits).
    pub fn synced(&self) -> bool {
        match &self.inner.source {
            Source::Snapshot(..) => true,
            Source::Kube(k) => k.synced(),
        }
    }

    /// Current problems with cluster access, one line each (e.g. a kind the service account
    /// may not list or watch, which then counts as absent), and one line naming the
    /// security, Sidecar and Gateway API kinds whose CRDs the cluster does not serve.
    pub fn access_warnings(&self) -> Vec<String> {
        match &self.inner.source {
            Source::Snapshot(..) => Vec::new(),
            Source::Kube(k) => {
                let mut out: Vec<String> = k
                    .forbidden_kinds()
                    .into_iter()
                    .map(|kind| format!("no permission to list or watch {kind}: {kind} objects are treated as absent"))
                    .collect();
                let absent = k.absent_kinds();
                if !absent.is_empty() {
                    let names: Vec<&str> = absent.iter().map(|k| k.display_name()).collect();
                    out.push(format!(
                        "the cluster serves no {} (CRD not installed when meshlens started): their lists are empty and they are not validated",
                        names.join(", ")
                    ));
                }
                out
            }
        }
    }

    /// The `kube` source's client, with the service's own credentials (`None` for a snapshot).
    pub fn kube_client(&self) -> Option<kube::Client> {
        match &self.inner.source {
            Source::Kube(k) => Some(k.client()),
            Source::Snapshot(..) => None,
        }
    }

    /// Problems found while loading a snapshot (file, document index, reason).
    pub fn warnings(&self) -> Vec<String> {
        self.inner.warnings.clone()
    }

    /// The checked settings.
    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }
}
