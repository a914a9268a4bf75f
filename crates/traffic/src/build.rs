//! Building the traffic graph from query results (as Kiali v0.14's
//! `graph/graph.go` and `handlers/graph.go` build it).

use std::{borrow::Borrow, hash::BuildHasher};

use foldhash::fast::FixedState;
use plugin_api::abi_stable::std_types::RString;
use plugin_api::{Edge, Graph, GraphType, NodeType, QueryResult, Series};

use appender_support::labels::*;
use appender_support::{FastMap, HashMapExt, Hops, IdBuf, NodeRef, SeriesLabels, UNKNOWN};
use par_chunks::{Stopped, try_map_chunks_in_order};

use crate::ambient::AmbientWorkloads;
use crate::options::GraphOptions;
use crate::plan::{PlannedQuery, SourceFilter, TrafficKind, round_value};

/// Builds the graph from the traffic queries' results (`results[i]` answers `plan[i]`;
/// missing results count as empty). Values are rounded as they are read ([`round_value`]),
/// so shared answers are used as they are.
///
/// Reading a series' labels and naming its nodes does not touch the graph, so big results
/// are resolved on the idle threads of the caller's pool; the graph itself is built on this
/// thread, in result order, as the resolved chunks come in.
pub fn build_graph<R: Borrow<QueryResult>>(
    opts: &GraphOptions,
    plan: &[PlannedQuery],
    results: &[R],
) -> Graph {
    // Never asked to stop, so never the default.
    build_graph_until(opts, plan, results, &|| false).unwrap_or_default()
}

/// [`build_graph`] that asks `stop` every 1,024 series and gives up ([`Stopped`]) once it
/// says yes: a request that timed out or whose client left stops building at once.
pub fn build_graph_until<R: Borrow<QueryResult>>(
    opts: &GraphOptions,
    plan: &[PlannedQuery],
    results: &[R],
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Graph, Stopped> {
    let items: Vec<(&PlannedQuery, &Series)> = plan
        .iter()
        .zip(results)
        .flat_map(|(p, r)| r.borrow().series.iter().map(move |s| (p, s)))
        .collect();
    let (graph_type, inject) = (opts.graph_type, opts.inject_service_nodes);
    let home = opts.settings.home_cluster.as_str();
    let ambient = &*opts.ambient;
    let mut b = Builder::new(graph_type, items.len());
    try_map_chunks_in_order(
        &items,
        stop,
        |_, chunk| {
            let mut ids = Ids::default();
            let hops: Vec<Resolved<'_>> = chunk
                .iter()
                .filter_map(|(p, s)| resolve(p, s, (graph_type, inject, home), ambient, &mut ids))
                .collect();
            (ids.text, hops)
        },
        |(text, hops)| {
            for r in &hops {
                b.add(r, &text);
            }
        },
    )?;
    let mut graph = b.graph;
    ambient.mark(&mut graph);
    Ok(graph)
}

/// Node ids of a chunk's series, back to back in one string.
#[derive(Default)]
struct Ids {
    text: String,
    buf: IdBuf,
}

/// What one series adds to the graph.
#[derive(Clone, Copy)]
struct Resolved<'a> {
    v: f64,
    protocol: &'a str,
    /// First digit of the response code.
    class: Option<u8>,
    grpc_err: bool,
    /// Destination service name (may be empty).
    svc: &'a str,
    chain: Hops<'a>,
    /// Where each chain node's id is in the chunk's id text.
    ids: [(usize, usize); 3],
    /// Each chain node id's [`ID_HASH`].
    hashes: [u64; 3],
}

/// Hashes node ids while series are resolved (on every thread alike), so that the one thread
/// that builds the graph does not hash them or keep copies of them as map keys.
const ID_HASH: FixedState = FixedState::with_seed(0x6d65_7368_6c65_6e73);

/// Reads one series; `None` when it adds nothing (filtered, no value, or unnamed ends).
/// `how` is the graph type, whether service nodes are injected and the home cluster.
fn resolve<'a>(
    p: &PlannedQuery,
    s: &'a Series,
    how: (GraphType, bool, &str),
    ambient: &AmbientWorkloads,
    ids: &mut Ids,
) -> Option<Resolved<'a>> {
    let (graph_type, inject, home) = how;
    let labels = &s.labels;
    if !p.skip_if.is_empty() && p.skip_if.iter().all(|(n, v)| labels.get(n) == Some(v.as_str())) {
        return None;
    }
    let v = s.samples.last().map(|x| round_value(x.v)).filter(|v| v.is_finite())?;
    let mut sl = SeriesLabels::read(labels);
    let mut inject = inject;
    if ambient.has_waypoints() {
        // Waypoints are not apps: a workload node in every graph type, and no service node
        // is injected next to one (Kiali `graph/telemetry/istio/istio.go`,
        // `populateTrafficMap` and `addTraffic`).
        let is_wp = |ns: Option<&str>, wl: Option<&str>| {
            ambient.is_waypoint(ns.unwrap_or(UNKNOWN), wl.unwrap_or(UNKNOWN))
        };
        let src_wp = is_wp(sl.src_ns, sl.src_wl);
        let dst_wp = is_wp(sl.dst_wl_ns, sl.dst_wl);
        if p.source == SourceFilter::Waypoint && !src_wp {
            return None;
        }
        if src_wp && sl.src_app.is_some() {
            sl.src_app = Some(UNKNOWN);
        }
        if dst_wp && sl.dst_app.is_some() {
            sl.dst_app = Some(UNKNOWN);
        }
        inject &= !src_wp && !dst_wp;
    } else if p.source == SourceFilter::Waypoint {
        return None;
    }
    // Whose report stands for a request (`plan.rs`, `traffic_plan`).
    let client = || ambient.is_client(sl.src_ns.unwrap_or(UNKNOWN), sl.src_wl.unwrap_or(UNKNOWN));
    match p.source {
        SourceFilter::NoProxy if sl.src_wl.is_some_and(|w| w != UNKNOWN) && !client() => {
            return None;
        }
        SourceFilter::AmbientClient if !client() => return None,
        _ => {}
    }
    if let Some(missing) = first_missing(&sl, p.kind) {
        tracing::warn!(label = missing, "skipping a traffic sample without the label");
        return None;
    }
    let has_ns = sl.dst_svc_ns.is_some_and(|s| !s.is_empty()) || sl.dst_wl_ns.is_some();
    if !has_ns {
        tracing::warn!("skipping a traffic sample without a destination namespace");
        return None;
    }
    let protocol = match p.kind {
        TrafficKind::TcpBytes => "tcp",
        TrafficKind::Requests => sl.protocol.unwrap_or(""),
    };
    let code = sl.code.unwrap_or("");
    let chain = sl.hops(graph_type, inject, home);
    if chain.is_empty() {
        tracing::warn!("skipping a traffic sample whose source or destination cannot be named");
        return None;
    }
    let (mut at, mut hashes) = ([(0, 0); 3], [0; 3]);
    for ((slot, hash), id) in at.iter_mut().zip(&mut hashes).zip(ids.buf.fill(&chain).ids()) {
        let start = ids.text.len();
        ids.text.push_str(id);
        *slot = (start, ids.text.len());
        *hash = ID_HASH.hash_one(id.as_str());
    }
    Some(Resolved {
        v,
        protocol,
        class: code.as_bytes().first().copied(),
        grpc_err: is_grpc_error(code, sl.grpc_status),
        svc: sl.dst_svc.unwrap_or(""),
        chain,
        ids: at,
        hashes,
    })
}

struct Builder {
    graph_type: GraphType,
    graph: Graph,
    /// The first node with each id hash.
    by_hash: FastMap<u64, u32>,
    /// For each node, the next one whose id has the same hash (practically never any).
    same_hash: Vec<Option<u32>>,
    /// Edge positions by (source, target, protocol) positions.
    edges: FastMap<(usize, usize, usize), usize>,
    /// Protocols seen, so that edge keys need no strings.
    protocols: Vec<RString>,
}

/// The first label a traffic sample of `kind` needs and lacks. Fields, not names, are
/// checked: this runs once per series.
fn first_missing(sl: &SeriesLabels<'_>, kind: TrafficKind) -> Option<&'static str> {
    let both = [
        (SRC_NS, sl.src_ns),
        (SRC_WL, sl.src_wl),
        (SRC_APP, sl.src_app),
        (SRC_VER, sl.src_ver),
        (DST_SVC, sl.dst_svc),
        (DST_WL, sl.dst_wl),
        (DST_APP, sl.dst_app),
        (DST_VER, sl.dst_ver),
    ];
    let requests = [(DST_SVC_NS, sl.dst_svc_ns), (PROTOCOL, sl.protocol), (CODE, sl.code)];
    let extra: &[_] = match kind {
        TrafficKind::Requests => &requests,
        TrafficKind::TcpBytes => &[],
    };
    both.iter().chain(extra).find(|(_, v)| v.is_none()).map(|(n, _)| *n)
}

impl Builder {
    /// `series` sizes the graph and its maps: a graph has about as many edges as series, and
    /// fewer nodes (growing them as they fill copied every node and edge a dozen times).
    fn new(graph_type: GraphType, series: usize) -> Self {
        let mut graph = Graph::default();
        graph.nodes.reserve(series / 2);
        graph.edges.reserve(series);
        Builder {
            graph_type,
            graph,
            by_hash: FastMap::with_capacity(series / 2),
            same_hash: Vec::with_capacity(series / 2),
            edges: FastMap::with_capacity(series),
            protocols: Vec::new(),
        }
    }

    /// Adds one resolved series; `text` holds its node ids.
    fn add(&mut self, r: &Resolved<'_>, text: &str) {
        let Resolved { v, protocol, class, grpc_err, svc, .. } = *r;
        let mut at = [0usize; 3];
        for (i, n) in r.chain.nodes().enumerate() {
            let (start, end) = r.ids[i];
            at[i] = self.node(n, &text[start..end], r.hashes[i], v);
        }
        for w in at[..=r.chain.len()].windows(2) {
            let (s, d) = (w[0], w[1]);
            if !svc.is_empty() {
                let ds = &mut self.graph.nodes[d].dest_services;
                if !ds.iter().any(|x| x.as_str() == svc) {
                    ds.push(svc.into());
                }
            }
            let e = self.edge(s, d, protocol);
            let nodes = &mut self.graph.nodes;
            let edge = &mut self.graph.edges[e].rates;
            match protocol {
                "http" => {
                    nodes[s].rates.http_out += v;
                    let dr = &mut nodes[d].rates;
                    dr.http_in += v;
                    edge.http += v;
                    match class {
                        Some(b'3') => {
                            dr.http_in_3xx += v;
                            edge.http_3xx += v;
                        }
                        Some(b'4') => {
                            dr.http_in_4xx += v;
                            edge.http_4xx += v;
                        }
                        Some(b'5') => {
                            dr.http_in_5xx += v;
                            edge.http_5xx += v;
                        }
                        _ => {}
                    }
                }
                "grpc" => {
                    nodes[s].rates.grpc_out += v;
                    nodes[d].rates.grpc_in += v;
                    edge.grpc += v;
                    if grpc_err {
                        nodes[d].rates.grpc_in_err += v;
                        edge.grpc_err += v;
                    }
                }
                "tcp" => {
                    nodes[s].rates.tcp_out += v;
                    nodes[d].rates.tcp_in += v;
                    edge.tcp += v;
                }
                // Other protocols get an edge but no rates, as in Kiali.
                _ => {}
            }
        }
    }

    /// Finds or creates the node `id`; flags label disagreement on workload (and versioned
    /// app) nodes.
    fn node(&mut self, k: &NodeRef<'_>, id: &str, hash: u64, v: f64) -> usize {
        let mut candidate = self.by_hash.get(&hash).map(|&i| i as usize);
        while let Some(i) = candidate {
            if self.graph.nodes[i].id.as_str() != id {
                candidate = self.same_hash[i].map(|i| i as usize);
                continue;
            }
            let n = &mut self.graph.nodes[i];
            // Home and `unknown` nodes share ids: a report that names the cluster wins over
            // one that does not (a caller outside the mesh is often reported without it).
            if k.cluster != n.cluster.as_str() && appender_support::is_ok(k.cluster) {
                n.cluster = k.cluster.into();
            }
            let checks = n.node_type == NodeType::Workload
                || (n.node_type == NodeType::App && self.graph_type == GraphType::VersionedApp);
            if checks {
                let mut differ = Vec::new();
                if n.app.as_str() != k.app {
                    differ.push("app");
                }
                if n.version.as_str() != k.version {
                    differ.push("version");
                }
                if !differ.is_empty() {
                    n.is_misconfigured = format!("labels=[{}]", differ.join(" ")).into();
                    if v > 0.0 {
                        n.app = k.app.into();
                        n.version = k.version.into();
                    }
                }
            }
            return i;
        }
        self.graph.nodes.push(k.to_node(id));
        let i = self.graph.nodes.len() - 1;
        self.same_hash.push(self.by_hash.insert(hash, i as u32));
        i
    }

    fn edge(&mut self, s: usize, d: usize, protocol: &str) -> usize {
        let p = match self.protocols.iter().position(|p| p.as_str() == protocol) {
            Some(p) => p,
            None => {
                self.protocols.push(protocol.into());
                self.protocols.len() - 1
            }
        };
        if let Some(&e) = self.edges.get(&(s, d, p)) {
            return e;
        }
        let (src, dst) = (&self.graph.nodes[s].id, &self.graph.nodes[d].id);
        let edge = Edge { source: src.clone(), target: dst.clone(), ..Edge::new("", "", protocol) };
        self.graph.edges.push(edge);
        let e = self.graph.edges.len() - 1;
        self.edges.insert((s, d, p), e);
        e
    }
}

/// gRPC errors: a gRPC status other than 0; without one, Kiali's rule on the response code
/// (an HTTP-style 4xx/5xx, or any code other than `0`, `200`-style successes excepted).
fn is_grpc_error(code: &str, grpc_status: Option<&str>) -> bool {
    match grpc_status {
        Some(s) if !s.is_empty() => s != "0",
        _ => {
            if code.len() == 3 {
                code.starts_with('4') || code.starts_with('5')
            } else {
                code != "0"
            }
        }
    }
}
