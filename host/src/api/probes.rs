//! `/healthz` (liveness) and `/ready` (readiness): public, cheap, never waiting on the
//! backend or the cluster (see [`crate::lifecycle`]). `[server.metrics] port` serves them
//! too, on its own thread ([`crate::probe_port`]).

use crate::{
    error::ApiError,
    router::{Ctx, HandlerFuture, Reply, Route},
};

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("healthz", "/healthz", healthz).public(),
        Route::get("ready", "/ready", ready).public(),
    ]
}

/// The process is up and its runtime answers; nothing else is looked at.
fn healthz(_ctx: Ctx) -> HandlerFuture {
    Box::pin(async move { Reply::json(&serde_json::json!({"status": "ok"})) })
}

/// 200 when this replica listens, its cluster cache has synced and no shutdown has begun;
/// otherwise 503 naming the reason. The metrics backend is not looked at.
fn ready(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        ctx.state.readiness().map_err(|why| ApiError::unavailable(format!("not ready: {why}")))?;
        Reply::json(&serde_json::json!({"status": "ready"}))
    })
}
