//! The five graph operations (spec §4.2/§4.3).
//!
//! One request: validate the parameters ([`GraphOptions::parse`]) → plan every query up
//! front (the traffic families plus each appender's declared queries) and run them all at
//! once through the metrics engine → build the graph → appenders in order → markers → JSON
//! or DOT. Appenders never do I/O; the CPU part runs on the blocking pool.

use std::sync::Arc;

use abi_stable::std_types::RResult;
use meshlens_traffic::{
    GraphFormat, GraphOptions, GraphOutput, GraphSettings, GraphTarget, appender_run_order, build_graph, finish,
    round_results, traffic_plan,
};
use plugin_api::{AppenderBox, AppenderData, AppenderInputs, MetricQuery, QueryResult};

use crate::{
    error::ApiError,
    router::{Ctx, HandlerFuture, Reply, Route},
    state::AppState,
};

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("graphNamespaces", "/namespaces/graph", graph_namespaces),
        Route::get("graphApp", "/namespaces/{namespace}/applications/{app}/graph", graph_app),
        Route::get("graphAppVersion", "/namespaces/{namespace}/applications/{app}/versions/{version}/graph", graph_app_version),
        Route::get("graphService", "/namespaces/{namespace}/services/{service}/graph", graph_service),
        Route::get("graphWorkload", "/namespaces/{namespace}/workloads/{workload}/graph", graph_workload),
    ]
}

fn graph_namespaces(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move { graph(ctx, GraphTarget::Namespaces).await })
}

fn graph_app(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let target = GraphTarget::App { namespace: ctx.path("namespace")?.into(), app: ctx.path("app")?.into() };
        graph(ctx, target).await
    })
}

fn graph_app_version(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let target = GraphTarget::AppVersion {
            namespace: ctx.path("namespace")?.into(),
            app: ctx.path("app")?.into(),
            version: ctx.path("version")?.into(),
        };
        graph(ctx, target).await
    })
}

fn graph_service(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let target = GraphTarget::Service { namespace: ctx.path("namespace")?.into(), service: ctx.path("service")?.into() };
        graph(ctx, target).await
    })
}

fn graph_workload(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let target =
            GraphTarget::Workload { namespace: ctx.path("namespace")?.into(), workload: ctx.path("workload")?.into() };
        graph(ctx, target).await
    })
}

fn settings(st: &AppState) -> GraphSettings {
    let c = &st.config.cluster;
    GraphSettings {
        mesh_namespace: c.mesh_namespace.clone(),
        app_label: c.app_label.clone(),
        version_label: c.version_label.clone(),
        identity_domain: c.identity_domain.clone(),
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

/// The request-duration histogram: configured, or detected once by the metrics engine.
async fn duration_histogram(st: &Arc<AppState>, time: i64) -> Result<(&'static str, f64), ApiError> {
    let unit = st.metrics.duration_unit(st.config.metrics.duration_histogram, time).await?;
    Ok((unit.metric(), unit.to_ms()))
}

async fn graph(ctx: Ctx, target: GraphTarget) -> Result<Reply, ApiError> {
    let st = ctx.state.clone();
    let registered: Vec<String> = st.plugins.appenders.iter().map(|c| c.name.clone()).collect();
    let opts = GraphOptions::parse(target, |k| ctx.query(k).map(str::to_string), now(), &registered, &settings(&st))
        .map_err(|e| ApiError::bad_request(e.message))?;

    let cluster = st.cluster.state().await.map_err(|e| match e.http_status() {
        503 => ApiError::unavailable(e.to_string()),
        _ => ApiError::internal(e.to_string()),
    })?;
    for ns in &opts.namespaces {
        if cluster.namespace(ns).is_none() {
            return Err(ApiError::bad_request("a requested namespace does not exist or is not accessible"));
        }
    }

    let (metric, to_ms) = duration_histogram(&st, opts.query_time).await?;
    let req = opts.graph_request(metric, to_ms);
    let order = appender_run_order(opts.appenders.as_deref(), &registered, &st.config.plugins.appenders);
    let appenders: Vec<(String, Arc<AppenderBox>)> = order
        .iter()
        .filter_map(|n| st.plugins.appenders.iter().find(|c| &c.name == n).map(|c| (c.name.clone(), c.object.clone())))
        .collect();
    let mut inputs: Vec<AppenderInputs> = Vec::with_capacity(appenders.len());
    for (name, a) in &appenders {
        match a.inputs(&req) {
            RResult::ROk(i) => inputs.push(i),
            RResult::RErr(e) => return Err(plugin_error(name, e)),
        }
    }

    // Every query of the request, sent together.
    let plan = traffic_plan(&opts);
    let mut queries: Vec<MetricQuery> = plan.iter().map(|p| p.query.clone()).collect();
    for i in &inputs {
        queries.extend(i.queries.iter().cloned());
    }
    let answers = st.metrics.query_all(queries).await?;
    let mut results: Vec<QueryResult> = answers.iter().map(|r| (**r).clone()).collect();
    round_results(&mut results);

    let mut per_appender: Vec<AppenderData> = Vec::with_capacity(inputs.len());
    let mut rest = results.split_off(plan.len().min(results.len()));
    for i in &inputs {
        let tail = rest.split_off(i.queries.len().min(rest.len()));
        let kinds: Vec<plugin_api::ClusterKind> = i.cluster.iter().copied().collect();
        let cluster_data = if kinds.is_empty() { Default::default() } else { cluster.cluster_data(&kinds, &opts.namespaces) };
        per_appender.push(AppenderData { cluster: cluster_data, results: std::mem::replace(&mut rest, tail).into_iter().collect() });
    }
    let traffic = results;

    // Build, transform and serialise off the async workers.
    tokio::task::spawn_blocking(move || -> Result<Reply, ApiError> {
        let mut g = build_graph(&opts, &plan, &traffic);
        for ((name, a), data) in appenders.iter().zip(&per_appender) {
            if let RResult::RErr(e) = a.apply(&req, data, &mut g) {
                return Err(plugin_error(name, e));
            }
        }
        finish(&opts, &mut g, &|ns| cluster.namespace(ns).is_some());
        let out = GraphOutput::new(&opts, &g);
        Ok(match opts.format {
            GraphFormat::Json => Reply::Json(out.to_json()),
            GraphFormat::Dot => Reply::Text { content_type: "text/vnd.graphviz", body: out.to_dot() },
        })
    })
    .await
    .map_err(|e| ApiError::internal(format!("graph task failed: {e}")))?
}

fn plugin_error(appender: &str, e: plugin_api::PluginError) -> ApiError {
    let mut err = ApiError::from(e);
    match &mut err {
        ApiError::BadRequest(m) | ApiError::Internal(m) | ApiError::Unavailable(m) => {
            *m = format!("appender {appender}: {m}");
        }
        _ => {}
    }
    err
}
