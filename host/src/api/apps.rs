//! appList and appDetails, answered from the cluster model.

use crate::router::{Ctx, HandlerFuture, Reply, Route};

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("appList", "/namespaces/{namespace}/apps", app_list),
        Route::get("appDetails", "/namespaces/{namespace}/apps/{app}", app_details),
    ]
}

/// The spec lists no 404 here: an unknown namespace has no apps.
fn app_list(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let ns = ctx.path("namespace")?;
        let state = ctx.cluster.cluster.state().await?;
        Reply::json(&super::items_in_cluster(
            &state.app_list(ns),
            "applications",
            &ctx.cluster.name,
        )?)
    })
}

fn app_details(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let ns = ctx.path("namespace")?;
        let app = ctx.path("app")?;
        let state = ctx.cluster.cluster.state().await?;
        let mut details = state.app_details(ns, app)?;
        // Runtimes come from the dashboards part (annotations, else one cached discovery query).
        crate::api::dashboards::fill_runtimes(&ctx.state, &ctx.rc, &state, ns, app, &mut details)
            .await;
        Reply::json(&details)
    })
}
