//! `/healthz` (liveness) and `/ready` (readiness): public, cheap, never waiting on the
//! backend or the cluster (see [`crate::lifecycle`]).

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

/// 200 when the cluster cache has synced, the backend answered recently and no shutdown
/// has begun; otherwise 503 naming the reason.
fn ready(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        crate::lifecycle::readiness(&ctx.state)
            .map_err(|why| ApiError::unavailable(format!("not ready: {why}")))?;
        Reply::json(&serde_json::json!({"status": "ready"}))
    })
}
