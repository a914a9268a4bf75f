//! The graph's response prepared for writing (Kiali v0.14's
//! `graph/cytoscape/cytoscape.go` shape): ids, traffic, percentages,
//! boxes, order. `json.rs` and `dot.rs` write it.

use appender_support::node_positions;
use par_chunks::{Stopped, try_map_chunks};
use plugin_api::{Edge, Graph, GraphType, Node, NodeType};

use crate::fixed::Fixed;
use crate::hash32::Hash32;
use crate::options::{GraphOptions, GroupBy};
use crate::order::{hash_ranks, sort_nodes};

/// Keys of the spec's own fields; an appender's open field with one of these names is ignored.
pub(crate) const RESERVED: [&str; 27] = [
    "id",
    "parent",
    "nodeType",
    "namespace",
    "workload",
    "app",
    "version",
    "service",
    "destServices",
    "traffic",
    "hasCB",
    "hasMissingSC",
    "hasVS",
    "isDead",
    "isFind",
    "isGroup",
    "isInaccessible",
    "isMisconfigured",
    "isOutside",
    "isRoot",
    "isServiceEntry",
    "isUnused",
    "source",
    "target",
    "responseTime",
    "isMTLS",
    "protocol",
];

/// One `{protocol, rates}` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Traffic {
    /// `grpc`, `http`, `tcp`, or empty.
    pub protocol: &'static str,
    /// Rates, keys in alphabetical order; `None` serialises as `null`.
    pub rates: Option<Vec<(&'static str, Fixed)>>,
}

/// A node as it is serialised (a graph node or a box).
#[derive(Debug, Clone)]
pub struct NodeOut<'a> {
    /// MD5 of the internal id (or of the box key).
    pub id: Hash32,
    /// Box id, when grouped.
    pub parent: Option<Hash32>,
    /// `isGroup` of a box (`app` or `version`), else empty.
    pub is_group: &'static str,
    /// The graph node; `None` for boxes.
    pub node: Option<&'a Node>,
    /// Box fields: node type, namespace, app and the OR-ed flags.
    pub(crate) box_fields: Option<BoxFields<'a>>,
    /// Node traffic entries.
    pub traffic: Vec<Traffic>,
    /// Selected by the request's `find` (written as `"isFind": true`).
    pub is_find: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct BoxFields<'a> {
    pub(crate) namespace: &'a str,
    pub(crate) app: &'a str,
    pub(crate) has_missing_sc: bool,
    pub(crate) is_inaccessible: bool,
    pub(crate) is_outside: bool,
}

/// An edge as it is serialised.
#[derive(Debug, Clone)]
pub struct EdgeOut<'a> {
    /// MD5 of `<source hash>.<target hash>.<protocol>`.
    pub id: Hash32,
    /// Source node hash.
    pub source: Hash32,
    /// Target node hash.
    pub target: Hash32,
    /// The graph edge.
    pub edge: &'a Edge,
    /// `traffic`.
    pub traffic: Traffic,
    /// `isUnused` (from the source node).
    pub is_unused: bool,
    /// Selected by the request's `find` (written as `"isFind": true`).
    pub is_find: bool,
}

/// The serialisable response: `{timestamp, duration, graphType, elements}`.
#[derive(Debug, Clone)]
pub struct GraphOutput<'a> {
    /// `timestamp` (queryTime).
    pub timestamp: i64,
    /// `duration` in seconds.
    pub duration: u64,
    /// `graphType`.
    pub graph_type: GraphType,
    /// Nodes, sorted, boxes included.
    pub nodes: Vec<NodeOut<'a>>,
    /// Edges, sorted.
    pub edges: Vec<EdgeOut<'a>>,
}

/// The non-zero rates of `rates`, as `(key, value)` in the given order.
fn kept(rates: &[(&'static str, Fixed)]) -> Vec<(&'static str, Fixed)> {
    rates.iter().filter(|(_, v)| v.value > 0.0).copied().collect()
}

fn node_traffic(n: &Node) -> Vec<Traffic> {
    let r = &n.rates;
    let f = Fixed::rate;
    let entries: [(&'static str, Vec<(&'static str, Fixed)>); 3] = [
        (
            "grpc",
            kept(&[
                ("grpcIn", f(r.grpc_in)),
                ("grpcInErr", f(r.grpc_in_err)),
                ("grpcOut", f(r.grpc_out)),
            ]),
        ),
        (
            "http",
            kept(&[
                ("httpIn", f(r.http_in)),
                ("httpIn3xx", f(r.http_in_3xx)),
                ("httpIn4xx", f(r.http_in_4xx)),
                ("httpIn5xx", f(r.http_in_5xx)),
                ("httpOut", f(r.http_out)),
            ]),
        ),
        ("tcp", kept(&[("tcpIn", f(r.tcp_in)), ("tcpOut", f(r.tcp_out))])),
    ];
    entries
        .into_iter()
        .filter(|(_, k)| !k.is_empty())
        .map(|(protocol, k)| Traffic { protocol, rates: Some(k) })
        .collect()
}

/// Edge traffic; `out_total` is the (http, grpc) total leaving the edge's source node.
fn edge_traffic(e: &Edge, out_total: (f64, f64)) -> Traffic {
    let r = &e.rates;
    let pct = |part: f64, all: f64| if all > 0.0 { part / all * 100.0 } else { 0.0 };
    let (rate, percent) = (Fixed::rate, Fixed::percent);
    if r.grpc > 0.0 || r.grpc_err > 0.0 {
        let rates = kept(&[
            ("grpc", rate(r.grpc)),
            ("grpcErr", rate(r.grpc_err)),
            ("grpcPercentErr", percent(pct(r.grpc_err, r.grpc))),
            ("grpcPercentReq", percent(pct(r.grpc, out_total.1))),
        ]);
        return Traffic { protocol: "grpc", rates: Some(rates) };
    }
    if r.http > 0.0 || r.http_3xx > 0.0 || r.http_4xx > 0.0 || r.http_5xx > 0.0 {
        let rates = kept(&[
            ("http", rate(r.http)),
            ("http3xx", rate(r.http_3xx)),
            ("http4xx", rate(r.http_4xx)),
            ("http5xx", rate(r.http_5xx)),
            ("httpPercentErr", percent(pct(r.http_4xx + r.http_5xx, r.http))),
            ("httpPercentReq", percent(pct(r.http, out_total.0))),
        ]);
        return Traffic { protocol: "http", rates: Some(rates) };
    }
    if r.tcp > 0.0 {
        return Traffic { protocol: "tcp", rates: Some(vec![("tcp", rate(r.tcp))]) };
    }
    Traffic { protocol: "", rates: None }
}

impl<'a> GraphOutput<'a> {
    /// Prepares the response for `graph` (ids, traffic, boxes, order).
    pub fn new(opts: &GraphOptions, graph: &'a Graph) -> Self {
        Self::new_until(opts, graph, &|| false).unwrap_or_else(|Stopped| GraphOutput {
            // Never asked to stop, so never this.
            timestamp: opts.query_time,
            duration: opts.duration_secs,
            graph_type: opts.graph_type,
            nodes: Vec::new(),
            edges: Vec::new(),
        })
    }

    /// [`GraphOutput::new`] that asks `stop` every 1,024 nodes or edges of each pass and
    /// gives up ([`Stopped`]) once it says yes.
    pub fn new_until(
        opts: &GraphOptions,
        graph: &'a Graph,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<Self, Stopped> {
        let index = node_positions(graph);
        let hashes: Vec<Hash32> = try_map_chunks(&graph.nodes, stop, |_, c| {
            Hash32::of_each(c.len(), |i, b| b.extend_from_slice(c[i].id.as_bytes()))
        })?
        .concat();
        // Per node: the (http, grpc) rates leaving it, for the edges' percentages of requests.
        let mut out_total = vec![(0.0, 0.0); graph.nodes.len()];
        let ends: Vec<Option<(usize, usize)>> = try_map_chunks(&graph.edges, stop, |_, c| {
            c.iter()
                .map(|e| Some((*index.get(e.source.as_str())?, *index.get(e.target.as_str())?)))
                .collect::<Vec<_>>()
        })?
        .concat();
        for (e, ends) in graph.edges.iter().zip(&ends) {
            if let Some((s, _)) = ends {
                out_total[*s].0 += e.rates.http;
                out_total[*s].1 += e.rates.grpc;
            }
        }
        let mut nodes: Vec<NodeOut<'a>> = graph
            .nodes
            .iter()
            .zip(&hashes)
            .map(|(n, &id)| NodeOut {
                id,
                parent: None,
                is_group: "",
                node: Some(n),
                box_fields: None,
                traffic: node_traffic(n),
                is_find: false,
            })
            .collect();
        add_boxes(opts, &mut nodes);
        let nodes = sort_nodes(nodes);
        // Edges by source, target and id. Ids are hashed in edge order; the order is then
        // found on positions, and each edge is built once, in place. The first half of each
        // end's hash nearly always decides.
        let linked: Vec<(usize, usize, usize)> =
            ends.iter().enumerate().filter_map(|(i, e)| e.map(|(s, t)| (i, s, t))).collect();
        let ids: Vec<Hash32> = try_map_chunks(&linked, stop, |_, c| {
            Hash32::of_each(c.len(), |k, b| {
                let (i, s, t) = c[k];
                for part in [
                    hashes[s].as_bytes(),
                    &b"."[..],
                    hashes[t].as_bytes(),
                    b".",
                    graph.edges[i].protocol.as_bytes(),
                ] {
                    b.extend_from_slice(part);
                }
            })
        })?
        .concat();
        // Ranking the nodes' hashes once lets the edges sort on plain integers: (source
        // rank, target rank, position), then by id among edges with the same ends.
        let rank = hash_ranks(&hashes);
        let mut order: Vec<u128> = linked
            .iter()
            .enumerate()
            .map(|(k, &(_, s, t))| {
                (u128::from(rank[s]) << 64) | (u128::from(rank[t]) << 32) | k as u128
            })
            .collect();
        order.sort_unstable();
        for same_ends in order.chunk_by_mut(|a, b| a >> 32 == b >> 32) {
            if same_ends.len() > 1 {
                same_ends.sort_unstable_by_key(|&x| ids[x as u32 as usize]);
            }
        }
        let edges: Vec<EdgeOut<'a>> = try_map_chunks(&order, stop, |_, c| {
            c.iter()
                .map(|&x| {
                    let k = x as u32 as usize;
                    let (i, s, t) = linked[k];
                    let e = &graph.edges[i];
                    EdgeOut {
                        id: ids[k],
                        source: hashes[s],
                        target: hashes[t],
                        edge: e,
                        traffic: edge_traffic(e, out_total[s]),
                        is_unused: graph.nodes[s].is_unused,
                        is_find: false,
                    }
                })
                .collect::<Vec<_>>()
        })?
        .concat();
        Ok(GraphOutput {
            timestamp: opts.query_time,
            duration: opts.duration_secs,
            graph_type: opts.graph_type,
            nodes,
            edges,
        })
    }
}

impl<'a> NodeOut<'a> {
    pub(crate) fn box_fields(&self) -> Option<&BoxFields<'a>> {
        self.box_fields.as_ref()
    }
    pub(crate) fn namespace(&self) -> &str {
        self.node
            .map(|n| n.namespace.as_str())
            .or(self.box_fields.as_ref().map(|b| b.namespace))
            .unwrap_or("")
    }
    pub(crate) fn app(&self) -> &str {
        self.node.map(|n| n.app.as_str()).or(self.box_fields.as_ref().map(|b| b.app)).unwrap_or("")
    }
    /// The node type as serialised.
    pub fn node_type(&self) -> &'static str {
        self.node.map(|n| n.node_type.as_str()).unwrap_or(NodeType::App.as_str())
    }
}
/// Groups nodes into app boxes (`groupBy=app`, not for service graphs) or version boxes
/// (`groupBy=version`, versionedApp graphs, app nodes only); buckets of one get no box.
fn add_boxes<'a>(opts: &GraphOptions, nodes: &mut Vec<NodeOut<'a>>) {
    let (is_group, member): (&'static str, fn(&Node) -> bool) =
        match (opts.group_by, opts.graph_type) {
            (GroupBy::App, t) if t != GraphType::Service => ("app", |_| true),
            (GroupBy::Version, GraphType::VersionedApp) => {
                ("version", |n| n.node_type == NodeType::App)
            }
            _ => return,
        };
    // Members grouped by (namespace, app); the order boxes are made in does not matter,
    // the node sort does.
    let mut keyed: Vec<(&'a str, &'a str, usize)> = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, o)| o.node.map(|n| (n, i)))
        .filter(|(n, _)| appender_support::is_ok(n.app.as_str()) && member(n))
        .map(|(n, i)| (n.namespace.as_str(), n.app.as_str(), i))
        .collect();
    keyed.sort_unstable();
    let mut boxes = Vec::new();
    for group in keyed.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        if group.len() < 2 {
            continue;
        }
        let (namespace, app, _) = group[0];
        let id = Hash32::of(&[b"box_", namespace.as_bytes(), b"_", app.as_bytes()]);
        let mut bf = BoxFields {
            namespace,
            app,
            has_missing_sc: false,
            is_inaccessible: false,
            is_outside: false,
        };
        for &(_, _, m) in group {
            if let Some(n) = nodes[m].node {
                bf.has_missing_sc |= n.has_missing_sc;
                bf.is_inaccessible |= n.is_inaccessible;
                bf.is_outside |= n.is_outside;
            }
        }
        for &(_, _, m) in group {
            nodes[m].parent = Some(id);
        }
        boxes.push(NodeOut {
            id,
            parent: None,
            is_group,
            node: None,
            box_fields: Some(bf),
            traffic: Vec::new(),
            is_find: false,
        });
    }
    // Re-borrow lifetimes: box fields point into the graph, like the nodes do.
    nodes.extend(boxes);
}
