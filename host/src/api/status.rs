//! Root, getStatus and getConfig: StatusInfo.

use serde::Serialize;

use crate::router::{Ctx, HandlerFuture, Reply, Route};

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("Root", "/", status).public(),
        Route::get("getStatus", "/status", status).public(),
        Route::get("getConfig", "/config", config),
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

/// getConfig's answer: StatusInfo plus the effective health rules, so that every client
/// can show why an object has its status, and the graph's appenders (the console's list).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConfigInfo {
    #[serde(flatten)]
    info: StatusInfo,
    health_config: HealthConfigView,
    /// `[metrics] cache_ttl` in whole seconds (0: the answer cache is off). Answers at a
    /// `queryTime` on its grid (a multiple of it) are cached at their first request, so a
    /// client stepping through time (the console's replay) snaps its times to it.
    metrics_cache_ttl: u64,
    /// The appenders a graph runs without `appenders=`, in run order: the bundled ones
    /// (`meshlens_traffic::BUNDLED_APPENDERS`) that are loaded, then the others.
    graph_appenders: Vec<String>,
}

/// `{rate: [...]}`: the configured entries in order, then the default entry.
#[derive(Serialize)]
struct HealthConfigView {
    rate: Vec<meshlens_health::RateRule>,
}

fn config(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let info = status_info(&ctx).await;
        let rate = ctx.state.config.health.rules().effective();
        let metrics_cache_ttl = ctx.state.config.metrics.cache_ttl.0.as_secs();
        let registered: Vec<String> =
            ctx.state.plugins.appenders.iter().map(|c| c.name.clone()).collect();
        let graph_appenders = meshlens_traffic::appender_run_order(
            None,
            &registered,
            &ctx.state.config.plugins.appenders,
        );
        Reply::json(&ConfigInfo {
            info,
            health_config: HealthConfigView { rate },
            metrics_cache_ttl,
            graph_appenders,
        })
    })
}

/// One external part of the deployment.
#[derive(Serialize)]
pub struct ExternalService {
    pub name: String,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// Answers from cached state only: the backend's status comes from the background probe
/// and the mesh version from the cluster model once it has synced, so a hung backend or an
/// unsynced cluster never slows this down. Callers that did not authenticate see no URLs
/// or file paths.
fn status(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move { Reply::json(&status_info(&ctx).await) })
}

/// Grafana and tracing, when configured (their versions are not asked).
fn configured_services(state: &crate::state::AppState) -> Vec<ExternalService> {
    let ext = &state.config.external_services;
    [("Grafana", &ext.grafana.url), ("Tracing", &ext.tracing.url)]
        .into_iter()
        .filter_map(|(name, url)| {
            url.as_ref().map(|u| ExternalService {
                name: name.into(),
                version: "unknown".into(),
                url: Some(u.clone()),
            })
        })
        .collect()
}

async fn status_info(ctx: &Ctx) -> StatusInfo {
    let state = &ctx.state;
    // A public route: a session token or an already reviewed Kubernetes token shows the
    // details; a password is never checked and no review is sent from here.
    let authenticated = state.auth.check_public(&ctx.headers);
    let mut status = std::collections::BTreeMap::new();
    status.insert("state".to_string(), "running".to_string());
    status.insert("version".to_string(), env!("CARGO_PKG_VERSION").to_string());
    status.insert("authStrategy".to_string(), state.config.auth.strategy.name().to_string());

    let mut services = Vec::new();
    let seen = state.lifecycle.backend();
    services.push(ExternalService {
        name: if seen.name.is_empty() {
            state.metrics.backend_name().to_string()
        } else {
            seen.name.clone()
        },
        version: if seen.version.is_empty() { "unknown".into() } else { seen.version.clone() },
        url: (!seen.url.is_empty()).then(|| seen.url.clone()),
    });
    services.push(ExternalService {
        name: "Kubernetes".into(),
        version: state.home_cluster().version(),
        url: None,
    });
    let mut warnings = state.warnings.clone();
    warnings.extend(state.home_cluster().access_warnings());
    // Each remote that cannot be read now (never synced, or its API server lost), by name:
    // its namespaces are out of the lists and its clusterName answers 503 until it is back.
    for m in state.clusters.members().iter().filter(|m| m.remote) {
        match m.unavailable() {
            Some(e) => warnings.push(e.to_string()),
            None => warnings.extend(
                m.cluster
                    .access_warnings()
                    .into_iter()
                    .map(|w| format!("cluster {:?}: {w}", m.name)),
            ),
        }
    }
    // The one place a backend outage shows besides /metrics and the 503s of the
    // operations that need it (not /ready: see crate::lifecycle).
    warnings.extend(state.backend_warning(authenticated));
    if let Some(version) = mesh_version(state).await {
        if major_below_one(&version) {
            warnings.push(format!(
                "Istio version {version} is not supported, the version should be >= 1.0"
            ));
        }
        services.push(ExternalService { name: "Istio".into(), version, url: None });
    }
    services.extend(configured_services(state));
    if !authenticated {
        for s in &mut services {
            s.url = None;
        }
        warnings = warnings.iter().map(|w| crate::lifecycle::redact(w)).collect();
    }
    StatusInfo { status, external_services: services, warning_messages: warnings }
}

/// The mesh's version, when the cluster shows it: the image tag of the control plane
/// (`istiod`, or `istio-pilot` before 1.5) in the mesh namespace, e.g. `pilot:1.20.0` → `1.20.0`.
async fn mesh_version(state: &crate::state::AppState) -> Option<String> {
    if !state.home_cluster().synced() {
        return None;
    }
    let cluster = state.home_cluster().state().await.ok()?;
    let mesh_ns = &state.config.cluster.mesh_namespace;
    let w = ["istiod", "istio-pilot"].iter().find_map(|n| cluster.workload(mesh_ns, n))?;
    let image = w
        .pods
        .iter()
        .find_map(|p| p.spec.as_ref()?.containers.iter().find_map(|c| c.image.clone()))?;
    let tag = image.rsplit_once(':').map(|(_, t)| t)?;
    let version = tag.trim_start_matches('v');
    version.split('.').next()?.parse::<u64>().ok()?;
    Some(version.to_string())
}

fn major_below_one(version: &str) -> bool {
    version.split('.').next().and_then(|m| m.parse::<u64>().ok()).is_some_and(|m| m < 1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions_below_one_are_unsupported() {
        assert!(super::major_below_one("0.8.0"));
        assert!(!super::major_below_one("1.0.0"));
        assert!(!super::major_below_one("1.20.3"));
    }
}
