//! The graph pipeline, one function for the five graph operations, the benchmark and tests:
//! request → plan (one query batch: the traffic plan and each appender's declared inputs,
//! each under its own handle) → fetch (the whole batch at once through the metrics engine)
//! → build → appenders in order → markers → scope (hide, find, focus) → output.
//! Appenders never do I/O; the CPU part ([`render`]) runs on the CPU pool.

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant},
};

use abi_stable::std_types::{RResult, RVec};
use meshlens_cluster::ClusterState;
use meshlens_query_batch::{Answers, Handle, QueryBatch};
use meshlens_telemetry::Metrics;
use meshlens_traffic::{
    AmbientWorkloads, GraphFormat, GraphOptions, GraphOutput, GraphScope, GraphSettings,
    GraphTarget, PlannedQuery, appender_run_order, build_graph_until, finish, names_only,
    traffic_plan,
};
use plugin_api::{AppenderBox, ClusterData, ClusterKind, Graph, GraphRequest, QueryResult};
use tokio::sync::OwnedSemaphorePermit;

use super::graph_inputs::{Inputs, appender_inputs};
use super::graph_rights::{Caller, Hidden, Rights};
use crate::{
    context::RequestContext, dropper::DropLater, error::ApiError, limits::Scope, state::AppState,
};

/// A graph, as its format asked.
#[derive(Debug)]
pub enum GraphAnswer {
    Json(Vec<u8>),
    /// Graphviz text (`format=dot`).
    Dot(String),
}

/// Planned and fetched: everything the CPU part of one graph needs besides the traffic
/// answers and the appenders' inputs (both handed to [`render`]).
pub struct Job {
    pub opts: GraphOptions,
    pub plan: Vec<PlannedQuery>,
    /// What appenders are told about the request.
    pub req: GraphRequest,
    /// The appenders to run, in order.
    pub appenders: Vec<(String, Arc<AppenderBox>)>,
    /// hide, find, focus and hops.
    pub view: GraphScope,
    /// (cluster, namespace) pairs the traffic reaches that the caller may not see in that
    /// cluster: names only.
    pub hidden: Hidden,
}

/// Where each phase's time goes (`phase`, appender name or "", time).
pub type PhaseSink<'a> = &'a (dyn Fn(&'static str, &str, Duration) + Sync);

/// One graph operation, whole: parse and check the request, authorize its namespaces, plan,
/// fetch, then [`render`] on the CPU pool. `slot` (the admission slot) is held until the CPU
/// work has stopped.
pub async fn graph(
    st: &Arc<AppState>,
    rc: &RequestContext,
    caller: &Caller<'_>,
    target: GraphTarget,
    query: &str,
    slot: Option<OwnedSemaphorePermit>,
) -> Result<GraphAnswer, ApiError> {
    let (mut opts, view) = parse(st, target, query)?;
    let clusters = graph_clusters(st).await?;
    // The caller is reviewed in each cluster read (super::graph_rights); every requested
    // namespace must be visible in one of them, or the whole request is refused.
    let mut rights = Rights::review(st, caller, &clusters).await?;
    rights.require(&opts.namespaces).await?;
    // `namespaces=bookinfo` is bookinfo in every cluster: it must exist in one of them.
    let exists = |ns: &str| clusters.iter().any(|(_, c)| c.namespace(ns).is_some());
    if opts.namespaces.iter().any(|ns| !exists(ns)) {
        return Err(ApiError::bad_request(
            "a requested namespace does not exist or is not accessible",
        ));
    }
    // Ambient workloads are the home cluster's (the first).
    opts.ambient =
        Arc::new(clusters.first().map(|(_, c)| ambient_workloads(c)).unwrap_or_default());
    let planned = plan(st, rc, opts).await?;

    // Fetch: every query of the request, sent together.
    let fetch_started = Instant::now();
    let mut answers = st.metrics.fetch(rc, planned.batch).await?;
    st.telemetry.graph_phase("fetch", "", fetch_started.elapsed());
    let traffic = answers.take(planned.traffic);
    let hidden = rights.hidden(&traffic, &planned.opts.namespaces).await?;
    let job = Job {
        opts: planned.opts,
        plan: planned.plan,
        req: planned.req,
        appenders: planned.appenders,
        view,
        hidden,
    };
    let key = cache_key(&job);
    if let Some(key) = &key
        && let Some(g) = st.graph_cache.get(key, &clusters)
    {
        // The same graph, finished before: only its scope and output are this request's.
        let m = st.telemetry.clone();
        return st.cpu.run(rc.scope(), slot, move |scope| from_cache(job, &g, scope, &m)).await;
    }
    let inputs = planned.inputs;
    let state = st.clone();
    st.cpu
        .run(rc.scope(), slot, move |scope| {
            let models: Vec<Arc<ClusterState>> = clusters.iter().map(|(_, c)| c.clone()).collect();
            let m = state.telemetry.clone();
            let (answer, graph) = on_pool(job, traffic, answers, inputs, clusters, scope, &m)?;
            if let Some(key) = key {
                state.graph_cache.put(key, models, Arc::new(graph));
            }
            Ok(answer)
        })
        .await
}

/// What the finished graph of `job` depends on besides the cluster models (compared by
/// identity in the cache): the options but the scope, the duration histogram, the caller's
/// hidden (cluster, namespace) pairs. `None` for a query time not yet past, whose answers are not final
/// (the answer cache does not keep them either).
fn cache_key(job: &Job) -> Option<String> {
    if job.opts.query_time > meshlens_params::now() {
        return None;
    }
    // The ambient workloads come from the cluster models, which are part of the key already.
    let mut opts = job.opts.clone();
    opts.ambient = Default::default();
    // The format is the output's business only: one finished graph answers JSON and DOT.
    opts.format = GraphFormat::Json;
    // `Hidden` is ordered: the same pairs give the same key.
    let hidden = &job.hidden;
    Some(format!("{opts:?}|{}|{}|{hidden:?}", job.req.duration_metric, job.req.duration_to_ms))
}

/// A finished graph from the cache, scoped and written for this request.
fn from_cache(job: Job, g: &Graph, scope: &Scope, m: &Metrics) -> Result<GraphAnswer, ApiError> {
    let job = DropLater::new(job);
    let t = Instant::now();
    let stop = || scope.is_done();
    let answer = output(&job, g, &stop)?;
    m.graph_phase("output", "", t.elapsed());
    m.graph_nodes.observe(g.nodes.len() as f64);
    m.graph_edges.observe(g.edges.len() as f64);
    Ok(answer)
}

/// The clusters whose models a graph reads, home first, each with the name its telemetry
/// gives it: the home cluster, and every remote that can be read now. A remote that is lost
/// or not yet synced is left out at once (never waited for), so it cannot slow or fail the
/// graph of the others; its nodes still come from the telemetry, judged without its objects.
async fn graph_clusters(st: &AppState) -> Result<Vec<(String, Arc<ClusterState>)>, ApiError> {
    let home = st.clusters.home();
    let mut out = vec![(home.name.clone(), home.cluster.state().await?)];
    for m in st.clusters.members().iter().filter(|m| m.remote) {
        match m.cluster.state_if_reachable().await {
            Ok(state) => out.push((m.name.clone(), state)),
            Err(e) => {
                tracing::debug!(cluster = %m.name, error = %e, "graph without this cluster's objects")
            }
        }
    }
    Ok(out)
}

/// The cluster data of `kinds` over every cluster, each item naming its cluster.
fn cluster_data(
    clusters: &[(String, Arc<ClusterState>)],
    kinds: &[ClusterKind],
    namespaces: &[String],
) -> ClusterData {
    let mut all = clusters.iter().map(|(name, c)| c.cluster_data_in(name, kinds, namespaces));
    let mut data = all.next().unwrap_or_default();
    for more in all {
        data.workloads.extend(more.workloads);
        data.services.extend(more.services);
        data.objects.extend(more.objects);
    }
    data
}

/// Parses the graph parameters and the scope (hide, find, focus, hops): 400s before
/// anything is queried.
fn parse(
    st: &AppState,
    target: GraphTarget,
    query: &str,
) -> Result<(GraphOptions, GraphScope), ApiError> {
    let registered: Vec<String> = st.plugins.appenders.iter().map(|c| c.name.clone()).collect();
    // Without `queryTime`: now, aligned to the answer cache's TTL so viewers share answers.
    let now = st.metrics.default_time();
    // `queryTime`'s skew is checked against the clock itself, not the aligned `now`.
    let limits = st.config.limits.graph(meshlens_params::now());
    let opts = GraphOptions::parse_limited(target, query, now, &registered, &settings(st), &limits)
        .map_err(|e| ApiError::bad_request(e.message))?;
    // hide, find, focus and hops (issue #34): read before anything is queried.
    let view = GraphScope::parse(query).map_err(|e| ApiError::bad_request(e.message))?;
    Ok((opts, view))
}

fn settings(st: &AppState) -> GraphSettings {
    let c = &st.config.cluster;
    GraphSettings {
        mesh_namespace: c.mesh_namespace.clone(),
        app_label: c.app_label.clone(),
        version_label: c.version_label.clone(),
        identity_domain: c.identity_domain.clone(),
        home_cluster: c.name.clone(),
    }
}

/// One request's query batch and what is to be done with its answers.
struct Planned {
    opts: GraphOptions,
    plan: Vec<PlannedQuery>,
    req: GraphRequest,
    batch: QueryBatch,
    traffic: Handle,
    appenders: Vec<(String, Arc<AppenderBox>)>,
    /// Each appender's answers and the cluster kinds it declared.
    inputs: Vec<(Handle, RVec<ClusterKind>)>,
}

/// Plan: the traffic queries and each appender's declared inputs, in one batch.
async fn plan(
    st: &Arc<AppState>,
    rc: &RequestContext,
    opts: GraphOptions,
) -> Result<Planned, ApiError> {
    // The request-duration histogram: configured, or detected once by the metrics engine.
    let unit =
        st.metrics.duration_unit(rc, st.config.metrics.duration_histogram, opts.query_time).await?;
    let req = opts.graph_request(unit.metric(), unit.to_ms());
    let appenders = appenders(st, &opts);
    let plan = traffic_plan(&opts);
    let mut batch = QueryBatch::new();
    let traffic = batch.add(plan.iter().map(|p| p.query.clone()));
    let mut inputs = Vec::with_capacity(appenders.len());
    for (name, a) in &appenders {
        let declared =
            a.inputs(&req).into_result().map_err(|e| plugin_error(&st.telemetry, name, e))?;
        inputs.push((batch.add(declared.queries), declared.cluster));
    }
    Ok(Planned { opts, plan, req, batch, traffic, appenders, inputs })
}

/// The name of the bundled appender that hides waypoints.
const AMBIENT_APPENDER: &str = "ambient";

/// The loaded appenders the request runs, in order.
fn appenders(st: &AppState, opts: &GraphOptions) -> Vec<(String, Arc<AppenderBox>)> {
    let registered: Vec<String> = st.plugins.appenders.iter().map(|c| c.name.clone()).collect();
    let mut order =
        appender_run_order(opts.appenders.as_deref(), &registered, &st.config.plugins.appenders);
    // The `ambient` appender hides waypoints; `waypoints=true` keeps them, so it is left
    // out. (Kiali's appender reads the parameter itself; ours cannot: `GraphRequest` is
    // part of the plugin ABI, and a new field there would refuse every 0.2 plugin.)
    if opts.waypoints {
        order.retain(|n| n != AMBIENT_APPENDER);
    }
    order
        .iter()
        .filter_map(|n| {
            st.plugins
                .appenders
                .iter()
                .find(|c| &c.name == n)
                .map(|c| (c.name.clone(), c.object.clone()))
        })
        .collect()
}

/// The CPU part of [`graph`]: the appenders' inputs are prepared from the answers once the
/// graph is built; big values are freed on the dropper thread however the job ends (freeing
/// 100,000 series inline kept the pool busy longer than stopping).
fn on_pool(
    job: Job,
    traffic: Vec<Arc<QueryResult>>,
    answers: Answers,
    inputs: Vec<(Handle, RVec<ClusterKind>)>,
    clusters: Vec<(String, Arc<ClusterState>)>,
    scope: &Scope,
    m: &Metrics,
) -> Result<(GraphAnswer, DropLater<Graph>), ApiError> {
    let job = DropLater::new(job);
    let mut answers = DropLater::new(answers);
    let namespaces = &job.opts.namespaces;
    let prepare = || {
        let t = Instant::now();
        // The appenders' owned copies and cluster data are CPU work too: here, not on the
        // async workers that answer the cheap operations.
        let taken = inputs.into_iter().map(|(h, kinds)| (answers.take(h), kinds)).collect();
        let data = |kinds: &[ClusterKind]| cluster_data(&clusters, kinds, namespaces);
        // Once the request is gone the rest is not copied (checked after preparing).
        let Some(per_appender) = appender_inputs(taken, &data, scope) else {
            return Inputs::default();
        };
        m.graph_phase("prepare", "", t.elapsed());
        per_appender
    };
    let exists = |ns: &str| clusters.iter().any(|(_, c)| c.namespace(ns).is_some());
    let phase = |p: &'static str, name: &str, took: Duration| m.graph_phase(p, name, took);
    let (answer, graph) = render(&job, traffic, prepare, &exists, scope, &phase, m)?;
    m.graph_nodes.observe(graph.nodes.len() as f64);
    m.graph_edges.observe(graph.edges.len() as f64);
    Ok((answer, graph))
}

/// Build → appenders → markers → names-only → output → scope → JSON or DOT, with the
/// graph as built (before the scope) for whoever wants to look at it. The graph is built
/// from `traffic` (the traffic plan's answers, in plan order), which is then let go;
/// `prepare` makes the appenders' inputs after that; `exists` says which namespaces the
/// cluster has; an appender's failure is counted in `telemetry`. Every step first checks
/// that the request is still wanted.
pub fn render(
    job: &Job,
    traffic: Vec<Arc<QueryResult>>,
    prepare: impl FnOnce() -> Inputs + Send,
    exists: &(dyn Fn(&str) -> bool + Sync),
    scope: &Scope,
    phase: PhaseSink<'_>,
    telemetry: &Metrics,
) -> Result<(GraphAnswer, DropLater<Graph>), ApiError> {
    // Asked every 1,024 series, nodes or edges: a long build or output stops soon after
    // its request is gone.
    let stop = || scope.is_done();
    let t = Instant::now();
    let opts = &job.opts;
    let g = build_graph_until(opts, &job.plan, traffic.as_slice(), &stop);
    let took = t.elapsed();
    // Whether or not the build finished: big answers are not freed inline.
    release(traffic);
    let mut g = DropLater::new(g.map_err(|_| Scope::gone())?);
    phase("build", "", took);
    // After the build, not beside it: an appender asking the traffic's own queries (health)
    // then gets those answers moved rather than copied (on the 1,000-namespace graph of
    // 30,000 edges, copies of tens of MB, made beside the build that read the originals).
    let mut per_appender = DropLater::new(prepare());
    // Also when only the preparing stopped: its inputs may be short.
    scope.check()?;
    for (i, (name, a)) in job.appenders.iter().enumerate() {
        scope.check()?;
        // Short only when preparing stopped, which the check above has caught.
        let Some(data) = per_appender.take_turn(i) else { break };
        let t = Instant::now();
        // An appender that checks the flag stops mid-way when the request goes.
        let applied = a.apply_cancellable(&job.req, data, &mut g, scope.plugin_cancel());
        phase("appender", name, t.elapsed());
        per_appender.done(i);
        if let RResult::RErr(e) = applied {
            // Stopped because the request is gone: not the appender's failure.
            scope.check()?;
            return Err(plugin_error(telemetry, name, e));
        }
    }
    scope.check()?;
    let t = Instant::now();
    let hidden = &job.hidden;
    // Nodes the appenders added (unused workloads) get their ambient flags too.
    opts.ambient.mark(&mut g);
    // Hidden nodes are marked inaccessible by `names_only`, per their cluster.
    finish(opts, &mut g, &exists);
    names_only(&mut g, &|cluster, ns| hidden.contains(cluster, ns));
    scope.check()?;
    let answer = output(job, &g, &stop)?;
    phase("output", "", t.elapsed());
    Ok((answer, g))
}

/// Lets go of the traffic answers once the graph is built. An answer another handle of the
/// request still shares (a coinciding appender query) loses this reference at once, so that
/// the other can take it over without a copy; one only this held is freed off the pool.
fn release(traffic: Vec<Arc<QueryResult>>) {
    let (shared, last): (Vec<_>, Vec<_>) =
        traffic.into_iter().partition(|a| Arc::strong_count(a) > 1);
    drop(shared);
    crate::dropper::drop_later(last);
}

/// The output after the appenders and the ids, so that the scope keeps elements of the full
/// graph; then the bytes.
fn output(job: &Job, g: &Graph, stop: &(dyn Fn() -> bool + Sync)) -> Result<GraphAnswer, ApiError> {
    // After the appenders, on the whole graph's ids and totals, so kept elements are the full
    // graph's; what the scope drops is not prepared.
    let out = GraphOutput::scoped_until(&job.opts, g, &job.view, stop)
        .map_err(|_| Scope::gone())?
        .map_err(|e| ApiError::bad_request(e.message))?;
    Ok(match job.opts.format {
        GraphFormat::Json => GraphAnswer::Json(out.to_json_until(stop).map_err(|_| Scope::gone())?),
        GraphFormat::Dot => GraphAnswer::Dot(out.to_dot()),
    })
}

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

/// An appender's failure, named, and counted.
fn plugin_error(m: &Metrics, appender: &str, e: plugin_api::PluginError) -> ApiError {
    m.plugin_failure(appender, e.kind == plugin_api::ErrorKind::Panic);
    let mut err = ApiError::from(e);
    match &mut err {
        ApiError::BadRequest(m) | ApiError::Internal(m) | ApiError::Unavailable(m) => {
            *m = format!("appender {appender}: {m}");
        }
        _ => {}
    }
    err
}
