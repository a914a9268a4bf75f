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
        // Remotes are read (and their reviews asked) concurrently: a slow one slows no other.
        let lists = futures::future::join_all(members.iter().map(|m| cluster_list(ctx, m))).await;
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
