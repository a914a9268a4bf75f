//! namespaceMetrics: the namespace's Istio request, TCP and histogram metrics over a range.

use meshlens_dashboards::{NamespaceMetricsParams, namespace_metrics_plan};

use crate::{
    api::health::telemetry_cluster,
    error::ApiError,
    router::{Ctx, HandlerFuture, Reply, Route},
};

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("namespaceMetrics", "/namespaces/{namespace}/metrics", namespace_metrics)
            .expensive(),
    ]
}

fn namespace_metrics(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let limits = ctx.state.config.limits.params(meshlens_params::now());
        let mut params = NamespaceMetricsParams::parse_with(ctx.query_string(), &limits)?;
        params.app.cluster = telemetry_cluster(&ctx).map(str::to_string);
        let cluster = ctx.cluster.cluster.state().await?;
        let ns = ctx.path("namespace")?;
        // The operation lists 400 and 503: an unknown namespace is a bad request here.
        let ns_state = cluster
            .namespace(ns)
            .ok_or_else(|| ApiError::bad_request("namespace does not exist"))?;
        let created =
            chrono::DateTime::parse_from_rfc3339(&ns_state.created_at).map(|t| t.timestamp()).ok();
        let now = ctx.state.metrics.default_time();
        let engine = ctx.state.metrics.clone();
        let duration = engine
            .duration_unit(
                &ctx.rc,
                ctx.state.config.metrics.duration_histogram,
                params.app.base.query_time.unwrap_or(now),
            )
            .await?;
        let plan = namespace_metrics_plan(ns, &params, duration, created, now)?;
        let results = engine.query_all(&ctx.rc, plan.queries.clone()).await?;
        let body = plan.assemble(results.into_iter().map(|r| Ok((*r).clone())).collect())?;
        Reply::json(&body)
    })
}
