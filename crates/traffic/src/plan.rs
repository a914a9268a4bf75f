//! The query plan of a graph: which traffic queries to send, and the value rounding.
//!
//! Every request is counted once, as health counts it: the source proxy's report, plus the
//! destination proxy's report only where the caller has no proxy (`source_workload="unknown"`).
//! A namespace graph sends one query per traffic family whatever the number of namespaces:
//! namespaces are matched with one regular expression and the builder sorts the results out.

use plugin_api::abi_stable::std_types::{ROption, RString, RVec};
use plugin_api::{HistogramStat, Matcher, MetricQuery, QueryResult, QueryTime, RangeFunc};

use appender_support::labels::*;
use appender_support::{UNKNOWN, ns_in, ns_not_in};

use crate::options::{GraphOptions, GraphTarget};

/// What a traffic query counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrafficKind {
    /// `istio_requests_total` (http and grpc).
    Requests,
    /// `istio_tcp_sent_bytes_total`.
    TcpBytes,
}

/// One query of the plan, with how its results are read.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedQuery {
    /// The structured query.
    pub query: MetricQuery,
    /// Request or TCP traffic.
    pub kind: TrafficKind,
    /// Series whose labels all equal these pairs are skipped: a node graph's outbound query
    /// also sees the node's calls to itself, which its inbound query already counted.
    pub skip_if: Vec<(String, String)>,
    /// Which series count, by their source (see [`SourceFilter`]).
    pub source: SourceFilter,
}

/// Which series of an ambient query count, by their source. The queries narrow the source
/// by name only (one regular expression of names, whatever the namespaces); the builder
/// checks the namespace and name against the cluster's ambient workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SourceFilter {
    /// Every series.
    #[default]
    Any,
    /// Only those from a known waypoint: the server-side ztunnel's half of a hop through a
    /// waypoint (its other reports repeat what the client's ztunnel said).
    Waypoint,
    /// Only those from callers without an L7 proxy of their own: ambient workloads, and
    /// callers nobody can name. A waypoint's report of a request from a sidecar (or a
    /// gateway) repeats that proxy's own `reporter="source"` report, which is read instead,
    /// whatever `ambientTraffic` says.
    NoProxy,
    /// Only those from ambient workloads other than waypoints: a sidecar server's
    /// `reporter="destination"` report of a request from an ambient caller that went
    /// through no waypoint, which nobody on the caller's side reports (ztunnel has no L7).
    AmbientClient,
}

const REQUESTS: &str = "istio_requests_total";
const TCP_SENT: &str = "istio_tcp_sent_bytes_total";

fn group_by(kind: TrafficKind) -> RVec<RString> {
    let mut g: Vec<&str> = EDGE.to_vec();
    g.push(DST_WL_NS);
    if kind == TrafficKind::Requests {
        g.extend([PROTOCOL, CODE, GRPC_STATUS]);
    }
    g.into_iter().map(RString::from).collect()
}

fn query(opts: &GraphOptions, kind: TrafficKind, matchers: Vec<Matcher>) -> PlannedQuery {
    let metric = match kind {
        TrafficKind::Requests => REQUESTS,
        TrafficKind::TcpBytes => TCP_SENT,
    };
    PlannedQuery {
        query: MetricQuery {
            metric: metric.into(),
            matchers: matchers.into_iter().collect(),
            func: RangeFunc::Rate,
            window_secs: opts.duration_secs,
            group_by: ROption::RSome(group_by(kind)),
            histogram: HistogramStat::None,
            time: QueryTime::Instant(opts.query_time),
        },
        kind,
        skip_if: Vec::new(),
        source: SourceFilter::Any,
    }
}

fn src() -> Matcher {
    Matcher::eq(REPORTER, "source")
}
fn dst() -> Matcher {
    Matcher::eq(REPORTER, "destination")
}
fn from_unknown() -> Matcher {
    Matcher::eq(SRC_WL, UNKNOWN)
}
fn waypoint() -> Matcher {
    Matcher::eq(REPORTER, "waypoint")
}
/// ztunnel's series are told apart by the scrape's `app` label (Kiali
/// `graph/telemetry/istio/util/util.go` `GetApp`).
const ZTUNNEL_APP: (&str, &str) = ("app", "ztunnel");
fn ztunnel() -> Matcher {
    Matcher::eq(ZTUNNEL_APP.0, ZTUNNEL_APP.1)
}

/// The traffic queries of a graph request, with how to read them: the sidecar queries,
/// then (in a cluster with ambient workloads) the ambient ones `ambientTraffic` asks for.
///
/// Each request and hop is counted once. Kiali sends `reporter=~"waypoint|source"` and
/// `reporter=~"waypoint|destination"` and drops repeated series while adding them
/// (`addTraffic` / `addEdgeTraffic` in `graph/telemetry/istio/istio.go`, which keeps the
/// first report of an edge, code and flags it meets); we send disjoint queries instead and
/// tell from each series' source which report stands for a request ([`SourceFilter`]):
/// - a caller's own proxy (sidecar or gateway, `reporter="source"`), always: sidecar
///   telemetry does not depend on `ambientTraffic`;
/// - a waypoint's report where the caller has no L7 proxy (an ambient workload, or a caller
///   nobody can name): those from the requested namespaces, plus those from elsewhere into
///   them (node graphs: into the node, and out of it);
/// - a sidecar server's `reporter="destination"` report where the caller is an ambient
///   workload (no waypoint on the way: ztunnel reports no requests). The bytes of such a
///   call are ztunnel's `reporter="source"` report, or, when ztunnel's are not read, the
///   sidecar's `reporter="destination"` one;
/// - ztunnel TCP: the client's ztunnel reports client → server and client → waypoint
///   (`reporter="source"`, read by the sidecar queries); the waypoint → server half is
///   reported only by the server's ztunnel, so destination reports are read too, and
///   only those from a waypoint kept.
///
/// With `ambientTraffic` `waypoint` or `none` every TCP query excludes `app="ztunnel"`.
/// A cluster without ambient workloads gets exactly the sidecar plan.
pub fn traffic_plan(opts: &GraphOptions) -> Vec<PlannedQuery> {
    let mut plan = sidecar_plan(opts);
    if opts.ambient.is_empty() {
        return plan;
    }
    let at = opts.ambient_traffic;
    if !at.ztunnel_tcp() {
        for p in plan.iter_mut().filter(|p| p.kind == TrafficKind::TcpBytes) {
            p.query.matchers.push(Matcher::ne(ZTUNNEL_APP.0, ZTUNNEL_APP.1));
        }
    }
    let ns = &opts.namespaces;
    // The waypoints' names narrow the server-side reports to (about) the waypoint halves,
    // the ambient workloads' names the sidecar servers' reports to (about) ambient callers.
    let names = opts.ambient.waypoint_names();
    let known_src = || ns_in(SRC_WL, &names);
    let clients = opts.ambient.client_names();
    let mut add = |kind: TrafficKind, source, m: Vec<Matcher>, skip_if: &[(&str, &str)]| {
        let mut q = query(opts, kind, m);
        q.source = source;
        q.skip_if = skip_if.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        plan.push(q);
    };
    let want_wp = at.waypoint_requests();
    let want_zt = at.ztunnel_tcp() && opts.ambient.has_waypoints();
    let req = TrafficKind::Requests;
    let tcp = TrafficKind::TcpBytes;
    let (half, no_proxy, client) =
        (SourceFilter::Waypoint, SourceFilter::NoProxy, SourceFilter::AmbientClient);
    // Sidecar servers' reports of ambient callers: requests always, bytes when ztunnel's
    // `reporter="source"` reports are not read (then this is the one report left).
    let mut from_clients: Vec<(TrafficKind, Vec<Matcher>)> = Vec::new();
    if !clients.is_empty() {
        from_clients.push((req, vec![dst(), ns_in(SRC_WL, &clients)]));
        if !at.ztunnel_tcp() {
            let not_zt = Matcher::ne(ZTUNNEL_APP.0, ZTUNNEL_APP.1);
            from_clients.push((tcp, vec![dst(), ns_in(SRC_WL, &clients), not_zt]));
        }
    }
    match &opts.target {
        GraphTarget::Namespaces => {
            let mesh_filter = || {
                opts.excludes_mesh().then(|| Matcher::ne(DST_SVC_NS, &opts.settings.mesh_namespace))
            };
            if want_wp {
                let mut inside = vec![waypoint(), ns_in(SRC_NS, ns)];
                inside.extend(mesh_filter());
                add(req, no_proxy, inside, &[]);
                let outside = vec![waypoint(), ns_not_in(SRC_NS, ns), ns_in(DST_SVC_NS, ns)];
                add(req, no_proxy, outside, &[]);
            }
            if want_zt {
                add(tcp, half, vec![dst(), ztunnel(), known_src(), ns_in(DST_WL_NS, ns)], &[]);
                let out = vec![
                    dst(),
                    ztunnel(),
                    known_src(),
                    ns_in(SRC_NS, ns),
                    ns_not_in(DST_WL_NS, ns),
                ];
                add(tcp, half, out, &[]);
            }
            for (kind, m) in from_clients {
                let mut inside = [m.clone(), vec![ns_in(SRC_NS, ns)]].concat();
                inside.extend(mesh_filter());
                add(kind, client, inside, &[]);
                let outside = vec![ns_not_in(SRC_NS, ns), ns_in(DST_SVC_NS, ns)];
                add(kind, client, [m, outside].concat(), &[]);
            }
        }
        GraphTarget::Service { namespace, service } => {
            let mut sel = vec![Matcher::eq(DST_SVC_NS, namespace), Matcher::eq(DST_SVC, service)];
            sel.extend(opts.node_cluster.as_ref().map(|c| Matcher::eq(DST_CLUSTER, c)));
            if want_wp {
                add(req, no_proxy, [vec![waypoint()], sel.clone()].concat(), &[]);
            }
            if want_zt {
                add(tcp, half, [vec![dst(), ztunnel(), known_src()], sel.clone()].concat(), &[]);
            }
            for (kind, m) in from_clients {
                add(kind, client, [m, sel.clone()].concat(), &[]);
            }
        }
        GraphTarget::Workload { .. } | GraphTarget::App { .. } | GraphTarget::AppVersion { .. } => {
            let (inbound, outbound) = node_selectors(opts);
            let sel: Vec<Matcher> = inbound.iter().map(|(n, v)| Matcher::eq(n, v)).collect();
            if want_wp {
                add(req, no_proxy, [vec![waypoint()], sel.clone()].concat(), &[]);
                add(req, no_proxy, [vec![waypoint()], outbound.clone()].concat(), &inbound);
            }
            if want_zt {
                add(tcp, half, [vec![dst(), ztunnel(), known_src()], sel.clone()].concat(), &[]);
                let out = [vec![dst(), ztunnel(), known_src()], outbound.clone()].concat();
                add(tcp, half, out, &inbound);
            }
            for (kind, m) in from_clients {
                add(kind, client, [m.clone(), sel.clone()].concat(), &[]);
                add(kind, client, [m, outbound.clone()].concat(), &inbound);
            }
        }
    }
    plan
}

/// A node graph's inbound selector (label, value pairs) and outbound matchers, narrowed to
/// the node's cluster when `clusterName` named one ([`with_cluster`]).
fn node_selectors(opts: &GraphOptions) -> (Vec<(&'static str, &str)>, Vec<Matcher>) {
    let (inbound, outbound) = node_selectors_by_name(&opts.target);
    with_cluster(opts, inbound, outbound)
}

/// `clusterName=west` selects the node in west only: inbound series must say
/// `destination_cluster="west"`, outbound ones `source_cluster="west"` (Kiali's
/// `buildNodeTrafficMap` in graph/telemetry/istio/istio.go narrows the same way). The
/// inbound pair also joins the outbound query's `skip_if`, so a call from west's node to
/// the same-named node in east stays an outbound edge.
fn with_cluster<'a>(
    opts: &'a GraphOptions,
    mut inbound: Vec<(&'static str, &'a str)>,
    mut outbound: Vec<Matcher>,
) -> (Vec<(&'static str, &'a str)>, Vec<Matcher>) {
    if let Some(c) = &opts.node_cluster {
        inbound.push((DST_CLUSTER, c.as_str()));
        outbound.push(Matcher::eq(SRC_CLUSTER, c));
    }
    (inbound, outbound)
}

/// A node graph's inbound selector and outbound matchers by the node's names alone.
fn node_selectors_by_name(target: &GraphTarget) -> (Vec<(&'static str, &str)>, Vec<Matcher>) {
    match target {
        GraphTarget::Workload { namespace, workload } => (
            vec![(DST_WL_NS, namespace.as_str()), (DST_WL, workload.as_str())],
            vec![Matcher::eq(SRC_NS, namespace), Matcher::eq(SRC_WL, workload)],
        ),
        GraphTarget::App { namespace, app } => (
            vec![(DST_SVC_NS, namespace.as_str()), (DST_APP, app.as_str())],
            vec![Matcher::eq(SRC_NS, namespace), Matcher::eq(SRC_APP, app)],
        ),
        GraphTarget::AppVersion { namespace, app, version } => (
            vec![
                (DST_SVC_NS, namespace.as_str()),
                (DST_APP, app.as_str()),
                (DST_VER, version.as_str()),
            ],
            vec![
                Matcher::eq(SRC_NS, namespace),
                Matcher::eq(SRC_APP, app),
                Matcher::eq(SRC_VER, version),
            ],
        ),
        GraphTarget::Namespaces | GraphTarget::Service { .. } => (Vec::new(), Vec::new()),
    }
}

/// The queries of a mesh of sidecars (each request counted once, see the module comment).
fn sidecar_plan(opts: &GraphOptions) -> Vec<PlannedQuery> {
    let ns = &opts.namespaces;
    let mesh_filter = || -> Option<Matcher> {
        opts.excludes_mesh().then(|| Matcher::ne(DST_SVC_NS, &opts.settings.mesh_namespace))
    };
    let mut plan = Vec::new();
    for kind in [TrafficKind::Requests, TrafficKind::TcpBytes] {
        match &opts.target {
            GraphTarget::Namespaces => {
                // TCP from outside the mesh is keyed by the workload namespace (the service
                // namespace may be missing on such reports).
                let unknown_ns = if kind == TrafficKind::TcpBytes { DST_WL_NS } else { DST_SVC_NS };
                plan.push(query(opts, kind, vec![dst(), from_unknown(), ns_in(unknown_ns, ns)]));
                plan.push(query(
                    opts,
                    kind,
                    vec![
                        src(),
                        ns_not_in(SRC_NS, ns),
                        Matcher::ne(SRC_WL, UNKNOWN),
                        ns_in(DST_SVC_NS, ns),
                    ],
                ));
                let mut inside = vec![src(), ns_in(SRC_NS, ns)];
                inside.extend(mesh_filter());
                plan.push(query(opts, kind, inside));
            }
            GraphTarget::Service { namespace, service } => {
                let mut sel =
                    vec![Matcher::eq(DST_SVC_NS, namespace), Matcher::eq(DST_SVC, service)];
                sel.extend(opts.node_cluster.as_ref().map(|c| Matcher::eq(DST_CLUSTER, c)));
                plan.push(query(opts, kind, [vec![dst(), from_unknown()], sel.clone()].concat()));
                plan.push(query(opts, kind, [vec![src()], sel].concat()));
            }
            GraphTarget::Workload { .. }
            | GraphTarget::App { .. }
            | GraphTarget::AppVersion { .. } => {
                let (inbound, outbound) = node_selectors(opts);
                node_queries(opts, kind, &mut plan, inbound, outbound, mesh_filter());
            }
        }
    }
    plan
}

fn node_queries(
    opts: &GraphOptions,
    kind: TrafficKind,
    plan: &mut Vec<PlannedQuery>,
    inbound: Vec<(&str, &str)>,
    outbound: Vec<Matcher>,
    mesh_filter: Option<Matcher>,
) {
    let sel: Vec<Matcher> = inbound.iter().map(|(n, v)| Matcher::eq(n, v)).collect();
    plan.push(query(opts, kind, [vec![dst(), from_unknown()], sel.clone()].concat()));
    plan.push(query(opts, kind, [vec![src()], sel].concat()));
    let mut out = [vec![src()], outbound].concat();
    out.extend(mesh_filter);
    let mut q = query(opts, kind, out);
    q.skip_if = inbound.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
    plan.push(q);
}

/// The traffic queries alone (see [`traffic_plan`]).
pub fn traffic_queries(opts: &GraphOptions) -> Vec<MetricQuery> {
    traffic_plan(opts).into_iter().map(|p| p.query).collect()
}

/// Prometheus' `round(v, 0.001)`: `floor(v * 1000 + 0.5) / 1000`. NaN and infinities stay.
pub fn round_value(v: f64) -> f64 {
    if v.is_finite() { (v * 1000.0 + 0.5).floor() / 1000.0 } else { v }
}

/// Rounds every sample to 0.001, as Kiali's `round(<query>,0.001)` does.
pub fn round_results(results: &mut [QueryResult]) {
    for r in results {
        for s in r.series.iter_mut() {
            for p in s.samples.iter_mut() {
                p.v = round_value(p.v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{GraphSettings, GraphTarget};

    fn opts(target: GraphTarget, q: &[(&str, &str)]) -> GraphOptions {
        let q = meshlens_params::query::query_string(q);
        GraphOptions::parse(target, &q, 100, &[], &GraphSettings::default()).unwrap()
    }

    #[test]
    fn the_number_of_queries_does_not_grow_with_namespaces() {
        let one = traffic_queries(&opts(GraphTarget::Namespaces, &[("namespaces", "a")]));
        let many: Vec<String> = (0..200).map(|i| format!("ns{i}")).collect();
        let two =
            traffic_queries(&opts(GraphTarget::Namespaces, &[("namespaces", &many.join(","))]));
        assert_eq!(one.len(), 6);
        assert_eq!(two.len(), 6);
        assert!(
            two[2].matchers.iter().any(
                |m| m.op == plugin_api::MatchOp::Re && m.value.as_str().starts_with("ns0|ns1|")
            )
        );
    }

    #[test]
    fn mesh_filter_applies_unless_asked_or_requested() {
        let has_filter = |o: &GraphOptions| {
            traffic_queries(o)[2].matchers.iter().any(|m| m.name.as_str() == DST_SVC_NS)
        };
        assert!(has_filter(&opts(GraphTarget::Namespaces, &[("namespaces", "a")])));
        assert!(!has_filter(&opts(
            GraphTarget::Namespaces,
            &[("namespaces", "a"), ("includeMesh", "true")]
        )));
        assert!(!has_filter(&opts(GraphTarget::Namespaces, &[("namespaces", "a,istio-system")])));
    }

    #[test]
    fn node_graph_outbound_skips_self_calls() {
        let p = traffic_plan(&opts(
            GraphTarget::Workload { namespace: "ns".into(), workload: "w".into() },
            &[],
        ));
        assert_eq!(p.len(), 6);
        assert_eq!(
            p[2].skip_if,
            vec![(DST_WL_NS.to_string(), "ns".to_string()), (DST_WL.to_string(), "w".to_string())]
        );
        let p = traffic_plan(&opts(
            GraphTarget::Service { namespace: "ns".into(), service: "s".into() },
            &[],
        ));
        assert_eq!(p.len(), 4);
    }

    #[test]
    fn cluster_name_narrows_a_node_graph_to_that_clusters_node() {
        use plugin_api::MatchOp::Eq;
        let wl = || GraphTarget::Workload { namespace: "ns".into(), workload: "w".into() };
        let p = traffic_plan(&opts(wl(), &[("clusterName", "west")]));
        // Inbound queries (the first two of each kind) by the destination's cluster, the
        // outbound one by the source's; self-calls skipped only when they land in west too.
        for kind in [0, 3] {
            assert!(has(&p[kind].query, DST_CLUSTER, Eq, "west"));
            assert!(has(&p[kind + 1].query, DST_CLUSTER, Eq, "west"));
            assert!(has(&p[kind + 2].query, SRC_CLUSTER, Eq, "west"));
            assert!(p[kind + 2].skip_if.contains(&(DST_CLUSTER.into(), "west".into())));
        }
        let svc = GraphTarget::Service { namespace: "ns".into(), service: "s".into() };
        let p = traffic_plan(&opts(svc, &[("clusterName", "west")]));
        assert!(p.iter().all(|q| has(&q.query, DST_CLUSTER, Eq, "west")));
        // Without it, and on the namespaces graph, no query names a cluster.
        let none = |o: &GraphOptions| {
            traffic_plan(o).iter().all(|q| {
                q.query.matchers.iter().all(|m| m.name.as_str() != DST_CLUSTER)
                    && q.query.matchers.iter().all(|m| m.name.as_str() != SRC_CLUSTER)
            })
        };
        assert!(none(&opts(wl(), &[])));
        assert!(none(&opts(GraphTarget::Namespaces, &[("namespaces", "a"), ("clusterName", "w")])));
        // The ambient queries are narrowed the same way.
        let p = traffic_plan(&ambient_opts(wl(), &[("clusterName", "west")]));
        assert!(
            p.iter().all(|q| has(&q.query, DST_CLUSTER, Eq, "west")
                || has(&q.query, SRC_CLUSTER, Eq, "west"))
        );
    }

    fn ambient_opts(target: GraphTarget, q: &[(&str, &str)]) -> GraphOptions {
        let mut o = opts(target, q);
        let mut a = crate::AmbientWorkloads::default();
        a.add_workload("a", "front");
        a.add_waypoint("a", "waypoint");
        o.ambient = std::sync::Arc::new(a);
        o
    }

    fn has(q: &MetricQuery, name: &str, op: plugin_api::MatchOp, value: &str) -> bool {
        q.matchers
            .iter()
            .any(|m| m.name.as_str() == name && m.op == op && m.value.as_str() == value)
    }

    #[test]
    fn a_cluster_without_ambient_workloads_gets_the_sidecar_plan_whatever_the_values() {
        let base = traffic_plan(&opts(GraphTarget::Namespaces, &[("namespaces", "a")]));
        for at in ["total", "ztunnel", "waypoint", "none"] {
            for wp in ["true", "false"] {
                let q = [("namespaces", "a"), ("ambientTraffic", at), ("waypoints", wp)];
                assert_eq!(traffic_plan(&opts(GraphTarget::Namespaces, &q)), base);
            }
        }
    }

    #[test]
    fn ambient_queries_follow_ambient_traffic() {
        use plugin_api::MatchOp::{Eq, Ne};
        let plan = |at: &str| {
            traffic_plan(&ambient_opts(
                GraphTarget::Namespaces,
                &[("namespaces", "a"), ("ambientTraffic", at)],
            ))
        };
        let waypoint_queries = |p: &[PlannedQuery]| {
            p.iter().filter(|q| has(&q.query, REPORTER, Eq, "waypoint")).count()
        };
        let ztunnel_halves =
            |p: &[PlannedQuery]| p.iter().filter(|q| q.source == SourceFilter::Waypoint).count();
        let excludes_ztunnel = |p: &[PlannedQuery]| {
            p.iter()
                .filter(|q| q.kind == TrafficKind::TcpBytes)
                .all(|q| has(&q.query, "app", Ne, "ztunnel"))
        };
        let total = plan("total");
        // 6 sidecar queries, 2 waypoint ones, 2 server-side halves, and 2 for sidecar
        // servers' reports of ambient callers' requests.
        assert_eq!((total.len(), waypoint_queries(&total), ztunnel_halves(&total)), (12, 2, 2));
        assert!(!excludes_ztunnel(&total));
        // The server-side halves are destination reports from a known waypoint's name.
        for q in total.iter().filter(|q| q.source == SourceFilter::Waypoint) {
            assert!(has(&q.query, REPORTER, Eq, "destination"), "{q:?}");
            assert!(has(&q.query, "app", Eq, "ztunnel") && has(&q.query, SRC_WL, Eq, "waypoint"));
        }
        let z = plan("ztunnel");
        assert_eq!((waypoint_queries(&z), ztunnel_halves(&z)), (0, 2));
        let w = plan("waypoint");
        assert_eq!((waypoint_queries(&w), ztunnel_halves(&w)), (2, 0));
        assert!(excludes_ztunnel(&w));
        let n = plan("none");
        // Without ztunnel's reports the sidecar servers' TCP reports of ambient callers count.
        assert_eq!((n.len(), waypoint_queries(&n), ztunnel_halves(&n)), (10, 0, 0));
        assert!(excludes_ztunnel(&n));
        let clients = |p: &[PlannedQuery], kind| {
            p.iter()
                .filter(|q| q.source == SourceFilter::AmbientClient && q.kind == kind)
                .inspect(|q| {
                    assert!(has(&q.query, REPORTER, Eq, "destination"), "{q:?}");
                    assert!(has(&q.query, SRC_WL, Eq, "front"), "{q:?}");
                })
                .count()
        };
        assert_eq!(
            (clients(&total, TrafficKind::Requests), clients(&total, TrafficKind::TcpBytes)),
            (2, 0)
        );
        assert_eq!(
            (clients(&n, TrafficKind::Requests), clients(&n, TrafficKind::TcpBytes)),
            (2, 2)
        );
        assert!(
            total
                .iter()
                .filter(|q| has(&q.query, REPORTER, Eq, "waypoint"))
                .all(|q| q.source == SourceFilter::NoProxy)
        );
        // Node graphs: into the node and out of it, the outbound side skipping self-calls.
        let node = traffic_plan(&ambient_opts(
            GraphTarget::Workload { namespace: "a".into(), workload: "front".into() },
            &[],
        ));
        let wp: Vec<&PlannedQuery> =
            node.iter().filter(|q| has(&q.query, REPORTER, Eq, "waypoint")).collect();
        assert_eq!(wp.len(), 2);
        assert!(wp[0].skip_if.is_empty() && !wp[1].skip_if.is_empty());
    }

    #[test]
    fn rounding_matches_prometheus() {
        assert_eq!(round_value(0.0004), 0.0);
        assert_eq!(round_value(0.0005), 0.001);
        assert_eq!(round_value(1.9999999999999998), 2.0);
        assert!(round_value(f64::NAN).is_nan());
    }
}
