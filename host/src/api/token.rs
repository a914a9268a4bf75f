//! GetToken: exchanges the strategy's credentials for a signed session token: user and
//! password (HTTP Basic) with `login`, the caller's Kubernetes token (`Authorization:
//! Bearer`, or `auth.header_name`) with `token` and `header`; `anonymous` issues none (400).
//! Never cached (`no-store`).

use crate::router::{Ctx, HandlerFuture, Reply, Route};

pub fn routes() -> Vec<Route> {
    // Public at the router: the handler itself demands the credentials.
    vec![Route::get("GetToken", "/token", get_token).public().no_store()]
}

fn get_token(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let state = &ctx.state;
        let (user, kube) = state.auth.token_user(&ctx.headers, ctx.client.map(|c| c.ip())).await?;
        ctx.rc.set_user(&user);
        let lifetime = state.config.auth.token_lifetime.0;
        let issued = state.auth.issue(&user, kube.as_deref(), lifetime, state.started)?;
        Reply::json(&serde_json::json!({ "token": issued.token, "expired_at": issued.expired_at }))
    })
}
