//! The clusters one instance reads: the home cluster and the `[[cluster.remotes]]`, each with
//! its own source, watch caches and sync state, so a remote that goes away cannot hold up the
//! others.

use std::sync::Arc;

use meshlens_cluster::{Cluster, ClusterConfig};
use meshlens_telemetry::Metrics;

use crate::error::ApiError;

/// One cluster of the mesh as the service reads it.
#[derive(Clone, Debug)]
pub struct Member {
    /// Its name, as the telemetry's cluster labels spell it.
    pub name: String,
    /// Its model source.
    pub cluster: Cluster,
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
        let mut members = vec![Member { name: cfg.name.clone(), cluster: home, remote: false }];
        for r in &cfg.remotes {
            let cluster = Cluster::start(cfg.remote_config(r))
                .await
                .map_err(|reason| StartError { name: r.name.clone(), reason })?;
            members.push(Member { name: r.name.clone(), cluster, remote: true });
        }
        Ok(ClusterSet { members })
    }

    /// A set of the home cluster only, from a source already started (tests, tools).
    pub fn single(name: &str, cluster: Cluster) -> ClusterSet {
        ClusterSet { members: vec![Member { name: name.to_string(), cluster, remote: false }] }
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
        if let Some(why) = self.cluster.lost() {
            return Some(ApiError::unavailable(format!(
                "cluster {:?} is not available: {why}",
                self.name
            )));
        }
        if !self.cluster.synced() {
            return Some(ApiError::unavailable(format!(
                "cluster {:?} is not available: its Kubernetes caches are not synced",
                self.name
            )));
        }
        None
    }
}
