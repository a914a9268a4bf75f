//! The five graph operations (spec §4.2/§4.3).
//!
//! One request: parse ([`GraphOptions::parse`]) → plan (one query batch: the traffic plan
//! and each appender's declared inputs, each under its own handle) → fetch (the whole batch
//! at once through the metrics engine) → build the graph, appenders in order, markers →
//! respond with JSON or DOT. Appenders never do I/O; the CPU part runs on the CPU pool.

use std::{
    collections::{BTreeMap, HashSet},
    sync::Arc,
    time::Instant,
};

use abi_stable::std_types::{RResult, RVec};
use meshlens_cluster::ClusterState;
use meshlens_query_batch::{Handle, QueryBatch, owned};
use meshlens_traffic::{
    AmbientWorkloads, GraphFormat, GraphOptions, GraphOutput, GraphScope, GraphSettings,
    GraphTarget, appender_run_order, build_graph_until, finish, names_only, round_results,
    traffic_plan,
};
use plugin_api::{AppenderBox, AppenderData, ClusterKind, QueryResult};

use crate::{
    dropper::DropLater,
    error::ApiError,
    limits::Scope,
    router::{Ctx, HandlerFuture, Reply, Route},
    state::AppState,
    telemetry,
};

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("graphNamespaces", "/namespaces/graph", graph_namespaces).expensive(),
        Route::get("graphApp", "/namespaces/{namespace}/applications/{app}/graph", graph_app)
            .expensive(),
        Route::get(
            "graphAppVersion",
            "/namespaces/{namespace}/applications/{app}/versions/{version}/graph",
            graph_app_version,
        )
        .expensive(),
        Route::get(
            "graphService",
            "/namespaces/{namespace}/services/{service}/graph",
            graph_service,
        )
        .expensive(),
        Route::get(
            "graphWorkload",
            "/namespaces/{namespace}/workloads/{workload}/graph",
            graph_workload,
        )
        .expensive(),
    ]
}

fn graph_namespaces(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move { graph(ctx, GraphTarget::Namespaces).await })
}

fn graph_app(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let target = GraphTarget::App {
            namespace: ctx.path("namespace")?.into(),
            app: ctx.path("app")?.into(),
        };
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
        let target = GraphTarget::Service {
            namespace: ctx.path("namespace")?.into(),
            service: ctx.path("service")?.into(),
        };
        graph(ctx, target).await
    })
}

fn graph_workload(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let target = GraphTarget::Workload {
            namespace: ctx.path("namespace")?.into(),
            workload: ctx.path("workload")?.into(),
        };
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

/// The request-duration histogram: configured, or detected once by the metrics engine.
async fn duration_histogram(
    st: &Arc<AppState>,
    time: i64,
) -> Result<(&'static str, f64), ApiError> {
    let unit = st.metrics.duration_unit(st.config.metrics.duration_histogram, time).await?;
    Ok((unit.metric(), unit.to_ms()))
}

async fn graph(mut ctx: Ctx, target: GraphTarget) -> Result<Reply, ApiError> {
    let st = ctx.state.clone();
    let registered: Vec<String> = st.plugins.appenders.iter().map(|c| c.name.clone()).collect();
    // Without `queryTime`: now, aligned to the answer cache's TTL so viewers share answers.
    let now = st.metrics.default_time();
    // `queryTime`'s skew is checked against the clock itself, not the aligned `now`.
    let limits = st.config.limits.graph(meshlens_params::now());
    let mut opts = GraphOptions::parse_limited(
        target,
        ctx.query_string(),
        now,
        &registered,
        &settings(&st),
        &limits,
    )
    .map_err(|e| ApiError::bad_request(e.message))?;
    // hide, find, focus and hops (issue #34): read before anything is queried.
    let view =
        GraphScope::parse(ctx.query_string()).map_err(|e| ApiError::bad_request(e.message))?;
    // Every requested namespace must be visible, or the whole request is refused.
    let requested: Vec<&str> = opts.namespaces.iter().map(String::as_str).collect();
    ctx.access.require(&requested).await?;

    let cluster = st.cluster.state().await?;
    for ns in &opts.namespaces {
        if cluster.namespace(ns).is_none() {
            return Err(ApiError::bad_request(
                "a requested namespace does not exist or is not accessible",
            ));
        }
    }

    opts.ambient = Arc::new(ambient_workloads(&cluster));

    // Plan: the traffic queries and each appender's declared inputs, in one batch.
    let (metric, to_ms) = duration_histogram(&st, opts.query_time).await?;
    let req = opts.graph_request(metric, to_ms);
    let mut order =
        appender_run_order(opts.appenders.as_deref(), &registered, &st.config.plugins.appenders);
    // The `ambient` appender hides waypoints; `waypoints=true` keeps them, so it is left
    // out. (Kiali's appender reads the parameter itself; ours cannot: `GraphRequest` is
    // part of the plugin ABI, and a new field there would refuse every 0.2 plugin.)
    if opts.waypoints {
        order.retain(|n| n != AMBIENT_APPENDER);
    }
    let appenders: Vec<(String, Arc<AppenderBox>)> = order
        .iter()
        .filter_map(|n| {
            st.plugins
                .appenders
                .iter()
                .find(|c| &c.name == n)
                .map(|c| (c.name.clone(), c.object.clone()))
        })
        .collect();
    let plan = traffic_plan(&opts);
    let mut batch = QueryBatch::new();
    let traffic_handle = batch.add(plan.iter().map(|p| p.query.clone()));
    let mut appender_inputs: Vec<(Handle, RVec<ClusterKind>)> = Vec::with_capacity(appenders.len());
    for (name, a) in &appenders {
        let inputs = a.inputs(&req).into_result().map_err(|e| plugin_error(name, e))?;
        appender_inputs.push((batch.add(inputs.queries), inputs.cluster));
    }

    // Fetch: every query of the request, sent together.
    let fetch_started = Instant::now();
    let mut answers = st.metrics.fetch(batch).await?;
    telemetry::metrics().graph_phase("fetch", "", fetch_started.elapsed());
    let traffic = answers.take(traffic_handle);
    let hidden = hidden_namespaces(&ctx, &traffic).await?;

    // Prepare, build, transform and serialise on the CPU pool, each phase timed; each step first
    // checks that the request is still wanted (not timed out, client still there).
    let slot = ctx.take_slot();
    let scope = ctx.scope.clone();
    st.cpu
        .run(&scope, slot, move |scope| -> Result<Reply, ApiError> {
            let m = telemetry::metrics();
            // The answers and the graph are freed on the dropper thread, however the job
            // ends: freeing 100,000 series inline kept the pool busy longer than stopping.
            let traffic = DropLater::new(traffic);
            let mut answers = DropLater::new(answers);
            // The appenders' inputs and the graph meet only at the appenders, so they are
            // made side by side: preparing is mostly copying answers, building mostly hashing.
            let prepare = || {
                let t = Instant::now();
                // The appenders' owned copies and cluster data are CPU work too: here, not on
                // the async workers that answer the cheap operations.
                let mut per_appender: Vec<AppenderData> = Vec::with_capacity(appender_inputs.len());
                for (handle, kinds) in appender_inputs {
                    // Once the request is gone the rest is not copied (checked after the join).
                    if scope.is_done() {
                        return per_appender;
                    }
                    // Appenders get their answers as owned values across the ABI, rounded as
                    // the traffic values are; an answer is moved, not copied, unless another
                    // owner shares it.
                    let mut results: Vec<QueryResult> =
                        answers.take(handle).into_iter().map(owned).collect();
                    round_results(&mut results);
                    let cluster = if kinds.is_empty() {
                        Default::default()
                    } else {
                        cluster.cluster_data(&kinds, &opts.namespaces)
                    };
                    per_appender.push(AppenderData { cluster, results: results.into() });
                }
                m.graph_phase("prepare", "", t.elapsed());
                per_appender
            };
            // Asked every 1,024 series, nodes or edges: a long build or output stops soon
            // after its request is gone.
            let stop = || scope.is_done();
            let build = || {
                let t = Instant::now();
                let g = build_graph_until(&opts, &plan, traffic.as_slice(), &stop);
                // A build that stopped is not a build's time.
                if g.is_ok() {
                    m.graph_phase("build", "", t.elapsed());
                }
                g
            };
            let (per_appender, g) = rayon::join(prepare, build);
            let per_appender = DropLater::new(per_appender);
            let mut g = DropLater::new(g.map_err(|_| Scope::gone())?);
            // Also when only the preparing stopped: its inputs may be short.
            scope.check()?;
            for ((name, a), data) in appenders.iter().zip(per_appender.iter()) {
                scope.check()?;
                let t = Instant::now();
                // An appender that checks the flag stops mid-way when the request goes.
                let applied = a.apply_cancellable(&req, data, &mut g, scope.plugin_cancel());
                m.graph_phase("appender", name, t.elapsed());
                if let RResult::RErr(e) = applied {
                    // Stopped because the request is gone: not the appender's failure.
                    scope.check()?;
                    return Err(plugin_error(name, e));
                }
            }
            scope.check()?;
            let t = Instant::now();
            // Nodes the appenders added (unused workloads) get their ambient flags too.
            opts.ambient.mark(&mut g);
            finish(&opts, &mut g, &|ns| cluster.namespace(ns).is_some() && !hidden.contains(ns));
            names_only(&mut g, &|ns| hidden.contains(ns));
            scope.check()?;
            // After the appenders, on the whole graph's ids and totals, so kept elements are
            // the full graph's; what the scope drops is not prepared.
            let out = GraphOutput::scoped_until(&opts, &g, &view, &stop)
                .map_err(|_| Scope::gone())?
                .map_err(|e| ApiError::bad_request(e.message))?;
            let reply = match opts.format {
                GraphFormat::Json => {
                    Reply::Json(out.to_json_until(&stop).map_err(|_| Scope::gone())?)
                }
                GraphFormat::Dot => {
                    Reply::Text { content_type: "text/vnd.graphviz", body: out.to_dot() }
                }
            };
            m.graph_phase("output", "", t.elapsed());
            m.graph_nodes.observe(g.nodes.len() as f64);
            m.graph_edges.observe(g.edges.len() as f64);
            Ok(reply)
        })
        .await
}

/// The name of the bundled appender that hides waypoints.
const AMBIENT_APPENDER: &str = "ambient";

/// The cluster's ambient workloads, waypoints and all-ambient apps and versions, for the
/// graph build. Only namespaces with an ambient workload are looked at closely.
fn ambient_workloads(cluster: &ClusterState) -> AmbientWorkloads {
    let mut a = AmbientWorkloads::default();
    let s = cluster.settings();
    for ns in cluster.namespaces() {
        if !ns.workloads.iter().any(|w| w.is_ambient) {
            continue;
        }
        let mut apps: BTreeMap<&str, bool> = BTreeMap::new();
        let mut versions: BTreeMap<(&str, &str), bool> = BTreeMap::new();
        for w in &ns.workloads {
            if w.is_waypoint {
                a.add_waypoint(&ns.name, &w.name);
            } else if w.is_ambient {
                a.add_workload(&ns.name, &w.name);
            }
            if let Some(app) = w.label(&s.app_label) {
                *apps.entry(app).or_insert(true) &= w.is_ambient;
                if let Some(v) = w.label(&s.version_label) {
                    *versions.entry((app, v)).or_insert(true) &= w.is_ambient;
                }
            }
        }
        for (app, _) in apps.into_iter().filter(|(_, all)| *all) {
            a.add_app(&ns.name, app);
        }
        for ((app, v), _) in versions.into_iter().filter(|(_, all)| *all) {
            a.add_version(&ns.name, app, v);
        }
    }
    a
}

/// Namespaces the traffic reaches that the caller may not see: their nodes keep only their
/// names ([`names_only`]). Empty for callers who see everything.
async fn hidden_namespaces(
    ctx: &Ctx,
    traffic: &[Arc<QueryResult>],
) -> Result<HashSet<String>, ApiError> {
    if !ctx.access.restricted() {
        return Ok(HashSet::new());
    }
    let mut seen: HashSet<&str> = HashSet::new();
    for series in traffic.iter().flat_map(|r| r.series.iter()) {
        for (_, ns) in series.labels.iter().filter(|(n, _)| n.ends_with("_namespace")) {
            seen.insert(ns);
        }
    }
    let names: Vec<&str> =
        seen.into_iter().filter(|n| !n.is_empty() && *n != meshlens_traffic::UNKNOWN).collect();
    let visible = ctx.access.visible(&names).await?;
    Ok(names.into_iter().zip(visible).filter(|(_, v)| !v).map(|(n, _)| n.to_string()).collect())
}

fn plugin_error(appender: &str, e: plugin_api::PluginError) -> ApiError {
    telemetry::metrics().plugin_failure(appender, e.kind == plugin_api::ErrorKind::Panic);
    let mut err = ApiError::from(e);
    match &mut err {
        ApiError::BadRequest(m) | ApiError::Internal(m) | ApiError::Unavailable(m) => {
            *m = format!("appender {appender}: {m}");
        }
        _ => {}
    }
    err
}
