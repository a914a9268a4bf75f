//! appHealth, serviceHealth, workloadHealth and namespaceHealth.

use meshlens_cluster::{NamespaceState, Workload};
use meshlens_health::{
    AppHealth, DeploymentStatus, Entity, Kind, ServiceHealth, ServiceProxy, Target, WorkloadHealth,
    namespace_health, namespace_queries, proxy_health, proxy_queries, target_queries,
    target_requests,
};
use meshlens_query_batch::{Handle, QueryBatch};

use crate::{
    error::ApiError,
    router::{Ctx, HandlerFuture, Reply, Route},
};

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("appHealth", "/namespaces/{namespace}/apps/{app}/health", app_health)
            .expensive(),
        Route::get(
            "serviceHealth",
            "/namespaces/{namespace}/services/{service}/health",
            service_health,
        )
        .expensive(),
        Route::get(
            "workloadHealth",
            "/namespaces/{namespace}/workloads/{workload}/health",
            workload_health,
        )
        .expensive(),
        Route::get("namespaceHealth", "/namespaces/{namespace}/health", namespace_health_op)
            .expensive(),
    ]
}

/// `rateInterval` in seconds (default 10m), shortened to the namespace's age when the
/// namespace is younger, so a new namespace's rates are not diluted by time it did not exist.
fn rate_interval(ctx: &Ctx, ns: &NamespaceState, now: i64) -> Result<u64, ApiError> {
    let text = ctx.query("rateInterval").unwrap_or("10m");
    let ri = meshlens_params::parse_prometheus_duration(text)
        .map(|d| d.as_secs())
        .filter(|s| *s > 0)
        .ok_or_else(|| {
            ApiError::bad_param("rateInterval", "expected a duration such as 10m, 90s or 1h")
        })?;
    let ri = ctx.state.config.limits.check_window("rateInterval", ri)?;
    let created = chrono::DateTime::parse_from_rfc3339(&ns.created_at).map(|t| t.timestamp()).ok();
    Ok(match created {
        Some(c) if now - c < ri as i64 => (now - c).max(1) as u64,
        _ => ri,
    })
}

fn status_of(w: &Workload) -> DeploymentStatus {
    DeploymentStatus {
        name: w.name.clone(),
        replicas: i64::from(w.replicas),
        available: i64::from(w.available_replicas),
    }
}

fn ports(svc: &meshlens_cluster::records::ServiceRecord) -> Vec<i32> {
    svc.spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .map(|ps| ps.iter().map(|p| p.port).collect())
        .unwrap_or_default()
}

fn app_health(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let state = ctx.state.cluster.state().await?;
        let (ns, name) = (ctx.path("namespace")?, ctx.path("app")?);
        let ns_state =
            state.namespace(ns).ok_or_else(|| ApiError::not_found("namespace not found"))?;
        let apps = state.apps(ns);
        let app = apps
            .iter()
            .find(|a| a.name == name)
            .ok_or_else(|| ApiError::not_found("app not found"))?;
        let now = ctx.state.metrics.default_time();
        let ri = rate_interval(&ctx, ns_state, now)?;
        let domain = state.settings().identity_domain.clone();
        let mut batch = QueryBatch::new();
        let requests = batch.add(target_queries(ns, Target::App(name), ri, now));
        let services: Vec<(String, Handle)> = app
            .services
            .iter()
            .map(|svc| {
                let svc_name = svc.metadata.name.clone().unwrap_or_default();
                let handle = batch.add(proxy_queries(ns, &svc_name, &ports(svc), &domain, now));
                (svc_name, handle)
            })
            .collect();
        let answers = ctx.state.metrics.fetch(batch).await?;
        let proxy = services
            .into_iter()
            .map(|(service, handle)| {
                let p = proxy_health(answers.get(handle));
                ServiceProxy { service, inbound: p.inbound, outbound: p.outbound }
            })
            .collect();
        Reply::json(&AppHealth {
            deployment_statuses: app.workloads.iter().map(|w| status_of(w)).collect(),
            proxy,
            requests: target_requests(answers.get(requests)),
        })
    })
}

fn service_health(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let state = ctx.state.cluster.state().await?;
        let (ns, name) = (ctx.path("namespace")?, ctx.path("service")?);
        let ns_state =
            state.namespace(ns).ok_or_else(|| ApiError::not_found("namespace not found"))?;
        let svc =
            state.service(ns, name).ok_or_else(|| ApiError::not_found("service not found"))?;
        let now = ctx.state.metrics.default_time();
        let ri = rate_interval(&ctx, ns_state, now)?;
        let mut batch = QueryBatch::new();
        let requests = batch.add(target_queries(ns, Target::Service(name), ri, now));
        let proxy =
            batch.add(proxy_queries(ns, name, &ports(svc), &state.settings().identity_domain, now));
        let answers = ctx.state.metrics.fetch(batch).await?;
        Reply::json(&ServiceHealth {
            proxy: proxy_health(answers.get(proxy)),
            requests: target_requests(answers.get(requests)),
        })
    })
}

fn workload_health(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let state = ctx.state.cluster.state().await?;
        let (ns, name) = (ctx.path("namespace")?, ctx.path("workload")?);
        let ns_state =
            state.namespace(ns).ok_or_else(|| ApiError::not_found("namespace not found"))?;
        let w =
            state.workload(ns, name).ok_or_else(|| ApiError::not_found("workload not found"))?;
        let now = ctx.state.metrics.default_time();
        let ri = rate_interval(&ctx, ns_state, now)?;
        let results = ctx
            .state
            .metrics
            .query_all(target_queries(ns, Target::Workload(name), ri, now))
            .await?;
        Reply::json(&WorkloadHealth {
            deployment_status: status_of(w),
            requests: target_requests(&results),
        })
    })
}

fn namespace_health_op(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let kind = match ctx.query("type") {
            None => Kind::App,
            Some(t) => Kind::parse(t).ok_or_else(|| {
                ApiError::bad_param("type", "must be one of ['app','service','workload']")
            })?,
        };
        let state = ctx.state.cluster.state().await?;
        let ns = ctx.path("namespace")?;
        // The spec lists 400 (not 404) for this operation.
        let ns_state =
            state.namespace(ns).ok_or_else(|| ApiError::bad_request("namespace does not exist"))?;
        let now = ctx.state.metrics.default_time();
        let ri = rate_interval(&ctx, ns_state, now)?;
        let entities: Vec<Entity> = match kind {
            Kind::App => state
                .apps(ns)
                .iter()
                .map(|a| Entity {
                    name: a.name.clone(),
                    statuses: Some(a.workloads.iter().map(|w| status_of(w)).collect()),
                    status: None,
                })
                .collect(),
            Kind::Workload => ns_state
                .workloads
                .iter()
                .map(|w| Entity {
                    name: w.name.clone(),
                    statuses: None,
                    status: Some(status_of(w)),
                })
                .collect(),
            Kind::Service => ns_state
                .services
                .iter()
                .map(|s| Entity {
                    name: s.metadata.name.clone().unwrap_or_default(),
                    statuses: None,
                    status: None,
                })
                .collect(),
        };
        let results = ctx.state.metrics.query_all(namespace_queries(ns, kind, ri, now)).await?;
        Reply::json(&namespace_health(kind, entities, &results))
    })
}
