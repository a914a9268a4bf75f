//! The clusters one instance reads: the home cluster and the `[[cluster.remotes]]`, each with
//! its own source, watch caches and sync state, so a remote that goes away cannot hold up the
//! others.

use std::sync::Arc;

use futures::future::BoxFuture;
use meshlens_cluster::{Cluster, ClusterConfig, ClusterError, model::ClusterState};
use meshlens_telemetry::Metrics;

use crate::error::ApiError;

/// What handlers and services read of one cluster: its model now (or why not), whether it
/// can be read, and what `/status` and `/metrics` show of it. The real one is a
/// [`Cluster`] source; tests give a hand-made one (any model, a remote that is lost) to
/// [`crate::state::AppState::assemble_with`], so handlers run over a state without a source.
pub trait ClusterView: Send + Sync + std::fmt::Debug {
    /// The current model ([`Cluster::state`]: may wait for the first sync).
    fn state(&self) -> BoxFuture<'_, Result<Arc<ClusterState>, ClusterError>>;
    /// Why the API server cannot be used now (`None`: it can).
    fn lost(&self) -> Option<String>;
    /// Whether the model can be read without waiting.
    fn synced(&self) -> bool;
    /// The Kubernetes version for `/status`.
    fn version(&self) -> String;
    /// Objects held, by kind (`/metrics`).
    fn object_counts(&self) -> Vec<(&'static str, usize)>;
    /// Current problems with cluster access (`/status`).
    fn access_warnings(&self) -> Vec<String>;
    /// Problems found at start (`/status`).
    fn warnings(&self) -> Vec<String>;
    /// The client access reviews are asked with (`None`: no API server).
    fn kube_client(&self) -> Option<kube::Client>;

    /// Why the model cannot be read now (`None`: it can): the API server lost, or the caches
    /// never synced.
    fn unreachable(&self) -> Option<String> {
        self.lost().or_else(|| {
            (!self.synced()).then(|| "its Kubernetes caches are not synced".to_string())
        })
    }

    /// The model only if it can be read now, at once: [`ClusterError::Unavailable`] when
    /// [`Self::unreachable`] (remotes must neither slow a request nor pass old objects off).
    fn state_if_reachable(&self) -> BoxFuture<'_, Result<Arc<ClusterState>, ClusterError>> {
        Box::pin(async move {
            match self.unreachable() {
                Some(why) => Err(ClusterError::Unavailable(why)),
                None => self.state().await,
            }
        })
    }
}

impl ClusterView for Cluster {
    fn state(&self) -> BoxFuture<'_, Result<Arc<ClusterState>, ClusterError>> {
        Box::pin(Cluster::state(self))
    }
    fn state_if_reachable(&self) -> BoxFuture<'_, Result<Arc<ClusterState>, ClusterError>> {
        Box::pin(Cluster::state_if_reachable(self))
    }
    fn lost(&self) -> Option<String> {
        Cluster::lost(self)
    }
    fn synced(&self) -> bool {
        Cluster::synced(self)
    }
    fn version(&self) -> String {
        Cluster::version(self)
    }
    fn object_counts(&self) -> Vec<(&'static str, usize)> {
        Cluster::object_counts(self)
    }
    fn access_warnings(&self) -> Vec<String> {
        Cluster::access_warnings(self)
    }
    fn warnings(&self) -> Vec<String> {
        Cluster::warnings(self)
    }
    fn kube_client(&self) -> Option<kube::Client> {
        Cluster::kube_client(self)
    }
}

/// One cluster of the mesh as the service reads it.
#[derive(Clone, Debug)]
pub struct Member {
    /// Its name, as the telemetry's cluster labels spell it.
    pub name: String,
    /// Its model source.
    pub cluster: Arc<dyn ClusterView>,
    /// Not the home cluster.
    pub remote: bool,
}

/// Every cluster of the instance: the home one first, then the remotes in config order.
#[derive(Clone, Debug)]
pub struct ClusterSet {
    members: Vec<Member>,
}

/// Why the clusters cannot be started.
#[derive(Debug, thiserror::Error)]
#[error("cannot start the source of cluster {name:?}: {reason}")]
pub struct StartError {
    name: String,
    reason: meshlens_cluster::ClusterError,
}

impl ClusterSet {
    /// Starts the home source and every remote's. A remote whose API server is down does not
    /// fail this (its source keeps retrying); a remote that cannot be configured does.
    /// The home cluster records its syncs and rebuilds in `telemetry`; the remotes' are not
    /// served (one unlabelled gauge cannot tell clusters apart).
    pub async fn start(
        cfg: &ClusterConfig,
        telemetry: &Arc<Metrics>,
    ) -> Result<ClusterSet, StartError> {
        let home = Cluster::start_recording(cfg.clone(), telemetry.clone())
            .await
            .map_err(|reason| StartError { name: cfg.name.clone(), reason })?;
        let mut set = ClusterSet::single(&cfg.name, Arc::new(home));
        for r in &cfg.remotes {
            let cluster = Cluster::start(cfg.remote_config(r))
                .await
                .map_err(|reason| StartError { name: r.name.clone(), reason })?;
            set = set.with_remote(&r.name, Arc::new(cluster));
        }
        Ok(set)
    }

    /// A set of the home cluster only, from a view already made (tests, tools).
    pub fn single(name: &str, cluster: Arc<dyn ClusterView>) -> ClusterSet {
        ClusterSet { members: vec![Member { name: name.to_string(), cluster, remote: false }] }
    }

    /// This set and one more remote, after the others (config order).
    pub fn with_remote(mut self, name: &str, cluster: Arc<dyn ClusterView>) -> ClusterSet {
        self.members.push(Member { name: name.to_string(), cluster, remote: true });
        self
    }

    /// The home cluster.
    pub fn home(&self) -> &Member {
        &self.members[0]
    }

    /// Every cluster, home first.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// Whether the instance reads more than one cluster.
    pub fn is_multi(&self) -> bool {
        self.members.len() > 1
    }

    /// The cluster a request names in `clusterName` (`None`: the home cluster). An unknown
    /// name is a 404 (Kiali answers 500: a name that matches nothing is the client's error);
    /// a remote that cannot be read now is a 503, since its last-known objects are not current.
    pub fn resolve(&self, name: Option<&str>) -> Result<&Member, ApiError> {
        let Some(name) = name else { return Ok(self.home()) };
        let member = self.members.iter().find(|m| m.name == name).ok_or_else(|| {
            let known: Vec<&str> = self.members.iter().map(|m| m.name.as_str()).collect();
            ApiError::not_found(format!(
                "cluster {name:?} not found: this instance reads {}",
                known.join(", ")
            ))
        })?;
        match member.unavailable() {
            Some(e) if member.remote => Err(e),
            _ => Ok(member),
        }
    }
}

impl Member {
    /// A 503 when this cluster cannot be read now: its API server lost, or never synced.
    pub fn unavailable(&self) -> Option<ApiError> {
        let why = self.cluster.unreachable()?;
        Some(ApiError::unavailable(format!("cluster {:?} is not available: {why}", self.name)))
    }
}
