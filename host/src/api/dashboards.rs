//! customDashboard, appDashboard, workloadDashboard and serviceDashboard, and the `runtimes` of app details ([`app_runtimes`]).
//!
//! The meshlens-dashboards crate parses, plans and shapes; this module reads the cluster,
//! asks the template providers and runs the queries through the metrics engine.

use std::sync::Arc;

use meshlens_cluster::ClusterState;
use meshlens_dashboards::{
    AppParams, CustomParams, DashboardTarget, ProviderTemplates, RUNTIMES_ANNOTATION, Runtime,
    TemplateCatalog, custom_dashboard_plan, istio_dashboard_plan, resolve_runtimes,
};
use plugin_api::{MetricQuery, PluginError, QueryResult};

use crate::{
    api::health::telemetry_cluster,
    context::RequestContext,
    error::ApiError,
    metrics_engine::{MetricsEngine, MetricsError},
    router::{Ctx, HandlerFuture, Reply, Route},
    state::AppState,
};

pub fn routes() -> Vec<Route> {
    vec![
        Route::get(
            "customDashboard",
            "/namespaces/{namespace}/apps/{app}/customdashboard/{template}",
            custom_dashboard,
        )
        .expensive(),
        Route::get("appDashboard", "/namespaces/{namespace}/apps/{app}/dashboard", app_dashboard)
            .expensive(),
        Route::get(
            "workloadDashboard",
            "/namespaces/{namespace}/workloads/{workload}/dashboard",
            workload_dashboard,
        )
        .expensive(),
        Route::get(
            "serviceDashboard",
            "/namespaces/{namespace}/services/{service}/dashboard",
            service_dashboard,
        )
        .expensive(),
    ]
}

/// The metrics engine's answer in the plugin contract's terms (what the crate expects).
async fn run_query(
    engine: Arc<MetricsEngine>,
    rc: RequestContext,
    q: MetricQuery,
) -> Result<QueryResult, PluginError> {
    match engine.query(&rc, q).await {
        Ok(r) => Ok((*r).clone()),
        Err(e) => Err(match e {
            MetricsError::NoBackend(_) | MetricsError::Unavailable(_) => {
                PluginError::unavailable(e.to_string())
            }
            MetricsError::Timeout(_) | MetricsError::Cancelled => {
                PluginError::timeout(e.to_string())
            }
            MetricsError::BadQuery(_) => PluginError::invalid(e.to_string()),
            MetricsError::Internal(_) | MetricsError::TooLarge(_) => {
                PluginError::internal(e.to_string())
            }
        }),
    }
}

/// Every provider's templates as an app in `namespace` sees them. Provider calls are
/// synchronous (the folder provider reads files), so they run on the blocking pool.
pub async fn template_catalog(
    state: &Arc<AppState>,
    cluster: &Arc<ClusterState>,
    namespace: &str,
) -> TemplateCatalog {
    let registry = state.plugins.clone();
    let cluster = cluster.clone();
    let namespaces = vec![namespace.to_string(), cluster.settings().mesh_namespace.clone()];
    let task = tokio::task::spawn_blocking(move || {
        let mut providers = Vec::new();
        for p in &registry.dashboard_providers {
            let result = (|| {
                let tier = p.object.tier().into_result()?;
                let kinds = p.object.inputs().into_result()?;
                let data = cluster.cluster_data(&kinds, &namespaces);
                Ok::<_, PluginError>((tier, p.object.templates(&data).into_result()?))
            })();
            match result {
                Ok((tier, list)) => providers.push(ProviderTemplates {
                    provider: p.name.clone(),
                    tier,
                    templates: list.into_vec(),
                }),
                Err(e) => {
                    tracing::warn!(provider = %p.name, "dashboard provider failed; its templates are left out: {e}")
                }
            }
        }
        TemplateCatalog::new(providers)
    });
    task.await.unwrap_or_else(|e| {
        tracing::error!("dashboard template collection failed: {e}");
        TemplateCatalog::default()
    })
}

/// Checks that the namespace and the app exist: both are 400s for the dashboards.
fn check_app(cluster: &ClusterState, ns: &str, app: &str) -> Result<(), ApiError> {
    if cluster.namespace(ns).is_none() {
        return Err(ApiError::bad_request("namespace does not exist or is not visible"));
    }
    if !cluster.apps(ns).iter().any(|a| a.name == app) {
        return Err(ApiError::bad_request("app does not exist in the namespace"));
    }
    Ok(())
}

fn custom_dashboard(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let (ns, app, name) = (ctx.path("namespace")?, ctx.path("app")?, ctx.path("template")?);
        let limits = ctx.state.config.limits.params(meshlens_params::now());
        let params = CustomParams::parse_with(ctx.query_string(), &limits)?;
        let cluster = ctx.cluster.cluster.state().await?;
        check_app(&cluster, ns, app)?;
        let catalog = template_catalog(&ctx.state, &cluster, ns).await;
        let mesh_ns = cluster.settings().mesh_namespace.clone();
        let template = catalog.resolve(name, ns, &mesh_ns).ok_or_else(|| {
            ApiError::bad_request(format!(
                "dashboard template does not exist; known templates: {}",
                catalog.names(ns, &mesh_ns).join(", ")
            ))
        })?;
        let plan =
            custom_dashboard_plan(template, ns, app, &params, ctx.state.metrics.default_time());
        let engine = ctx.state.metrics.clone();
        let body = plan.execute(|q| run_query(engine.clone(), ctx.rc.clone(), q)).await?;
        Reply::json(&body)
    })
}

fn app_dashboard(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let (ns, app) = (ctx.path("namespace")?, ctx.path("app")?);
        let limits = ctx.state.config.limits.params(meshlens_params::now());
        let params = AppParams::parse_with(ctx.query_string(), &limits)?;
        let cluster = ctx.cluster.cluster.state().await?;
        check_app(&cluster, ns, app)?;
        istio_dashboard(&ctx, ns, DashboardTarget::App(app), &params).await
    })
}

/// Unknown namespaces and workloads are 400s, as for the app dashboard.
fn workload_dashboard(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let (ns, w) = (ctx.path("namespace")?, ctx.path("workload")?);
        let limits = ctx.state.config.limits.params(meshlens_params::now());
        let params = AppParams::parse_with(ctx.query_string(), &limits)?;
        let cluster = ctx.cluster.cluster.state().await?;
        if cluster.namespace(ns).is_none() {
            return Err(ApiError::bad_request("namespace does not exist or is not visible"));
        }
        if cluster.workload(ns, w).is_none() {
            return Err(ApiError::bad_request("workload does not exist in the namespace"));
        }
        istio_dashboard(&ctx, ns, DashboardTarget::Workload(w), &params).await
    })
}

/// Inbound only (`direction=outbound` is a 400): see `AppParams::parse_service_with`.
fn service_dashboard(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let (ns, svc) = (ctx.path("namespace")?, ctx.path("service")?);
        let limits = ctx.state.config.limits.params(meshlens_params::now());
        let params = AppParams::parse_service_with(ctx.query_string(), &limits)?;
        let cluster = ctx.cluster.cluster.state().await?;
        if cluster.namespace(ns).is_none() {
            return Err(ApiError::bad_request("namespace does not exist or is not visible"));
        }
        if cluster.service(ns, svc).is_none() {
            return Err(ApiError::bad_request("service does not exist in the namespace"));
        }
        istio_dashboard(&ctx, ns, DashboardTarget::Service(svc), &params).await
    })
}

/// Plans and runs Kiali's Inbound/Outbound Metrics dashboard for one target.
async fn istio_dashboard(
    ctx: &Ctx,
    ns: &str,
    target: DashboardTarget<'_>,
    params: &AppParams,
) -> Result<Reply, ApiError> {
    let now = ctx.state.metrics.default_time();
    let engine = ctx.state.metrics.clone();
    // Which request-duration histogram to chart: configured, or detected by the engine.
    let duration = engine
        .duration_unit(
            &ctx.rc,
            ctx.state.config.metrics.duration_histogram,
            params.base.query_time.unwrap_or(now),
        )
        .await?;
    let mut params = params.clone();
    params.cluster = telemetry_cluster(ctx).map(str::to_string);
    let plan = istio_dashboard_plan(ns, target, &params, duration, now);
    let body = plan.execute(|q| run_query(engine.clone(), ctx.rc.clone(), q)).await?;
    Reply::json(&body)
}

/// The `runtimes` field of app details: from the `kiali.io/runtimes` annotation of the app's
/// pods, else discovered with one metric query (cached for a minute). Never fails: a store
/// that is down gives no runtimes.
pub async fn app_runtimes(
    state: &Arc<AppState>,
    rc: &RequestContext,
    cluster: &Arc<ClusterState>,
    namespace: &str,
    app: &str,
) -> Vec<Runtime> {
    let apps = cluster.apps(namespace);
    let annotations: Vec<String> = apps
        .iter()
        .filter(|a| a.name == app)
        .flat_map(|a| a.workloads.iter().flat_map(|w| w.pods.iter()))
        .filter_map(|p| p.annotations.get(RUNTIMES_ANNOTATION).map(str::to_string))
        .collect();
    let catalog = template_catalog(state, cluster, namespace).await;
    let mesh_ns = cluster.settings().mesh_namespace.clone();
    let engine = state.metrics.clone();
    resolve_runtimes(
        annotations.iter().map(String::as_str),
        &catalog,
        namespace,
        &mesh_ns,
        app,
        state.metrics.default_time(),
        &state.runtimes,
        |q| run_query(engine, rc.clone(), q),
    )
    .await
}

/// Fills the `runtimes` of an appDetails payload (what `apps::app_details` calls).
pub async fn fill_runtimes(
    state: &Arc<AppState>,
    rc: &RequestContext,
    cluster: &Arc<ClusterState>,
    namespace: &str,
    app: &str,
    details: &mut meshlens_cluster::payload::AppDetails,
) {
    details.runtimes = app_runtimes(state, rc, cluster, namespace, app)
        .await
        .into_iter()
        .map(|r| meshlens_cluster::payload::Runtime {
            name: r.name,
            dashboard_refs: r
                .dashboard_refs
                .into_iter()
                .map(|d| meshlens_cluster::payload::DashboardRef {
                    template: d.template,
                    title: d.title,
                })
                .collect(),
        })
        .collect();
}
