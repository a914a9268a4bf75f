//! What the caller of a graph may see, per cluster (#32, "Per-cluster rights"). A graph
//! spans every cluster, so its nodes are judged per (cluster, namespace), each cluster's
//! API server reviewing the caller there ([`crate::cluster_access`]), as Kiali v2 keys
//! accessible namespaces by cluster (`graph/options.go` `getAccessibleNamespaces`, and
//! `isInaccessible` in `graph/telemetry/istio/appender/outsider.go`).
//!
//! - A requested namespace must be visible in at least one cluster that can be read now,
//!   else the whole request is refused (403), as Kiali's `graph/options.go` refuses a
//!   namespace that no cluster makes accessible.
//! - Visible in east but not in west: the graph is served; west's nodes of that namespace
//!   keep only their names and are `isInaccessible` ([`meshlens_traffic::names_only`]),
//!   as Kiali marks a node whose (cluster, namespace) is not accessible.
//! - Nodes of the `unknown` cluster (telemetry without cluster labels) are judged by the
//!   home cluster, and so is every node of a single-cluster instance whatever its cluster
//!   label: older telemetry has none, and one cluster has one API server. (Kiali would mark
//!   `unknown` inaccessible; we keep the single-cluster answers unchanged.)
//! - A remote that cannot be read now (lost, not yet synced) or a cluster the instance does
//!   not know cannot review anyone: its nodes keep only their names for reviewed callers;
//!   so do the nodes of a remote whose reviews fail or take longer than [`REMOTE_WAIT`].

use std::{
    collections::{BTreeMap, BTreeSet, HashSet},
    sync::Arc,
    time::Duration,
};

use meshlens_cluster::ClusterState;
use plugin_api::QueryResult;
use warp::http::HeaderMap;

use crate::{
    access::{Access, Identity},
    clusters::Member,
    error::ApiError,
    state::AppState,
};

/// How long a remote's reviews may take before its nodes are judged invisible instead:
/// the home cluster's graph must not wait on a slow or vanishing remote (as `/namespaces`
/// waits at most this long for a remote).
const REMOTE_WAIT: Duration = Duration::from_millis(1500);

/// Logs why a remote could not review the caller; its nodes are names only.
fn unreviewed(cluster: &str, why: &str) -> Option<Access> {
    tracing::warn!(cluster, why, "graph: caller not reviewed there; its nodes are names only");
    None
}

/// Who asks for a graph: their access as the router checked it, in the cluster the
/// operation names (`ctx.cluster`: a node graph's `clusterName`, else home), and the
/// request's headers (a remote reviews the same token).
pub struct Caller<'a> {
    pub access: &'a Access,
    pub cluster: &'a Member,
    pub headers: &'a HeaderMap,
}

/// The (cluster, namespace) pairs whose nodes keep only their names. Ordered, so that its
/// `Debug` is the same for the same set (it is part of the graph cache's key).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Hidden(BTreeMap<String, BTreeSet<String>>);

impl Hidden {
    pub fn contains(&self, cluster: &str, namespace: &str) -> bool {
        self.0.get(cluster).is_some_and(|n| n.contains(namespace))
    }

    pub fn insert(&mut self, cluster: &str, namespace: &str) {
        self.0.entry(cluster.to_string()).or_default().insert(namespace.to_string());
    }

    pub fn is_empty(&self) -> bool {
        self.0.values().all(BTreeSet::is_empty)
    }
}

/// The caller's access in every cluster a graph reads, reviewed once per request.
pub struct Rights {
    /// False for `anonymous` and `login`: nothing is hidden, nobody reviewed.
    restricted: bool,
    multi: bool,
    home: String,
    /// The home cluster's access (`None`: the home API server does not accept the token).
    home_access: Option<Access>,
    /// Each readable remote's access (`None`: it does not accept the token, or could not
    /// review it now).
    remotes: Vec<(String, Option<Access>)>,
}

impl Rights {
    /// Reviews the caller in the home cluster and in each readable remote of `clusters`
    /// (home first, as [`super::graph`] reads them).
    pub async fn review(
        st: &AppState,
        caller: &Caller<'_>,
        clusters: &[(String, Arc<ClusterState>)],
    ) -> Result<Rights, ApiError> {
        let home = st.clusters.home().name.clone();
        let mut rights = Rights {
            restricted: caller.access.restricted(),
            multi: st.clusters.is_multi(),
            home: home.clone(),
            home_access: Some(caller.access.clone()),
            remotes: Vec::new(),
        };
        if !rights.restricted {
            return Ok(rights);
        }
        rights.home_access = home_access(st, caller).await?;
        if !rights.multi {
            return Ok(rights);
        }
        for (name, _) in clusters.iter().filter(|(n, _)| *n != home) {
            let Some(member) = st.clusters.members().iter().find(|m| &m.name == name) else {
                continue;
            };
            // The home cluster's access stands for the caller in
            // `cluster_access::access_in`: it only carries the identity's kind there.
            let base = rights.home_access.as_ref().unwrap_or(caller.access);
            let reviewed = crate::cluster_access::access_in(st, base, member, caller.headers);
            let access = match tokio::time::timeout(REMOTE_WAIT, reviewed).await {
                Ok(Ok(a)) => a,
                // One remote failing or slow must not fail or hold up the others' graph.
                Ok(Err(e)) => unreviewed(name, &e.to_string()),
                Err(_) => unreviewed(name, "no answer in time"),
            };
            rights.remotes.push((name.clone(), access));
        }
        Ok(rights)
    }

    /// The position of the access that judges nodes of `cluster` (0 for home, then the
    /// remotes'); `None`: nothing there is visible.
    fn access_for(&self, cluster: &str) -> Option<usize> {
        if !self.multi || cluster == self.home || cluster == meshlens_traffic::UNKNOWN {
            return self.home_access.as_ref().map(|_| 0);
        }
        let i = self.remotes.iter().position(|(n, _)| n == cluster)?;
        self.remotes[i].1.as_ref().map(|_| i + 1)
    }

    /// Whether each of `names` is visible through the access at `key`. A remote that fails
    /// or does not answer within [`REMOTE_WAIT`] shows nothing, and is not asked again in
    /// this request; the home cluster's failure fails the graph, as before.
    async fn visible(&mut self, key: usize, names: &[&str]) -> Result<Vec<bool>, ApiError> {
        let none = vec![false; names.len()];
        if key == 0 {
            return match &self.home_access {
                Some(a) => a.visible(names).await,
                None => Ok(none),
            };
        }
        let Some((name, slot)) = self.remotes.get_mut(key - 1) else { return Ok(none) };
        let Some(access) = slot.as_ref() else { return Ok(none) };
        match tokio::time::timeout(REMOTE_WAIT, access.visible(names)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                *slot = unreviewed(name, &e.to_string());
                Ok(none)
            }
            Err(_) => {
                *slot = unreviewed(name, "no answer in time");
                Ok(none)
            }
        }
    }

    /// 403 unless each requested namespace is visible in at least one cluster read now.
    pub async fn require(&mut self, namespaces: &[String]) -> Result<(), ApiError> {
        if !self.restricted {
            return Ok(());
        }
        let names: Vec<&str> = namespaces.iter().map(String::as_str).collect();
        let mut seen = vec![false; names.len()];
        for key in 0..=self.remotes.len() {
            let visible = self.visible(key, &names).await?;
            seen.iter_mut().zip(visible).for_each(|(s, v)| *s |= v);
            if seen.iter().all(|s| *s) {
                return Ok(());
            }
        }
        Err(ApiError::Forbidden(if names.len() == 1 {
            "you may not see this namespace".into()
        } else {
            "you may not see one or more of the requested namespaces".into()
        }))
    }

    /// The (cluster, namespace) pairs the traffic and the request reach that the caller
    /// may not see there. Every cluster the traffic names, the home cluster, the readable
    /// remotes and `unknown` are judged for every namespace the traffic names and every
    /// requested one (nodes the appenders add are in requested namespaces).
    pub async fn hidden(
        &mut self,
        traffic: &[Arc<QueryResult>],
        requested: &[String],
    ) -> Result<Hidden, ApiError> {
        let mut hidden = Hidden::default();
        if !self.restricted {
            return Ok(hidden);
        }
        let mut clusters: BTreeSet<String> = BTreeSet::new();
        let mut namespaces: HashSet<&str> = requested.iter().map(String::as_str).collect();
        for series in traffic.iter().flat_map(|r| r.series.iter()) {
            for (label, value) in series.labels.iter() {
                if label.ends_with("_namespace") {
                    namespaces.insert(value);
                } else if (label == "source_cluster" || label == "destination_cluster")
                    && !clusters.contains(value)
                {
                    clusters.insert(value.to_string());
                }
            }
        }
        clusters.insert(self.home.clone());
        clusters.insert(meshlens_traffic::UNKNOWN.to_string());
        clusters.extend(self.remotes.iter().map(|(n, _)| n.clone()));
        let names: Vec<&str> = namespaces
            .into_iter()
            .filter(|n| !n.is_empty() && *n != meshlens_traffic::UNKNOWN)
            .collect();
        // Clusters judged by the same access are reviewed once (a single-cluster instance:
        // once for all), keyed by the access's position.
        let mut answers: Vec<(usize, Vec<bool>)> = Vec::new();
        for cluster in clusters.iter().filter(|c| !c.is_empty()) {
            let visible: &[bool] = match self.access_for(cluster) {
                None => &[],
                Some(key) => {
                    let i = match answers.iter().position(|(k, _)| *k == key) {
                        Some(i) => i,
                        None => {
                            answers.push((key, self.visible(key, &names).await?));
                            answers.len() - 1
                        }
                    };
                    &answers[i].1
                }
            };
            for (i, ns) in names.iter().enumerate() {
                if !visible.get(i).copied().unwrap_or(false) {
                    hidden.insert(cluster, ns);
                }
            }
        }
        Ok(hidden)
    }
}

/// The caller's access in the home cluster. The router reviewed them in the cluster the
/// operation names, so for a node graph with a remote's `clusterName` the home API server
/// is asked here (its answers are cached like the router's); `None` when it refuses the
/// token.
async fn home_access(st: &AppState, caller: &Caller<'_>) -> Result<Option<Access>, ApiError> {
    if !caller.cluster.remote || !matches!(caller.access.identity, Identity::Kube(_)) {
        return Ok(Some(caller.access.clone()));
    }
    crate::cluster_access::reviewed_by(st, st.auth.reviewer.clone(), caller.headers).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_pairs_are_per_cluster_and_ordered() {
        let mut a = Hidden::default();
        assert!(a.is_empty());
        a.insert("west", "bookinfo");
        a.insert("Kubernetes", "default");
        assert!(a.contains("west", "bookinfo"));
        assert!(!a.contains("Kubernetes", "bookinfo"), "east's bookinfo is not west's");
        let mut b = Hidden::default();
        b.insert("Kubernetes", "default");
        b.insert("west", "bookinfo");
        // The same set in another order keys the graph cache the same way.
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
}
