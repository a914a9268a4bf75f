//! appHealth, serviceHealth, workloadHealth and namespaceHealth.

use meshlens_cluster::{ClusterState, NamespaceState, Workload};
use meshlens_health::{
    Ambient, AppHealth, DeploymentStatus, Entity, Kind, ServiceHealth, ServiceProxy, Target,
    WorkloadHealth, namespace_health, namespace_queries, object_status, proxy_health,
    proxy_queries, target_codes, target_queries, target_requests,
};
use meshlens_params::query::first;
use meshlens_query_batch::{Handle, QueryBatch};
use serde::Deserialize;

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

/// appHealth's, serviceHealth's and workloadHealth's query parameters.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HealthQuery {
    /// The window of the request rates (default 10m).
    #[serde(rename = "rateInterval", deserialize_with = "first")]
    rate_interval: Option<RateInterval>,
}

/// namespaceHealth's query parameters.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NamespaceHealthQuery {
    /// The window of the request rates (default 10m).
    #[serde(rename = "rateInterval", deserialize_with = "first")]
    rate_interval: Option<RateInterval>,
    /// Which entities: apps (the default), services or workloads.
    #[serde(rename = "type", deserialize_with = "first")]
    kind: Option<KindParam>,
}

/// A `rateInterval`: a Prometheus duration of at least one second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RateInterval(u64);

impl std::str::FromStr for RateInterval {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        meshlens_params::parse_prometheus_duration(s)
            .map(|d| d.as_secs())
            .filter(|s| *s > 0)
            .map(RateInterval)
            .ok_or("expected a duration such as 10m, 90s or 1h")
    }
}

/// A namespaceHealth `type`.
#[derive(Debug, Clone, Copy)]
struct KindParam(Kind);

impl std::str::FromStr for KindParam {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Kind::parse(s).map(KindParam).ok_or("must be one of ['app','service','workload']")
    }
}

/// `rateInterval` in seconds (default 10m), shortened to the namespace's age when the
/// namespace is younger, so a new namespace's rates are not diluted by time it did not exist.
fn rate_interval(
    ctx: &Ctx,
    requested: Option<RateInterval>,
    ns: &NamespaceState,
    now: i64,
) -> Result<u64, ApiError> {
    let ri = requested.map_or(DEFAULT_RATE_INTERVAL, |r| r.0);
    let ri = ctx.state.config.limits.check_window("rateInterval", ri)?;
    Ok(namespace_window(ri, ns, now))
}

/// The default `rateInterval`, in seconds; the background export uses it too.
pub(crate) const DEFAULT_RATE_INTERVAL: u64 = 600;

/// `ri`, shortened to the namespace's age when the namespace is younger.
pub(crate) fn namespace_window(ri: u64, ns: &NamespaceState, now: i64) -> u64 {
    let created = chrono::DateTime::parse_from_rfc3339(&ns.created_at).map(|t| t.timestamp()).ok();
    match created {
        Some(c) if now - c < ri as i64 => (now - c).max(1) as u64,
        _ => ri,
    }
}

/// The objects of a namespace health answer of `kind`, with their replica statuses.
pub(crate) fn entities(state: &ClusterState, ns_state: &NamespaceState, kind: Kind) -> Vec<Entity> {
    let ns = ns_state.name.as_str();
    match kind {
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
            .map(|w| Entity { name: w.name.clone(), statuses: None, status: Some(status_of(w)) })
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
    }
}

/// [`rate_interval`] from the query of appHealth, serviceHealth or workloadHealth. Read after
/// the objects were found, as before: a missing object is a 404 whatever the parameters.
fn object_rate_interval(ctx: &Ctx, ns: &NamespaceState, now: i64) -> Result<u64, ApiError> {
    let q: HealthQuery = ctx.query()?;
    rate_interval(ctx, q.rate_interval, ns, now)
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

/// The cluster whose telemetry a namespace-scoped operation counts: the one `clusterName`
/// names, when the instance reads several clusters (inbound `destination_cluster`, outbound
/// `source_cluster`, as Kiali v2's queries). `None` on a single-cluster instance, whose
/// queries stay as they were: older telemetry carries no cluster labels.
pub(crate) fn telemetry_cluster(ctx: &Ctx) -> Option<&str> {
    ctx.state.clusters.is_multi().then_some(ctx.cluster.name.as_str())
}

/// The cluster's ambient callers, to count each request once (`meshlens_health::Ambient`).
pub(crate) fn ambient(cluster: &ClusterState) -> Ambient {
    let mut a = Ambient::default();
    for ns in cluster.namespaces() {
        for w in ns.workloads.iter().filter(|w| w.is_ambient) {
            if w.is_waypoint {
                a.add_waypoint();
            } else {
                a.add_client(&ns.name, &w.name);
            }
        }
    }
    a
}

fn app_health(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let state = ctx.cluster.cluster.state().await?;
        let (ns, name) = (ctx.path("namespace")?, ctx.path("app")?);
        let ns_state =
            state.namespace(ns).ok_or_else(|| ApiError::not_found("namespace not found"))?;
        let apps = state.apps(ns);
        let app = apps
            .iter()
            .find(|a| a.name == name)
            .ok_or_else(|| ApiError::not_found("app not found"))?;
        let now = ctx.state.metrics.default_time();
        let ri = object_rate_interval(&ctx, ns_state, now)?;
        let domain = state.settings().identity_domain.clone();
        let mut batch = QueryBatch::new();
        let ambient = ambient(&state);
        let cluster = telemetry_cluster(&ctx);
        let requests = batch.add(target_queries(ns, cluster, Target::App(name), &ambient, ri, now));
        let services: Vec<(String, Handle)> = app
            .services
            .iter()
            .map(|svc| {
                let svc_name = svc.metadata.name.clone().unwrap_or_default();
                let handle = batch.add(proxy_queries(ns, &svc_name, &ports(svc), &domain, now));
                (svc_name, handle)
            })
            .collect();
        let answers = ctx.state.metrics.fetch(&ctx.rc, batch).await?;
        let proxy = services
            .into_iter()
            .map(|(service, handle)| {
                let p = proxy_health(answers.get(handle));
                ServiceProxy { service, inbound: p.inbound, outbound: p.outbound }
            })
            .collect();
        let deployment_statuses: Vec<DeploymentStatus> =
            app.workloads.iter().map(|w| status_of(w)).collect();
        let results = answers.get(requests);
        let status = object_status(
            ctx.state.config.health.rules(),
            ns,
            Kind::App,
            name,
            &target_codes(results, &ambient),
            &deployment_statuses,
        );
        Reply::json(&AppHealth {
            deployment_statuses,
            proxy,
            requests: target_requests(results, &ambient),
            status,
        })
    })
}

fn service_health(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let state = ctx.cluster.cluster.state().await?;
        let (ns, name) = (ctx.path("namespace")?, ctx.path("service")?);
        let ns_state =
            state.namespace(ns).ok_or_else(|| ApiError::not_found("namespace not found"))?;
        let svc =
            state.service(ns, name).ok_or_else(|| ApiError::not_found("service not found"))?;
        let now = ctx.state.metrics.default_time();
        let ri = object_rate_interval(&ctx, ns_state, now)?;
        let mut batch = QueryBatch::new();
        let ambient = ambient(&state);
        let cluster = telemetry_cluster(&ctx);
        let requests =
            batch.add(target_queries(ns, cluster, Target::Service(name), &ambient, ri, now));
        let proxy =
            batch.add(proxy_queries(ns, name, &ports(svc), &state.settings().identity_domain, now));
        let answers = ctx.state.metrics.fetch(&ctx.rc, batch).await?;
        let results = answers.get(requests);
        let codes = target_codes(results, &ambient);
        let rules = ctx.state.config.health.rules();
        Reply::json(&ServiceHealth {
            proxy: proxy_health(answers.get(proxy)),
            requests: target_requests(results, &ambient),
            status: object_status(rules, ns, Kind::Service, name, &codes, &[]),
        })
    })
}

fn workload_health(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let state = ctx.cluster.cluster.state().await?;
        let (ns, name) = (ctx.path("namespace")?, ctx.path("workload")?);
        let ns_state =
            state.namespace(ns).ok_or_else(|| ApiError::not_found("namespace not found"))?;
        let w =
            state.workload(ns, name).ok_or_else(|| ApiError::not_found("workload not found"))?;
        let now = ctx.state.metrics.default_time();
        let ri = object_rate_interval(&ctx, ns_state, now)?;
        let ambient = ambient(&state);
        let cluster = telemetry_cluster(&ctx);
        let results = ctx
            .state
            .metrics
            .query_all(
                &ctx.rc,
                target_queries(ns, cluster, Target::Workload(name), &ambient, ri, now),
            )
            .await?;
        let deployment_status = status_of(w);
        let status = object_status(
            ctx.state.config.health.rules(),
            ns,
            Kind::Workload,
            name,
            &target_codes(&results, &ambient),
            std::slice::from_ref(&deployment_status),
        );
        Reply::json(&WorkloadHealth {
            deployment_status,
            requests: target_requests(&results, &ambient),
            status,
        })
    })
}

fn namespace_health_op(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let q: NamespaceHealthQuery = ctx.query()?;
        let kind = q.kind.map_or(Kind::App, |k| k.0);
        let state = ctx.cluster.cluster.state().await?;
        let ns = ctx.path("namespace")?;
        // The spec lists 400 (not 404) for this operation.
        let ns_state =
            state.namespace(ns).ok_or_else(|| ApiError::bad_request("namespace does not exist"))?;
        let now = ctx.state.metrics.default_time();
        let ri = rate_interval(&ctx, q.rate_interval, ns_state, now)?;
        let entities = entities(&state, ns_state, kind);
        let ambient = ambient(&state);
        let queries = namespace_queries(ns, telemetry_cluster(&ctx), kind, &ambient, ri, now);
        let results = ctx.state.metrics.query_all(&ctx.rc, queries).await?;
        let rules = ctx.state.config.health.rules();
        Reply::json(&namespace_health(rules, ns, kind, entities, &results, &ambient))
    })
}

#[cfg(test)]
mod tests {
    use meshlens_params::query::parse_query;

    use super::*;

    fn refused<T: serde::de::DeserializeOwned + std::fmt::Debug>(query: &str) -> serde_json::Value {
        ApiError::from(parse_query::<T>(query).unwrap_err()).body()
    }

    #[test]
    fn a_wrong_value_is_a_400_naming_the_parameter() {
        let expected = |p: &str, what: &str| {
            serde_json::json!({
                "code": 400,
                "message": format!("invalid value for query parameter '{p}': {what}")
            })
        };
        let duration = "expected a duration such as 10m, 90s or 1h";
        assert_eq!(refused::<HealthQuery>("rateInterval=0s"), expected("rateInterval", duration));
        assert_eq!(
            refused::<NamespaceHealthQuery>("rateInterval=10m&type=pods"),
            expected("type", "must be one of ['app','service','workload']")
        );
        assert_eq!(
            refused::<NamespaceHealthQuery>("type=service&rateInterval=5x"),
            expected("rateInterval", duration)
        );
    }

    #[test]
    fn the_first_value_counts_and_unknown_parameters_are_ignored() {
        let q: NamespaceHealthQuery =
            parse_query("rateInterval=90s&rateInterval=x&type=workload&queryTime=1").unwrap();
        assert_eq!(q.rate_interval, Some(RateInterval(90)));
        assert!(matches!(q.kind, Some(KindParam(Kind::Workload))));
        let q: HealthQuery = parse_query("").unwrap();
        assert_eq!(q.rate_interval, None);
    }
}
