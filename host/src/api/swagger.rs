//! The Swagger 2.0 document of the whole API, kept in the repo (`host/swagger.json`).

use crate::router::{Ctx, HandlerFuture, Reply, Route};

/// The document as shipped.
pub const SWAGGER: &str = include_str!("../../swagger.json");

pub fn routes() -> Vec<Route> {
    vec![Route::get("swagger", "/swagger.json", swagger).public()]
}

fn swagger(_ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        Ok(Reply::Text { content_type: "application/json", body: SWAGGER.to_string() })
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::SWAGGER;

    #[test]
    fn every_route_is_documented_and_every_documented_path_is_routed() {
        let doc: serde_json::Value = serde_json::from_str(SWAGGER).expect("swagger.json is JSON");
        let paths = doc["paths"].as_object().expect("paths");
        let documented: BTreeSet<(String, String)> = paths
            .iter()
            .map(|(p, item)| {
                (p.clone(), item["get"]["operationId"].as_str().unwrap_or_default().to_string())
            })
            .collect();
        let routed: BTreeSet<(String, String)> = crate::api::all_routes()
            .iter()
            .map(|r| (r.path.to_string(), r.op.to_string()))
            .collect();
        assert_eq!(documented, routed);
        for (path, item) in paths {
            let get = &item["get"];
            assert!(get["responses"]["200"]["schema"].is_object(), "{path}: no 200 schema");
            for p in get["parameters"].as_array().expect("parameters") {
                assert!(p["type"].is_string(), "{path}: parameter without type: {p}");
            }
        }
    }
}
