//! Root, getStatus and getConfig: StatusInfo.

use serde::Serialize;

use crate::router::{Ctx, HandlerFuture, Reply, Route};

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("Root", "/", status).public(),
        Route::get("getStatus", "/status", status).public(),
        Route::get("getConfig", "/config", status),
    ]
}

/// The spec's StatusInfo.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusInfo {
    pub status: std::collections::BTreeMap<String, String>,
    pub external_services: Vec<ExternalService>,
    pub warning_messages: Vec<String>,
}

/// One external part of the deployment.
#[derive(Serialize)]
pub struct ExternalService {
    pub name: String,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

fn status(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let state = &ctx.state;
        let mut status = std::collections::BTreeMap::new();
        status.insert("state".to_string(), "running".to_string());
        status.insert("version".to_string(), env!("CARGO_PKG_VERSION").to_string());

        let mut services = Vec::new();
        let store = state.metrics.status().await;
        services.push(match store {
            Some(s) => ExternalService {
                name: if s.name.is_empty() { state.metrics.backend_name().to_string() } else { s.name.to_string() },
                version: if s.version.is_empty() { "unknown".into() } else { s.version.to_string() },
                url: (!s.url.is_empty()).then(|| s.url.to_string()),
            },
            None => ExternalService { name: state.metrics.backend_name().to_string(), version: "unknown".into(), url: None },
        });
        services.push(ExternalService { name: "Kubernetes".into(), version: state.cluster.version(), url: None });
        let ext = &state.config.external_services;
        if let Some(url) = &ext.grafana.url {
            services.push(ExternalService { name: "Grafana".into(), version: "unknown".into(), url: Some(url.clone()) });
        }
        if let Some(url) = &ext.tracing.url {
            services.push(ExternalService { name: "Tracing".into(), version: "unknown".into(), url: Some(url.clone()) });
        }
        Ok(Reply::json(&StatusInfo { status, external_services: services, warning_messages: state.warnings.clone() }))
    })
}
