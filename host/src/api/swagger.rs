//! The Swagger 2.0 document of the whole API, kept in the repo (`host/swagger.json`).

use crate::router::{Ctx, HandlerFuture, Reply, Route};

/// The document as shipped.
pub const SWAGGER: &str = include_str!("../../swagger.json");

pub fn routes() -> Vec<Route> {
    vec![Route::get("swagger", "/swagger.json", swagger).public()]
}

fn swagger(_ctx: Ctx) -> HandlerFuture {
    Box::pin(async move { Ok(Reply::Text { content_type: "application/json", body: SWAGGER.to_string() }) })
}
