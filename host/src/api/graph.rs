//! The five graph operations (README, The API): the path names the target, the service
//! ([`crate::service::graph`]) does the rest.

use meshlens_traffic::GraphTarget;

use crate::{
    error::ApiError,
    router::{Ctx, HandlerFuture, Reply, Route},
    service::{
        graph::{self as service, GraphAnswer},
        graph_rights::Caller,
    },
};

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("graphNamespaces", "/namespaces/graph", graph_namespaces).expensive(),
        Route::get("graphApp", "/namespaces/{namespace}/applications/{app}/graph", graph_app)
            .expensive(),
        Route::get(
            "graphAppVersion",
            "/namespaces/{namespace}/applications/{app}/versions/{version}/graph",
            graph_app_version,
        )
        .expensive(),
        Route::get(
            "graphService",
            "/namespaces/{namespace}/services/{service}/graph",
            graph_service,
        )
        .expensive(),
        Route::get(
            "graphWorkload",
            "/namespaces/{namespace}/workloads/{workload}/graph",
            graph_workload,
        )
        .expensive(),
    ]
}

fn graph_namespaces(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move { graph(ctx, GraphTarget::Namespaces).await })
}

fn graph_app(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let target = GraphTarget::App {
            namespace: ctx.path("namespace")?.into(),
            app: ctx.path("app")?.into(),
        };
        graph(ctx, target).await
    })
}

fn graph_app_version(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let target = GraphTarget::AppVersion {
            namespace: ctx.path("namespace")?.into(),
            app: ctx.path("app")?.into(),
            version: ctx.path("version")?.into(),
        };
        graph(ctx, target).await
    })
}

fn graph_service(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let target = GraphTarget::Service {
            namespace: ctx.path("namespace")?.into(),
            service: ctx.path("service")?.into(),
        };
        graph(ctx, target).await
    })
}

fn graph_workload(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let target = GraphTarget::Workload {
            namespace: ctx.path("namespace")?.into(),
            workload: ctx.path("workload")?.into(),
        };
        graph(ctx, target).await
    })
}

/// Reads nothing itself: the service parses the parameters, checks access, and builds.
async fn graph(mut ctx: Ctx, target: GraphTarget) -> Result<Reply, ApiError> {
    let slot = ctx.take_slot();
    // Reviewed per cluster in the service: the router checked `ctx.cluster` only.
    let caller = Caller { access: &ctx.access, cluster: &ctx.cluster, headers: &ctx.headers };
    let answer =
        service::graph(&ctx.state, &ctx.rc, &caller, target, ctx.query_string(), slot).await?;
    Ok(match answer {
        GraphAnswer::Json(body) => Reply::Json(body),
        GraphAnswer::Dot(body) => Reply::Text { content_type: "text/vnd.graphviz", body },
    })
}
