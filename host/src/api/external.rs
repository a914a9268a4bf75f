//! dashboardInfo (Grafana) and tracingInfo (tracing UI) descriptors.

use crate::{
    error::ApiError,
    router::{Ctx, HandlerFuture, Reply, Route},
};

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
