//! The graph's response prepared for writing (Kiali v0.14's
//! `graph/cytoscape/cytoscape.go` shape): ids, traffic, percentages,
//! boxes, order. `json.rs` and `dot.rs` write it.

use appender_support::node_positions;
use par_chunks::{Stopped, try_map_chunks};
use plugin_api::{Edge, Graph, GraphType, Node, NodeType};

use crate::boxes::add_boxes;
use crate::fixed::Fixed;
use crate::hash32::Hash32;
use crate::options::GraphOptions;
use crate::order::{hash_ranks, sort_nodes};

/// Keys of the spec's own fields; an appender's open field with one of these names is ignored.
pub(crate) const RESERVED: [&str; 29] = [
    "id",
    "parent",
    "nodeType",
    "cluster",
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
    "isBox",
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
    /// `isGroup` of a `groupBy` box (`app` or `version`), else empty.
    pub is_group: &'static str,
    /// `isBox` of a `boxBy` box (`cluster`, `namespace` or `app`), else empty.
    pub is_box: &'static str,
    /// The graph node; `None` for boxes.
    pub node: Option<&'a Node>,
    /// Box fields: node type, namespace, app and the OR-ed flags.
    pub(crate) box_fields: Option<BoxFields<'a>>,
    /// Node traffic entries.
    pub traffic: Vec<Traffic>,
    /// Selected by the request's `find` (written as `"isFind": true`).
    pub is_find: bool,
    /// Position in the graph's nodes; `None` for boxes.
    pub(crate) pos: Option<usize>,
}

#[derive(Debug, Clone)]
pub(crate) struct BoxFields<'a> {
    pub(crate) cluster: &'a str,
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
    /// Position in the graph's edges.
    pub(crate) pos: usize,
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
fn edge_traffic_of(e: &Edge, out_total: (f64, f64)) -> Traffic {
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

/// What one pass over the graph makes (scoping, issue #34, makes two).
#[derive(Clone, Copy)]
pub(crate) enum Pick<'s> {
    /// Every node, box and edge, complete and in order.
    All,
    /// What hide and focus read, unordered: every node and box without traffic, every edge
    /// without its id, its traffic only if `edge_traffic` (an edge expression reads it).
    Light {
        /// Whether edges get their traffic.
        edge_traffic: bool,
    },
    /// Only the chosen elements, complete and in order.
    Only(&'s Chosen),
}

/// The elements a scope keeps: graph positions of nodes and edges, ids of boxes.
pub(crate) struct Chosen {
    pub(crate) nodes: Vec<bool>,
    pub(crate) edges: Vec<bool>,
    pub(crate) boxes: std::collections::HashSet<Hash32>,
}

/// Per graph: what every pass needs, whatever it keeps. Node ids, edges' ends and the
/// requests leaving each node are the whole graph's, so kept elements are the full graph's.
pub(crate) struct Base {
    hashes: Vec<Hash32>,
    ends: Vec<Option<(usize, usize)>>,
    /// Per node: the (http, grpc) rates leaving it, for the edges' percentages of requests.
    out_total: Vec<(f64, f64)>,
}

impl Base {
    pub(crate) fn new(graph: &Graph, stop: &(dyn Fn() -> bool + Sync)) -> Result<Self, Stopped> {
        let index = node_positions(graph);
        let hashes: Vec<Hash32> = try_map_chunks(&graph.nodes, stop, |_, c| {
            Hash32::of_each(c.len(), |i, b| b.extend_from_slice(c[i].id.as_bytes()))
        })?
        .concat();
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
        Ok(Base { hashes, ends, out_total })
    }
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
        let base = Base::new(graph, stop)?;
        Self::pass(opts, graph, &base, Pick::All, stop)
    }

    /// One pass over `graph`: the elements `pick` asks for.
    pub(crate) fn pass(
        opts: &GraphOptions,
        graph: &'a Graph,
        base: &Base,
        pick: Pick<'_>,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<Self, Stopped> {
        let Base { hashes, ends, out_total } = base;
        let (light, chosen) = match pick {
            Pick::All => (None, None),
            Pick::Light { edge_traffic } => (Some(edge_traffic), None),
            Pick::Only(c) => (None, Some(c)),
        };
        let node_kept = |i: usize| chosen.is_none_or(|c| c.nodes[i]);
        let mut nodes: Vec<NodeOut<'a>> = graph
            .nodes
            .iter()
            .zip(hashes)
            .enumerate()
            .map(|(i, (n, &id))| NodeOut {
                id,
                parent: None,
                is_group: "",
                is_box: "",
                node: Some(n),
                box_fields: None,
                traffic: if light.is_none() && node_kept(i) { node_traffic(n) } else { Vec::new() },
                is_find: false,
                pos: Some(i),
            })
            .collect();
        // Boxes are made of every node (a box with one member kept is still a box, with
        // its flags OR-ed over all members), then the unchosen are dropped.
        add_boxes(opts, &mut nodes);
        if let Some(c) = chosen {
            nodes.retain(|n| n.pos.map_or_else(|| c.boxes.contains(&n.id), |i| c.nodes[i]));
        }
        // Edges whose two ends are nodes of the graph (and chosen, when some are).
        let linked: Vec<(usize, usize, usize)> = ends
            .iter()
            .enumerate()
            .filter(|(i, _)| chosen.is_none_or(|c| c.edges[*i]))
            .filter_map(|(i, e)| e.map(|(s, t)| (i, s, t)))
            .collect();
        if let Some(edge_traffic) = light {
            // Unordered, without ids: only hide and focus read these.
            let edges = linked
                .iter()
                .map(|&(i, s, t)| {
                    let e = &graph.edges[i];
                    EdgeOut {
                        id: hashes[s],
                        source: hashes[s],
                        target: hashes[t],
                        edge: e,
                        traffic: if edge_traffic {
                            edge_traffic_of(e, out_total[s])
                        } else {
                            Traffic { protocol: "", rates: None }
                        },
                        is_unused: graph.nodes[s].is_unused,
                        is_find: false,
                        pos: i,
                    }
                })
                .collect();
            return Ok(GraphOutput {
                timestamp: opts.query_time,
                duration: opts.duration_secs,
                graph_type: opts.graph_type,
                nodes,
                edges,
            });
        }
        // A subset sorts as the whole does: the order is total (ties broken by id), and
        // ranks and positions keep their relative order.
        let nodes = sort_nodes(nodes);
        // Edges by source, target and id. Ids are hashed in edge order; the order is then
        // found on positions, and each edge is built once, in place. The first half of each
        // end's hash nearly always decides.
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
        let rank = hash_ranks(hashes);
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
                        traffic: edge_traffic_of(e, out_total[s]),
                        is_unused: graph.nodes[s].is_unused,
                        is_find: false,
                        pos: i,
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
    pub(crate) fn cluster(&self) -> &str {
        self.node
            .map(|n| n.cluster.as_str())
            .or(self.box_fields.as_ref().map(|b| b.cluster))
            .unwrap_or("")
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
    /// The node type as serialised: a `boxBy` box is `box`, a `groupBy` box `app`.
    pub fn node_type(&self) -> &'static str {
        match self.node {
            Some(n) => n.node_type.as_str(),
            None if !self.is_box.is_empty() => "box",
            None => NodeType::App.as_str(),
        }
    }
}
