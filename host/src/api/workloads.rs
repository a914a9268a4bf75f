//! workloadList and workload details, answered from the cluster model.

use crate::router::{Ctx, HandlerFuture, Reply, Route};

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("workloadList", "/namespaces/{namespace}/workloads", workload_list),
        Route::get(
            "workloadDetails",
            "/namespaces/{namespace}/workloads/{workload}",
            workload_details,
        ),
    ]
}

fn workload_list(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let ns = ctx.path("namespace")?;
        let state = ctx.cluster.cluster.state().await?;
        Reply::json(&super::items_in_cluster(
            &state.workload_list(ns)?,
            "workloads",
            &ctx.cluster.name,
        )?)
    })
}

fn workload_details(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let ns = ctx.path("namespace")?;
        let name = ctx.path("workload")?;
        let state = ctx.cluster.cluster.state().await?;
        Reply::json(&state.workload_details(ns, name)?)
    })
}
