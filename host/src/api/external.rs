//! dashboardInfo (Grafana) and tracingInfo (tracing UI) descriptors, and their
//! `[external_services]` section.

use serde::{Deserialize, Serialize};

use crate::{
    error::ApiError,
    router::{Ctx, HandlerFuture, Reply, Route},
};

/// `[external_services]`: links to Grafana and the tracing UI.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExternalServices {
    pub grafana: GrafanaConfig,
    pub tracing: TracingConfig,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GrafanaConfig {
    pub url: Option<String>,
    pub display_link: bool,
    pub service_dashboard_path: String,
    pub workload_dashboard_path: String,
    pub var_namespace: String,
    pub var_service: String,
    pub var_workload: String,
}

impl Default for GrafanaConfig {
    fn default() -> Self {
        GrafanaConfig {
            url: None,
            display_link: true,
            service_dashboard_path: "/d/istio-service-dashboard".into(),
            workload_dashboard_path: "/d/istio-workload-dashboard".into(),
            var_namespace: "var-namespace".into(),
            var_service: "var-service".into(),
            var_workload: "var-workload".into(),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TracingConfig {
    pub url: Option<String>,
}

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("dashboardInfo", "/grafana", dashboard_info),
        Route::get("tracingInfo", "/jaeger", tracing_info),
    ]
}

fn absolute_http_url(text: &str) -> bool {
    url::Url::parse(text)
        .map(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
        .unwrap_or(false)
}

fn dashboard_info(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let g = &ctx.state.config.external_services.grafana;
        if !g.display_link {
            return Ok(Reply::NoContent);
        }
        let url = match g.url.as_deref() {
            None | Some("") => {
                return Err(ApiError::unavailable("Grafana URL is not set in the configuration"));
            }
            Some(u) if !absolute_http_url(u) => {
                return Err(ApiError::unavailable(
                    "Grafana URL in the configuration is not an absolute http(s) URL",
                ));
            }
            Some(u) => u,
        };
        Reply::json(&serde_json::json!({
            "url": url,
            "serviceDashboardPath": g.service_dashboard_path,
            "workloadDashboardPath": g.workload_dashboard_path,
            "varNamespace": g.var_namespace,
            "varService": g.var_service,
            "varWorkload": g.var_workload,
        }))
    })
}

fn tracing_info(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        match ctx.state.config.external_services.tracing.url.as_deref() {
            None | Some("") => {
                Err(ApiError::not_found("the tracing URL is not set in the configuration"))
            }
            Some(u) if !absolute_http_url(u) => Err(ApiError::NotAcceptable(
                "the tracing URL in the configuration is not an absolute URL".into(),
            )),
            Some(u) => Reply::json(&serde_json::json!({ "url": u })),
        }
    })
}
