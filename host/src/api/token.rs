//! GetToken: exchanges user and password (HTTP Basic) for a signed token.

use crate::{
    auth,
    router::{Ctx, HandlerFuture, Reply, Route},
};

pub fn routes() -> Vec<Route> {
    // Public at the router: the handler itself demands the Basic credentials.
    vec![Route::get("GetToken", "/token", get_token).public()]
}

fn get_token(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let state = &ctx.state;
        let user = auth::token_user(state, &ctx.headers)?;
        crate::telemetry::set_user(&user);
        let issued = auth::issue(&state.signing_key, &user, state.config.auth.token_lifetime.0, state.started);
        Ok(Reply::json(&serde_json::json!({ "token": issued.token, "expired_at": issued.expired_at })))
    })
}
