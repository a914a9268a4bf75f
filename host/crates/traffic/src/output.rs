//! The cytoscape JSON of a graph (reference §2.6): ids, traffic, percentages, boxes, order.

use std::fmt;

use md5::{Digest, Md5};
use serde::ser::{Serialize, SerializeMap, SerializeStruct, Serializer};

use appender_support::{FastMap, node_positions};
use par_chunks::map_chunks;
use plugin_api::{Edge, Graph, GraphType, Node, NodeType, Value};

use crate::fixed::Fixed;
use crate::md5lanes::{LANES, digests};
use crate::options::{GraphOptions, GroupBy};

/// A public id: the lowercase hex MD5 of an internal id, a box key or an edge key. Kept
/// inline (ids are copied into every edge and compared while sorting).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hash32([u8; 32]);

impl Hash32 {
    /// The MD5 of the concatenated parts.
    pub fn of(parts: &[&[u8]]) -> Self {
        let mut h = Md5::new();
        for p in parts {
            h.update(p);
        }
        Self::hex(&h.finalize().into())
    }
    /// The id of each of `n` messages; `write(i, buf)` appends message `i` to an empty
    /// `buf`. Hashes [`LANES`] messages side by side (several times faster than one by one).
    pub fn of_each(n: usize, write: impl Fn(usize, &mut Vec<u8>)) -> Vec<Self> {
        let mut out = Vec::with_capacity(n);
        let mut bufs: [Vec<u8>; LANES] = Default::default();
        for start in (0..n).step_by(LANES) {
            let lanes = LANES.min(n - start);
            for (i, b) in bufs.iter_mut().take(lanes).enumerate() {
                b.clear();
                write(start + i, b);
            }
            let msgs: [&[u8]; LANES] = std::array::from_fn(|i| bufs[i].as_slice());
            out.extend(digests(&msgs[..lanes]).iter().map(Self::hex));
        }
        out
    }
    fn hex(digest: &[u8; 16]) -> Self {
        let mut out = [0u8; 32];
        for (i, b) in digest.iter().enumerate() {
            out[2 * i] = b"0123456789abcdef"[usize::from(b >> 4)];
            out[2 * i + 1] = b"0123456789abcdef"[usize::from(b & 15)];
        }
        Hash32(out)
    }
    /// The first 16 hex digits (64 bits), in the same order as the whole.
    pub fn prefix(&self) -> u128 {
        let mut b = [0u8; 16];
        b.copy_from_slice(&self.0[..16]);
        u128::from_be_bytes(b)
    }
    /// The 32 hex digits, as bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
    /// The 32 hex digits.
    pub fn as_str(&self) -> &str {
        // Always ASCII hex; the fallback is unreachable.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl fmt::Display for Hash32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Hash32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Hash32 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Lowercase hex MD5 of `s` (the public id of a node, edge or box).
pub fn md5_hex(s: &str) -> String {
    Hash32::of(&[s.as_bytes()]).as_str().to_string()
}

/// Keys of the spec's own fields; an appender's open field with one of these names is ignored.
pub(crate) const RESERVED: [&str; 26] = [
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
    box_fields: Option<BoxFields<'a>>,
    /// Node traffic entries.
    pub traffic: Vec<Traffic>,
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
        let index = node_positions(graph);
        let hashes: Vec<Hash32> = map_chunks(&graph.nodes, |_, c| {
            Hash32::of_each(c.len(), |i, b| b.extend_from_slice(c[i].id.as_bytes()))
        })
        .concat();
        // Per node: the (http, grpc) rates leaving it, for the edges' percentages of requests.
        let mut out_total = vec![(0.0, 0.0); graph.nodes.len()];
        let ends: Vec<Option<(usize, usize)>> = map_chunks(&graph.edges, |_, c| {
            c.iter()
                .map(|e| Some((*index.get(e.source.as_str())?, *index.get(e.target.as_str())?)))
                .collect::<Vec<_>>()
        })
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
            })
            .collect();
        add_boxes(opts, &mut nodes);
        let nodes = sort_nodes(nodes);
        // Edges by source, target and id. Ids are hashed in edge order; the order is then
        // found on positions, and each edge is built once, in place. The first half of each
        // end's hash nearly always decides.
        let linked: Vec<(usize, usize, usize)> =
            ends.iter().enumerate().filter_map(|(i, e)| e.map(|(s, t)| (i, s, t))).collect();
        let ids: Vec<Hash32> = map_chunks(&linked, |_, c| {
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
        })
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
        let edges: Vec<EdgeOut<'a>> = map_chunks(&order, |_, c| {
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
                    }
                })
                .collect::<Vec<_>>()
        })
        .concat();
        GraphOutput {
            timestamp: opts.query_time,
            duration: opts.duration_secs,
            graph_type: opts.graph_type,
            nodes,
            edges,
        }
    }
}

/// Each hash's rank among `hashes` (equal hashes share one).
fn hash_ranks(hashes: &[Hash32]) -> Vec<u32> {
    let mut by_hash: Vec<u32> = (0..hashes.len() as u32).collect();
    by_hash.sort_unstable_by(|&a, &b| {
        let (a, b) = (&hashes[a as usize], &hashes[b as usize]);
        a.prefix().cmp(&b.prefix()).then_with(|| a.cmp(b))
    });
    let mut rank = vec![0u32; hashes.len()];
    let mut r = 0;
    for (j, &i) in by_hash.iter().enumerate() {
        if j > 0 && hashes[i as usize] != hashes[by_hash[j - 1] as usize] {
            r += 1;
        }
        rank[i as usize] = r;
    }
    rank
}

/// `items` ordered by `key`, then by `tie` among equal keys.
///
/// Keys are computed once and positions sorted, then each item moves once: nodes and
/// edges are a few hundred bytes, and sorting them in place (with keys recomputed per
/// comparison) was half of the output time on a graph of 10,000 nodes.
fn sorted<T, K: Ord>(
    items: Vec<T>,
    key: impl Fn(&T) -> K,
    tie: impl Fn(&T, &T) -> std::cmp::Ordering,
) -> Vec<T> {
    let mut keyed: Vec<(K, usize)> = items.iter().map(&key).zip(0..).collect();
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| tie(&items[a.1], &items[b.1])));
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    keyed.into_iter().filter_map(|(_, i)| slots[i].take()).collect()
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

/// Nodes in [`sort_key`] order, then by id.
///
/// Comparing six strings per step was a quarter of the output time on 10,000 nodes, so the
/// sort runs on integers (namespace rank, then short names encoded exactly) and compares
/// strings only where those tie.
fn sort_nodes(nodes: Vec<NodeOut<'_>>) -> Vec<NodeOut<'_>> {
    // Distinct namespaces first (a few hundred), then their order.
    let mut rank: FastMap<&str, u32> = FastMap::default();
    for n in &nodes {
        rank.entry(sort_key(n).0).or_insert(0);
    }
    let mut namespaces: Vec<&str> = rank.keys().copied().collect();
    namespaces.sort_unstable();
    for (i, n) in namespaces.into_iter().enumerate() {
        rank.insert(n, i as u32);
    }
    let key = |n: &NodeOut<'_>| {
        let k = sort_key(n);
        let ns = rank.get(k.0).copied().unwrap_or(u32::MAX);
        // After a name too long to encode exactly, later names must not decide the order.
        let mut names = [0u128; 4];
        for (slot, s) in names.iter_mut().zip([k.2, k.3, k.4, k.5]) {
            *slot = short_name(s);
            if s.len() > 8 {
                break;
            }
        }
        (ns, std::cmp::Reverse(short_name(k.1.0)), names)
    };
    sorted(nodes, key, |a, b| sort_key(a).cmp(&sort_key(b)).then_with(|| a.id.cmp(&b.id)))
}

/// The first 8 bytes of `s` (zero-padded, big-endian), then its length capped at 9: for
/// names of up to 8 bytes this orders exactly as the names do; longer names with the same
/// first 8 bytes tie (and are compared as strings).
fn short_name(s: &str) -> u128 {
    let mut b = [0u8; 8];
    let n = s.len().min(8);
    b[..n].copy_from_slice(&s.as_bytes()[..n]);
    (u128::from(u64::from_be_bytes(b)) << 8) | s.len().min(9) as u128
}

/// Namespace, boxes first, app, version, service, workload.
#[allow(clippy::type_complexity)]
fn sort_key<'a>(
    n: &NodeOut<'a>,
) -> (&'a str, std::cmp::Reverse<&'static str>, &'a str, &'a str, &'a str, &'a str) {
    let f = |g: fn(&'a Node) -> &'a str| n.node.map(g).unwrap_or("");
    let (namespace, app) = match (&n.node, &n.box_fields) {
        (Some(x), _) => (x.namespace.as_str(), x.app.as_str()),
        (None, Some(b)) => (b.namespace, b.app),
        (None, None) => ("", ""),
    };
    (
        namespace,
        std::cmp::Reverse(n.is_group),
        app,
        f(|x| x.version.as_str()),
        f(|x| x.service.as_str()),
        f(|x| x.workload.as_str()),
    )
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
        });
    }
    // Re-borrow lifetimes: box fields point into the graph, like the nodes do.
    nodes.extend(boxes);
}

struct Rates<'b>(&'b [(&'static str, Fixed)]);
impl Serialize for Rates<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl Serialize for Traffic {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Traffic", 2)?;
        st.serialize_field("protocol", self.protocol)?;
        st.serialize_field("rates", &self.rates.as_deref().map(Rates))?;
        st.end()
    }
}

struct Extra<'b>(&'b Value);
impl Serialize for Extra<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Number(n) if n.is_finite() => s.serialize_f64(*n),
            Value::Number(_) => s.serialize_none(),
            Value::Text(t) => s.serialize_str(t.as_str()),
        }
    }
}

struct NodeData<'b, 'a>(&'b NodeOut<'a>);
impl Serialize for NodeData<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let o = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", &o.id)?;
        if let Some(p) = &o.parent {
            m.serialize_entry("parent", p)?;
        }
        m.serialize_entry("nodeType", o.node_type())?;
        m.serialize_entry("namespace", o.namespace())?;
        if let Some(b) = &o.box_fields {
            m.serialize_entry("app", b.app)?;
            flag(&mut m, "hasMissingSC", b.has_missing_sc)?;
            m.serialize_entry("isGroup", o.is_group)?;
            flag(&mut m, "isInaccessible", b.is_inaccessible)?;
            flag(&mut m, "isOutside", b.is_outside)?;
            return m.end();
        }
        let Some(n) = o.node else { return m.end() };
        for (k, v) in [
            ("workload", &n.workload),
            ("app", &n.app),
            ("version", &n.version),
            ("service", &n.service),
        ] {
            if !v.is_empty() {
                m.serialize_entry(k, v.as_str())?;
            }
        }
        if !n.dest_services.is_empty() {
            let mut names: Vec<&str> = n.dest_services.iter().map(|s| s.as_str()).collect();
            names.sort_unstable();
            m.serialize_entry("destServices", &DestServices(&names))?;
        }
        if !o.traffic.is_empty() {
            m.serialize_entry("traffic", &o.traffic)?;
        }
        flag(&mut m, "hasCB", n.has_cb)?;
        flag(&mut m, "hasMissingSC", n.has_missing_sc)?;
        flag(&mut m, "hasVS", n.has_vs)?;
        flag(&mut m, "isDead", n.is_dead)?;
        flag(&mut m, "isInaccessible", n.is_inaccessible)?;
        if !n.is_misconfigured.is_empty() {
            m.serialize_entry("isMisconfigured", n.is_misconfigured.as_str())?;
        }
        flag(&mut m, "isOutside", n.is_outside)?;
        flag(&mut m, "isRoot", n.is_root)?;
        if !n.is_service_entry.is_empty() {
            m.serialize_entry("isServiceEntry", n.is_service_entry.as_str())?;
        }
        flag(&mut m, "isUnused", n.is_unused)?;
        for f in n.extra.iter().filter(|f| !RESERVED.contains(&f.key.as_str())) {
            m.serialize_entry(f.key.as_str(), &Extra(&f.value))?;
        }
        m.end()
    }
}

fn flag<M: SerializeMap>(m: &mut M, key: &str, v: bool) -> Result<(), M::Error> {
    if v { m.serialize_entry(key, &true) } else { Ok(()) }
}

struct DestServices<'b>(&'b [&'b str]);
impl Serialize for DestServices<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for k in self.0 {
            m.serialize_entry(k, &true)?;
        }
        m.end()
    }
}

struct EdgeData<'b, 'a>(&'b EdgeOut<'a>);
impl Serialize for EdgeData<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let o = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", &o.id)?;
        m.serialize_entry("source", &o.source)?;
        m.serialize_entry("target", &o.target)?;
        m.serialize_entry("traffic", &o.traffic)?;
        if let Some(rt) = o.edge.response_time.into_option() {
            m.serialize_entry("responseTime", &Fixed::whole(rt))?;
        }
        flag(&mut m, "isMTLS", o.edge.is_mtls)?;
        flag(&mut m, "isUnused", o.is_unused)?;
        for f in o.edge.extra.iter().filter(|f| !RESERVED.contains(&f.key.as_str())) {
            m.serialize_entry(f.key.as_str(), &Extra(&f.value))?;
        }
        m.end()
    }
}

struct Wrapped<T>(T);
impl<T: Serialize> Serialize for Wrapped<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Element", 1)?;
        st.serialize_field("data", &self.0)?;
        st.end()
    }
}

struct Elements<'b, 'a>(&'b GraphOutput<'a>);
impl Serialize for Elements<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let g = self.0;
        let mut st = s.serialize_struct("Elements", 2)?;
        let nodes: Vec<Wrapped<NodeData>> = g.nodes.iter().map(|n| Wrapped(NodeData(n))).collect();
        let edges: Vec<Wrapped<EdgeData>> = g.edges.iter().map(|e| Wrapped(EdgeData(e))).collect();
        st.serialize_field("nodes", &nodes)?;
        st.serialize_field("edges", &edges)?;
        st.end()
    }
}

impl Serialize for GraphOutput<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Graph", 4)?;
        st.serialize_field("timestamp", &self.timestamp)?;
        st.serialize_field("duration", &self.duration)?;
        st.serialize_field("graphType", self.graph_type.as_str())?;
        st.serialize_field("elements", &Elements(self))?;
        st.end()
    }
}
