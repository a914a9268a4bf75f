//! The namespace list (not in the spec; every client needs it): `[{name, creationTimestamp}]`.

use crate::router::{Ctx, HandlerFuture, Reply, Route};

pub fn routes() -> Vec<Route> {
    vec![Route::get("namespaceList", "/namespaces", namespace_list)]
}

fn namespace_list(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let state = ctx.state.cluster.state().await?;
        Ok(Reply::json(&state.namespace_list()))
    })
}
