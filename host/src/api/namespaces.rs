//! The namespace list (not in the spec; every client needs it): `[{name, creationTimestamp}]`,
//! only the namespaces the caller may see.

use crate::router::{Ctx, HandlerFuture, Reply, Route};

pub fn routes() -> Vec<Route> {
    vec![Route::get("namespaceList", "/namespaces", namespace_list)]
}

fn namespace_list(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let state = ctx.state.cluster.state().await?;
        let list = state.namespace_list();
        if !ctx.access.restricted() {
            return Reply::json(&list);
        }
        // Only the namespaces the caller may see.
        let list = ctx.access.filter(list, |n| n.name.as_str()).await?;
        Reply::json(&list)
    })
}
