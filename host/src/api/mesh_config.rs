//! meshConfigList: the seven mesh config lists of a namespace.

use serde::Deserialize;

use crate::router::{Ctx, HandlerFuture, Reply, Route};

pub fn routes() -> Vec<Route> {
    vec![Route::get("meshConfigList", "/namespaces/{namespace}/mesh", mesh_config_list)]
}

/// meshConfigList's query parameters.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct MeshConfigQuery {
    /// Comma-separated plural kind names: which lists are filled. An unknown name is a 400
    /// that lists the known ones (the cluster crate knows them).
    #[serde(deserialize_with = "meshlens_params::query::first")]
    objects: Option<String>,
}

fn mesh_config_list(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let q: MeshConfigQuery = ctx.query()?;
        let ns = ctx.path("namespace")?;
        let state = ctx.cluster.cluster.state().await?;
        Reply::json(&state.mesh_config_list(ns, q.objects.as_deref())?)
    })
}
