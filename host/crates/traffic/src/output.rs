//! The cytoscape JSON of a graph (reference §2.6): ids, traffic, percentages, boxes, order.

use std::collections::HashMap;

use md5::{Digest, Md5};
use serde::ser::{Serialize, SerializeMap, SerializeStruct, Serializer};

use plugin_api::{Edge, Graph, GraphType, Node, NodeType, Value};

use crate::options::{GraphOptions, GroupBy};

/// Lowercase hex MD5 of `s` (the public id of a node, edge or box).
pub fn md5_hex(s: &str) -> String {
    let d = Md5::digest(s.as_bytes());
    let mut out = String::with_capacity(32);
    for b in d {
        out.push(char::from(b"0123456789abcdef"[(b >> 4) as usize]));
        out.push(char::from(b"0123456789abcdef"[(b & 15) as usize]));
    }
    out
}

/// Keys of the spec's own fields; an appender's open field with one of these names is ignored.
const RESERVED: [&str; 26] = [
    "id", "parent", "nodeType", "namespace", "workload", "app", "version", "service", "destServices", "traffic",
    "hasCB", "hasMissingSC", "hasVS", "isDead", "isGroup", "isInaccessible", "isMisconfigured", "isOutside",
    "isRoot", "isServiceEntry", "isUnused", "source", "target", "responseTime", "isMTLS", "protocol",
];

/// One `{protocol, rates}` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Traffic {
    /// `grpc`, `http`, `tcp`, or empty.
    pub protocol: &'static str,
    /// Formatted rates, keys in alphabetical order; `None` serialises as `null`.
    pub rates: Option<Vec<(&'static str, String)>>,
}

/// A node as it is serialised (a graph node or a box).
#[derive(Debug, Clone)]
pub struct NodeOut<'a> {
    /// MD5 of the internal id (or of the box key).
    pub id: String,
    /// Box id, when grouped.
    pub parent: Option<String>,
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
struct BoxFields<'a> {
    namespace: &'a str,
    app: &'a str,
    has_missing_sc: bool,
    is_inaccessible: bool,
    is_outside: bool,
}

/// An edge as it is serialised.
#[derive(Debug, Clone)]
pub struct EdgeOut<'a> {
    /// MD5 of `<source hash>.<target hash>.<protocol>`.
    pub id: String,
    /// Source node hash.
    pub source: String,
    /// Target node hash.
    pub target: String,
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

fn fmt2(v: f64) -> String {
    format!("{v:.2}")
}
fn fmt1(v: f64) -> String {
    format!("{v:.1}")
}

fn node_traffic(n: &Node) -> Vec<Traffic> {
    let r = &n.rates;
    let mut out = Vec::new();
    let mut entry = |protocol: &'static str, rates: &[(&'static str, f64)]| {
        let kept: Vec<(&'static str, String)> = rates.iter().filter(|(_, v)| *v > 0.0).map(|(k, v)| (*k, fmt2(*v))).collect();
        if !kept.is_empty() {
            out.push(Traffic { protocol, rates: Some(kept) });
        }
    };
    entry("grpc", &[("grpcIn", r.grpc_in), ("grpcInErr", r.grpc_in_err), ("grpcOut", r.grpc_out)]);
    entry(
        "http",
        &[
            ("httpIn", r.http_in),
            ("httpIn3xx", r.http_in_3xx),
            ("httpIn4xx", r.http_in_4xx),
            ("httpIn5xx", r.http_in_5xx),
            ("httpOut", r.http_out),
        ],
    );
    entry("tcp", &[("tcpIn", r.tcp_in), ("tcpOut", r.tcp_out)]);
    out
}

/// Edge traffic; `out_total` is the same-protocol total leaving the edge's source node.
fn edge_traffic(e: &Edge, out_total: &HashMap<(&str, &str), f64>) -> Traffic {
    let r = &e.rates;
    let pct_req = |total: f64, proto: &str| {
        let all = out_total.get(&(e.source.as_str(), proto)).copied().unwrap_or(0.0);
        if all > 0.0 { total / all * 100.0 } else { 0.0 }
    };
    let pick = |protocol: &'static str, rates: Vec<(&'static str, f64)>, fmt: &[bool]| {
        let kept: Vec<(&'static str, String)> = rates
            .iter()
            .zip(fmt)
            .filter(|((_, v), _)| *v > 0.0)
            .map(|((k, v), pct)| (*k, if *pct { fmt1(*v) } else { fmt2(*v) }))
            .collect();
        Traffic { protocol, rates: Some(kept) }
    };
    if r.grpc > 0.0 || r.grpc_err > 0.0 {
        let err = if r.grpc > 0.0 { r.grpc_err / r.grpc * 100.0 } else { 0.0 };
        return pick(
            "grpc",
            vec![("grpc", r.grpc), ("grpcErr", r.grpc_err), ("grpcPercentErr", err), ("grpcPercentReq", pct_req(r.grpc, "grpc"))],
            &[false, false, true, true],
        );
    }
    if r.http > 0.0 || r.http_3xx > 0.0 || r.http_4xx > 0.0 || r.http_5xx > 0.0 {
        let err = if r.http > 0.0 { (r.http_4xx + r.http_5xx) / r.http * 100.0 } else { 0.0 };
        return pick(
            "http",
            vec![
                ("http", r.http),
                ("http3xx", r.http_3xx),
                ("http4xx", r.http_4xx),
                ("http5xx", r.http_5xx),
                ("httpPercentErr", err),
                ("httpPercentReq", pct_req(r.http, "http")),
            ],
            &[false, false, false, false, true, true],
        );
    }
    if r.tcp > 0.0 {
        return pick("tcp", vec![("tcp", r.tcp)], &[false]);
    }
    Traffic { protocol: "", rates: None }
}

impl<'a> GraphOutput<'a> {
    /// Prepares the response for `graph` (ids, traffic strings, boxes, order).
    pub fn new(opts: &GraphOptions, graph: &'a Graph) -> Self {
        let hashes: HashMap<&str, String> = graph.nodes.iter().map(|n| (n.id.as_str(), md5_hex(n.id.as_str()))).collect();
        let unused: HashMap<&str, bool> = graph.nodes.iter().map(|n| (n.id.as_str(), n.is_unused)).collect();
        let mut out_total: HashMap<(&str, &str), f64> = HashMap::new();
        for e in graph.edges.iter() {
            let r = &e.rates;
            *out_total.entry((e.source.as_str(), "http")).or_default() += r.http;
            *out_total.entry((e.source.as_str(), "grpc")).or_default() += r.grpc;
        }
        let mut nodes: Vec<NodeOut<'a>> = graph
            .nodes
            .iter()
            .map(|n| NodeOut {
                id: hashes.get(n.id.as_str()).cloned().unwrap_or_default(),
                parent: None,
                is_group: "",
                node: Some(n),
                box_fields: None,
                traffic: node_traffic(n),
            })
            .collect();
        add_boxes(opts, &mut nodes);
        nodes.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)).then_with(|| a.id.cmp(&b.id)));
        let mut edges: Vec<EdgeOut<'a>> = graph
            .edges
            .iter()
            .filter_map(|e| {
                let source = hashes.get(e.source.as_str())?.clone();
                let target = hashes.get(e.target.as_str())?.clone();
                Some(EdgeOut {
                    id: md5_hex(&format!("{source}.{target}.{}", e.protocol)),
                    source,
                    target,
                    edge: e,
                    traffic: edge_traffic(e, &out_total),
                    is_unused: unused.get(e.source.as_str()).copied().unwrap_or(false),
                })
            })
            .collect();
        edges.sort_by(|a, b| (&a.source, &a.target, &a.id).cmp(&(&b.source, &b.target, &b.id)));
        GraphOutput { timestamp: opts.query_time, duration: opts.duration_secs, graph_type: opts.graph_type, nodes, edges }
    }

    /// Pretty-printed JSON (2-space indent), as Kiali answers graphs.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }
}

impl<'a> NodeOut<'a> {
    pub(crate) fn namespace(&self) -> &str {
        self.node.map(|n| n.namespace.as_str()).or(self.box_fields.as_ref().map(|b| b.namespace)).unwrap_or("")
    }
    pub(crate) fn app(&self) -> &str {
        self.node.map(|n| n.app.as_str()).or(self.box_fields.as_ref().map(|b| b.app)).unwrap_or("")
    }
    /// The node type as serialised.
    pub fn node_type(&self) -> &'static str {
        self.node.map(|n| n.node_type.as_str()).unwrap_or(NodeType::App.as_str())
    }
}

/// Namespace, boxes first, app, version, service, workload.
fn sort_key<'b>(n: &'b NodeOut<'_>) -> (&'b str, std::cmp::Reverse<&'static str>, &'b str, &'b str, &'b str, &'b str) {
    let f = |g: fn(&Node) -> &str| n.node.map(g).unwrap_or("");
    (
        n.namespace(),
        std::cmp::Reverse(n.is_group),
        n.app(),
        f(|x| x.version.as_str()),
        f(|x| x.service.as_str()),
        f(|x| x.workload.as_str()),
    )
}

/// Groups nodes into app boxes (`groupBy=app`, not for service graphs) or version boxes
/// (`groupBy=version`, versionedApp graphs, app nodes only); buckets of one get no box.
fn add_boxes<'a>(opts: &GraphOptions, nodes: &mut Vec<NodeOut<'a>>) {
    let (is_group, member): (&'static str, fn(&Node) -> bool) = match (opts.group_by, opts.graph_type) {
        (GroupBy::App, t) if t != GraphType::Service => ("app", |_| true),
        (GroupBy::Version, GraphType::VersionedApp) => ("version", |n| n.node_type == NodeType::App),
        _ => return,
    };
    let mut buckets: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, o) in nodes.iter().enumerate() {
        let Some(n) = o.node else { continue };
        if appender_support::is_ok(n.app.as_str()) && member(n) {
            buckets.entry(format!("box_{}_{}", n.namespace, n.app)).or_default().push(i);
        }
    }
    let mut keys: Vec<&String> = buckets.keys().collect();
    keys.sort();
    let mut boxes = Vec::new();
    for key in keys {
        let members = &buckets[key];
        if members.len() < 2 {
            continue;
        }
        let id = md5_hex(key);
        let first = nodes[members[0]].node;
        let mut bf: BoxFields<'a> = BoxFields {
            namespace: "",
            app: "",
            has_missing_sc: false,
            is_inaccessible: false,
            is_outside: false,
        };
        if let Some(n) = first {
            bf.namespace = n.namespace.as_str();
            bf.app = n.app.as_str();
        }
        for &m in members {
            if let Some(n) = nodes[m].node {
                bf.has_missing_sc |= n.has_missing_sc;
                bf.is_inaccessible |= n.is_inaccessible;
                bf.is_outside |= n.is_outside;
            }
        }
        for &m in members {
            nodes[m].parent = Some(id.clone());
        }
        boxes.push(NodeOut { id, parent: None, is_group, node: None, box_fields: Some(bf), traffic: Vec::new() });
    }
    // Re-borrow lifetimes: box fields point into the graph, like the nodes do.
    nodes.extend(boxes);
}

struct Rates<'b>(&'b [(&'static str, String)]);
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
        for (k, v) in [("workload", &n.workload), ("app", &n.app), ("version", &n.version), ("service", &n.service)] {
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
            m.serialize_entry("responseTime", &format!("{rt:.0}"))?;
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
