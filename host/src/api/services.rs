//! serviceList, answered from the cluster model.

use crate::router::{Ctx, HandlerFuture, Reply, Route};

pub fn routes() -> Vec<Route> {
    vec![Route::get("serviceList", "/namespaces/{namespace}/services", service_list)]
}

fn service_list(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let ns = ctx.path("namespace")?;
        let state = ctx.cluster.cluster.state().await?;
        Reply::json(&super::items_in_cluster(
            &state.service_list(ns)?,
            "services",
            &ctx.cluster.name,
        )?)
    })
}
