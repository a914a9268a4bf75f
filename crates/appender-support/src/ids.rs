//! Node identities (as Kiali v0.14's `graph/graph.go` forms them, with Kiali v2's cluster
//! for nodes of clusters other than the home one: `graph/types.go`, `Id`) and the hops a
//! series is recorded on.
//!
//! Graphs of tens of thousands of edges are matched against as many series per request, so
//! the per-series path allocates nothing: a [`NodeRef`] borrows its fields from the labels
//! and writes its id into a reused buffer ([`IdBuf`]).

use plugin_api::{GraphType, LabelSet, Node, NodeType};

use crate::{UNKNOWN, is_ok, labels};

/// A node identity after Kiali's field trimming, borrowing from the labels.
///
/// The internal id is a function of these fields alone (see [`NodeRef::write_id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeRef<'a> {
    /// Kind of node.
    pub node_type: NodeType,
    /// Cluster (`unknown` when the telemetry does not say).
    pub cluster: &'a str,
    /// Whether the id carries the cluster: a known cluster other than the home one. Home
    /// and `unknown` nodes keep the ids they had before clusters (see [`NodeRef::in_cluster`]).
    pub cluster_in_id: bool,
    /// Namespace.
    pub namespace: &'a str,
    /// Workload (trimmed).
    pub workload: &'a str,
    /// App (trimmed).
    pub app: &'a str,
    /// Version (trimmed).
    pub version: &'a str,
    /// Service (trimmed).
    pub service: &'a str,
}

impl<'a> NodeRef<'a> {
    /// This identity in `cluster`, with `home` the home cluster's name: the id carries the
    /// cluster unless it is `home`, `unknown` or empty.
    pub fn in_cluster(mut self, cluster: &'a str, home: &str) -> Self {
        self.cluster = if cluster.is_empty() { UNKNOWN } else { cluster };
        self.cluster_in_id = is_ok(cluster) && cluster != home;
        self
    }

    /// Replaces `buf` with the internal id, e.g. `wl_bookinfo_productpage-v1`, or
    /// `wl_west_bookinfo_productpage-v1` in cluster `west` (not the home one).
    pub fn write_id(&self, buf: &mut String) {
        buf.clear();
        let (prefix, parts): (&str, [&str; 2]) = match self.node_type {
            NodeType::Unknown => {
                if self.cluster_in_id {
                    buf.push_str(self.cluster);
                    buf.push('_');
                }
                buf.push_str("unknown_source");
                return;
            }
            NodeType::Service => ("svc_", [self.service, ""]),
            NodeType::Workload => ("wl_", [self.workload, ""]),
            // Versioned app nodes keep the workload when they have one (see `node_ref`).
            NodeType::App if !self.workload.is_empty() => ("vapp_", [self.workload, ""]),
            NodeType::App if !self.version.is_empty() => ("vapp_", [self.app, self.version]),
            NodeType::App => ("app_", [self.app, ""]),
        };
        buf.push_str(prefix);
        if self.cluster_in_id {
            buf.push_str(self.cluster);
            buf.push('_');
        }
        buf.push_str(self.namespace);
        for p in parts.iter().filter(|p| !p.is_empty()) {
            buf.push('_');
            buf.push_str(p);
        }
    }

    /// A graph node with this identity, under internal id `id` (from [`NodeRef::write_id`]).
    pub fn to_node(&self, id: &str) -> Node {
        let mut n = Node::new_in(id, self.node_type, self.cluster, self.namespace);
        n.workload = self.workload.into();
        n.app = self.app.into();
        n.version = self.version.into();
        n.service = self.service.into();
        n
    }

    /// The internal id as a new string.
    pub fn id(&self) -> String {
        let mut s = String::new();
        self.write_id(&mut s);
        s
    }
}

/// Classifies a node from its telemetry values and trims its fields; the node is in
/// cluster `unknown` ([`NodeRef::in_cluster`] places it).
///
/// Returns `None` when none of workload, app and service is usable (Kiali fails the whole
/// request there; we skip the sample instead).
pub fn node_ref<'a>(
    namespace: &'a str,
    workload: &'a str,
    app: &'a str,
    version: &'a str,
    service: &'a str,
    graph_type: GraphType,
) -> Option<NodeRef<'a>> {
    let r = |node_type, workload, app, version, service| NodeRef {
        node_type,
        cluster: UNKNOWN,
        cluster_in_id: false,
        namespace,
        workload,
        app,
        version,
        service,
    };
    let trim = |s: &'a str| if s == UNKNOWN { "" } else { s };
    if namespace == UNKNOWN && workload == UNKNOWN && app == UNKNOWN && service.is_empty() {
        return Some(r(NodeType::Unknown, workload, app, version, service));
    }
    if workload == UNKNOWN && app == UNKNOWN && service == UNKNOWN {
        return Some(r(NodeType::Service, "", "", "", service));
    }
    if !is_ok(workload) && !is_ok(app) && !is_ok(service) {
        return None;
    }
    let service_node = || is_ok(service).then(|| r(NodeType::Service, "", "", "", service));
    let workload_node = || r(NodeType::Workload, workload, trim(app), trim(version), "");
    match graph_type {
        GraphType::Workload | GraphType::Service => {
            if is_ok(workload) {
                Some(workload_node())
            } else {
                service_node()
            }
        }
        GraphType::App | GraphType::VersionedApp => {
            let versioned = graph_type == GraphType::VersionedApp;
            if is_ok(app) {
                if versioned && is_ok(workload) {
                    Some(r(NodeType::App, workload, app, trim(version), ""))
                } else if versioned && is_ok(version) {
                    Some(r(NodeType::App, "", app, version, ""))
                } else {
                    Some(r(NodeType::App, "", app, "", ""))
                }
            } else if is_ok(workload) {
                Some(workload_node())
            } else {
                service_node()
            }
        }
    }
}

/// The edge labels of one series, read in one pass (a series has a dozen labels and the
/// graph code asks for most of them).
#[derive(Clone, Copy, Debug, Default)]
pub struct SeriesLabels<'a> {
    /// `source_workload_namespace`
    pub src_ns: Option<&'a str>,
    /// `source_workload`
    pub src_wl: Option<&'a str>,
    /// `source_app`
    pub src_app: Option<&'a str>,
    /// `source_version`
    pub src_ver: Option<&'a str>,
    /// `destination_service_namespace`
    pub dst_svc_ns: Option<&'a str>,
    /// `destination_service_name`
    pub dst_svc: Option<&'a str>,
    /// `destination_workload_namespace`
    pub dst_wl_ns: Option<&'a str>,
    /// `destination_workload`
    pub dst_wl: Option<&'a str>,
    /// `destination_app`
    pub dst_app: Option<&'a str>,
    /// `destination_version`
    pub dst_ver: Option<&'a str>,
    /// `request_protocol`
    pub protocol: Option<&'a str>,
    /// `response_code`
    pub code: Option<&'a str>,
    /// `grpc_response_status`
    pub grpc_status: Option<&'a str>,
    /// `connection_security_policy`
    pub security: Option<&'a str>,
    /// `source_cluster`
    pub src_cluster: Option<&'a str>,
    /// `destination_cluster`
    pub dst_cluster: Option<&'a str>,
}

impl<'a> SeriesLabels<'a> {
    /// Picks the known labels out of `l` (the first of a repeated name wins).
    pub fn read(l: &'a LabelSet) -> Self {
        let mut s = SeriesLabels::default();
        for (name, value) in l {
            if let Some(slot) = s.slot(name)
                && slot.is_none()
            {
                *slot = Some(value);
            }
        }
        s
    }

    /// The value of a known label name (`None` for a name this struct does not hold).
    pub fn get(&self, name: &str) -> Option<&'a str> {
        let mut copy = *self;
        copy.slot(name).and_then(|v| *v)
    }

    /// The field holding label `name`, if it is one of the known names.
    fn slot(&mut self, name: &str) -> Option<&mut Option<&'a str>> {
        // By length first: most names are told apart without comparing bytes, and a series
        // is read once per pass over tens of thousands of them.
        let (want, slot) = match name.len() {
            10 => (labels::SRC_APP, &mut self.src_app),
            13 => (labels::CODE, &mut self.code),
            14 if name.as_bytes()[7] == b'c' => (labels::SRC_CLUSTER, &mut self.src_cluster),
            14 => (labels::SRC_VER, &mut self.src_ver),
            15 if name.as_bytes()[0] == b's' => (labels::SRC_WL, &mut self.src_wl),
            15 => (labels::DST_APP, &mut self.dst_app),
            16 => (labels::PROTOCOL, &mut self.protocol),
            19 if name.as_bytes()[12] == b'c' => (labels::DST_CLUSTER, &mut self.dst_cluster),
            19 => (labels::DST_VER, &mut self.dst_ver),
            20 if name.as_bytes()[0] == b'd' => (labels::DST_WL, &mut self.dst_wl),
            20 => (labels::GRPC_STATUS, &mut self.grpc_status),
            24 => (labels::DST_SVC, &mut self.dst_svc),
            25 => (labels::SRC_NS, &mut self.src_ns),
            26 => (labels::SECURITY, &mut self.security),
            29 => (labels::DST_SVC_NS, &mut self.dst_svc_ns),
            30 => (labels::DST_WL_NS, &mut self.dst_wl_ns),
            _ => return None,
        };
        (name == want).then_some(slot)
    }

    /// The source and destination clusters, as Kiali v2 reads them
    /// (`graph/telemetry/istio/util/util.go`, `HandleClusters` and `HandleDestination`): a
    /// missing label is `unknown`, and an unknown destination cluster of a request from a
    /// known cluster to a known namespace is the source's (istio#29373 reported
    /// `destination_cluster="unknown"` for requests within one cluster).
    pub fn clusters(&self) -> (&'a str, &'a str) {
        let src = self.src_cluster.filter(|c| !c.is_empty()).unwrap_or(UNKNOWN);
        let dst = self.dst_cluster.filter(|c| !c.is_empty()).unwrap_or(UNKNOWN);
        if !is_ok(dst) && is_ok(src) && is_ok(self.dest_namespace()) {
            return (src, src);
        }
        (src, dst)
    }

    /// The source node (service always empty), if identifiable; in cluster `unknown`
    /// ([`SeriesLabels::hops`] places the nodes in their clusters).
    pub fn source(&self, graph_type: GraphType) -> Option<NodeRef<'a>> {
        let g = |v: Option<&'a str>| v.unwrap_or(UNKNOWN);
        node_ref(g(self.src_ns), g(self.src_wl), g(self.src_app), g(self.src_ver), "", graph_type)
    }

    /// The destination namespace: the service namespace, else the workload namespace.
    pub fn dest_namespace(&self) -> &'a str {
        match self.dst_svc_ns {
            Some(ns) if !ns.is_empty() => ns,
            _ => self.dst_wl_ns.unwrap_or(UNKNOWN),
        }
    }

    /// The destination node, if identifiable.
    pub fn dest(&self, graph_type: GraphType) -> Option<NodeRef<'a>> {
        let g = |v: Option<&'a str>| v.unwrap_or(UNKNOWN);
        node_ref(
            self.dest_namespace(),
            g(self.dst_wl),
            g(self.dst_app),
            g(self.dst_ver),
            g(self.dst_svc),
            graph_type,
        )
    }

    /// The hops this series is recorded on, each node in its cluster ([`Self::clusters`];
    /// `home` is the home cluster's name, whose nodes' ids carry no cluster).
    ///
    /// Without service injection one hop; with it (and a known destination service, and a
    /// destination that is not already a service node) two: source → service, service →
    /// destination. The injected service is in the destination's cluster.
    pub fn hops(&self, graph_type: GraphType, inject: bool, home: &str) -> Hops<'a> {
        let (Some(src), Some(dst)) = (self.source(graph_type), self.dest(graph_type)) else {
            return Hops { nodes: [None; 3] };
        };
        let (src_cluster, dst_cluster) = self.clusters();
        let (src, dst) = (src.in_cluster(src_cluster, home), dst.in_cluster(dst_cluster, home));
        let svc = self.dst_svc.unwrap_or("");
        if inject && dst.node_type != NodeType::Service && is_ok(svc) {
            let s = NodeRef {
                node_type: NodeType::Service,
                cluster: dst.cluster,
                cluster_in_id: dst.cluster_in_id,
                namespace: self.dest_namespace(),
                workload: "",
                app: "",
                version: "",
                service: svc,
            };
            Hops { nodes: [Some(src), Some(s), Some(dst)] }
        } else {
            Hops { nodes: [Some(src), Some(dst), None] }
        }
    }
}

/// The hops a series is recorded on: a chain of two nodes (one hop) or three (source →
/// injected service → destination), or none when an end cannot be named.
#[derive(Clone, Copy, Debug)]
pub struct Hops<'a> {
    nodes: [Option<NodeRef<'a>>; 3],
}

impl<'a> Hops<'a> {
    /// The nodes of the chain, in order.
    pub fn nodes(&self) -> impl Iterator<Item = &NodeRef<'a>> {
        self.nodes.iter().map_while(Option::as_ref)
    }
    /// The number of hops (0, 1 or 2).
    pub fn len(&self) -> usize {
        self.nodes().count().saturating_sub(1)
    }
    /// Whether an end could not be named.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The `(source, destination)` pairs.
    pub fn pairs(&self) -> impl Iterator<Item = (NodeRef<'a>, NodeRef<'a>)> + '_ {
        self.nodes.windows(2).filter_map(|w| Some((w[0]?, w[1]?)))
    }
}

/// Reused buffers for the ids of a [`Hops`] chain.
#[derive(Debug, Default)]
pub struct IdBuf {
    ids: [String; 3],
    len: usize,
}

impl IdBuf {
    /// Writes the ids of `hops`' nodes; returns `self` to read them back.
    pub fn fill(&mut self, hops: &Hops<'_>) -> &Self {
        self.len = 0;
        for (n, buf) in hops.nodes().zip(self.ids.iter_mut()) {
            n.write_id(buf);
            self.len += 1;
        }
        self
    }
    /// The ids of the node chain last filled.
    pub fn ids(&self) -> &[String] {
        &self.ids[..self.len]
    }
    /// The `(source id, destination id)` pairs of the chain last filled.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.ids().windows(2).map(|w| (w[0].as_str(), w[1].as_str()))
    }
}
