//! The namespace list (not in the spec; every client needs it):
//! `[{name, creationTimestamp, isAmbient, cluster}]`, every cluster's namespaces (home first,
//! then the remotes in config order; the same name in two clusters is two entries), only
//! those the caller may see in each cluster. A remote that cannot be read now is left out
//! (its last-known namespaces are not current), as Kiali v2 lists only reachable clusters.

use meshlens_cluster::payload::NamespaceInfo;
use serde::Serialize;

use crate::{
    clusters::Member,
    error::ApiError,
    router::{Ctx, HandlerFuture, Reply, Route},
};

pub fn routes() -> Vec<Route> {
    vec![Route::get("namespaceList", "/namespaces", namespace_list)]
}

/// The longest a remote's namespaces (and the caller's reviews there) are waited for.
const REMOTE_WAIT: std::time::Duration = std::time::Duration::from_millis(1500);

/// An entry: the namespace and the cluster it is in.
#[derive(Serialize)]
struct ClusterNamespace {
    #[serde(flatten)]
    namespace: NamespaceInfo,
    cluster: String,
}

fn namespace_list(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let ctx = &ctx;
        let members = ctx.state.clusters.members();
        // Clusters are read (and their reviews asked) concurrently, and a remote gets at most
        // REMOTE_WAIT: one whose API server hangs (before it is known lost) is left out of this
        // answer rather than holding up the home cluster's namespaces.
        let lists = futures::future::join_all(members.iter().map(|m| async move {
            if !m.remote {
                return cluster_list(ctx, m).await;
            }
            tokio::time::timeout(REMOTE_WAIT, cluster_list(ctx, m)).await.unwrap_or_else(|_| {
                Err(ApiError::unavailable(format!("cluster {:?} did not answer in time", m.name)))
            })
        }))
        .await;
        let mut out = Vec::new();
        for (member, list) in members.iter().zip(lists) {
            match list {
                Ok(list) => {
                    out.extend(list.into_iter().map(|namespace| ClusterNamespace {
                        namespace,
                        cluster: member.name.clone(),
                    }))
                }
                // The home cluster's failure is the answer's, as before remotes existed.
                Err(e) if !member.remote => return Err(e),
                Err(e) => {
                    tracing::debug!(cluster = %member.name, error = %e, "remote left out of the namespace list")
                }
            }
        }
        Reply::json(&out)
    })
}

/// One cluster's namespaces the caller may see there.
async fn cluster_list(ctx: &Ctx, member: &Member) -> Result<Vec<NamespaceInfo>, ApiError> {
    if member.remote
        && let Some(e) = member.unavailable()
    {
        return Err(e);
    }
    let state = member.cluster.state().await?;
    let list = state.namespace_list();
    if !ctx.access.restricted() {
        return Ok(list);
    }
    let Some(access) =
        crate::cluster_access::access_in(&ctx.state, &ctx.access, member, &ctx.headers).await?
    else {
        return Ok(Vec::new());
    };
    // Only the namespaces the caller may see, as that cluster's API server decides.
    access.filter(list, |n| n.name.as_str()).await
}
