//! meshConfigList: the seven mesh config lists of a namespace.

use crate::router::{Ctx, HandlerFuture, Reply, Route};

pub fn routes() -> Vec<Route> {
    vec![Route::get("meshConfigList", "/namespaces/{namespace}/mesh", mesh_config_list)]
}

/// `objects` (comma-separated plural kind names) limits which lists are filled; an unknown
/// name is a 400 that lists the known ones.
fn mesh_config_list(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let ns = ctx.path("namespace")?;
        let objects = ctx.query("objects");
        let state = ctx.state.cluster.state().await?;
        Reply::json(&state.mesh_config_list(ns, objects)?)
    })
}
