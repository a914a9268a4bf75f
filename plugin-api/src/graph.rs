//! The traffic graph: the stable type the host builds, appenders transform and the host
//! serialises. Node and edge fields follow the spec's NodeData / EdgeData.

use std::collections::HashMap;

use abi_stable::{
    StableAbi,
    std_types::{ROption, RString, RVec},
};

use crate::types::{Field, Value};

/// The kind of a graph node (`nodeType` in the JSON).
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeType {
    /// A source or destination the telemetry could not name (`unknown`).
    Unknown,
    /// An app (or versioned app) node.
    App,
    /// A service node.
    Service,
    /// A workload node.
    Workload,
}

impl NodeType {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeType::Unknown => "unknown",
            NodeType::App => "app",
            NodeType::Service => "service",
            NodeType::Workload => "workload",
        }
    }
}

/// The requested graph type (`graphType`).
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GraphType {
    /// `app`: one node per app.
    App,
    /// `versionedApp`: one node per app version.
    VersionedApp,
    /// `service`: service nodes (plus root workloads).
    Service,
    /// `workload`: one node per workload.
    Workload,
}

impl GraphType {
    /// The spelling used in query parameters and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            GraphType::App => "app",
            GraphType::VersionedApp => "versionedApp",
            GraphType::Service => "service",
            GraphType::Workload => "workload",
        }
    }
}

/// Per-node traffic rates (requests or bytes per second), summed over samples.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Default)]
pub struct NodeRates {
    /// `grpcIn`
    pub grpc_in: f64,
    /// `grpcInErr`
    pub grpc_in_err: f64,
    /// `grpcOut`
    pub grpc_out: f64,
    /// `httpIn`
    pub http_in: f64,
    /// `httpIn3xx`
    pub http_in_3xx: f64,
    /// `httpIn4xx`
    pub http_in_4xx: f64,
    /// `httpIn5xx`
    pub http_in_5xx: f64,
    /// `httpOut`
    pub http_out: f64,
    /// `tcpIn`
    pub tcp_in: f64,
    /// `tcpOut`
    pub tcp_out: f64,
}

impl NodeRates {
    /// True when any incoming or outgoing rate is above zero.
    pub fn has_traffic(&self) -> bool {
        [self.grpc_in, self.grpc_out, self.http_in, self.http_out, self.tcp_in, self.tcp_out]
            .iter()
            .any(|v| *v > 0.0)
    }
    /// True when any incoming error rate is above zero.
    pub fn has_errors_in(&self) -> bool {
        self.grpc_in_err > 0.0 || self.http_in_4xx > 0.0 || self.http_in_5xx > 0.0
    }
}

/// Per-edge traffic rates.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Default)]
pub struct EdgeRates {
    /// `grpc`
    pub grpc: f64,
    /// `grpcErr`
    pub grpc_err: f64,
    /// `http`
    pub http: f64,
    /// `http3xx`
    pub http_3xx: f64,
    /// `http4xx`
    pub http_4xx: f64,
    /// `http5xx`
    pub http_5xx: f64,
    /// `tcp` (bytes per second)
    pub tcp: f64,
}

/// One node of the traffic graph.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct Node {
    /// Internal id, e.g. `wl_bookinfo_productpage-v1`; the JSON id is its MD5.
    pub id: RString,
    /// Node kind.
    pub node_type: NodeType,
    /// The cluster the node runs in, from `source_cluster` / `destination_cluster`;
    /// `unknown` when the telemetry does not say.
    pub cluster: RString,
    /// Namespace.
    pub namespace: RString,
    /// Workload name, or empty.
    pub workload: RString,
    /// App label value, or empty.
    pub app: RString,
    /// Version label value, or empty.
    pub version: RString,
    /// Service name, or empty.
    pub service: RString,
    /// Names of the services this node was reached through (`destServices`).
    pub dest_services: RVec<RString>,
    /// Summed traffic.
    pub rates: NodeRates,
    /// `hasCB`: a circuit breaker applies.
    pub has_cb: bool,
    /// `hasMissingSC`: a workload lacks the sidecar.
    pub has_missing_sc: bool,
    /// `hasVS`: a VirtualService applies.
    pub has_vs: bool,
    /// `isDead`: the workload has no pods.
    pub is_dead: bool,
    /// `isInaccessible`
    pub is_inaccessible: bool,
    /// `isOutside`: outside the requested namespaces.
    pub is_outside: bool,
    /// `isRoot`: sends traffic but receives none.
    pub is_root: bool,
    /// `isUnused`: a workload that saw no traffic.
    pub is_unused: bool,
    /// `isMisconfigured`, e.g. `labels=[version]`; empty when fine.
    pub is_misconfigured: RString,
    /// `isServiceEntry`: `MESH_EXTERNAL` or `MESH_INTERNAL`; empty when not one.
    pub is_service_entry: RString,
    /// Fields added by appenders; each reaches the JSON under its key.
    pub extra: RVec<Field>,
}

impl Node {
    /// A node with the given identity and no traffic or flags, in cluster `unknown`.
    pub fn new(id: &str, node_type: NodeType, namespace: &str) -> Self {
        Self::new_in(id, node_type, UNKNOWN_CLUSTER, namespace)
    }

    /// A node with the given identity and no traffic or flags, in `cluster`.
    pub fn new_in(id: &str, node_type: NodeType, cluster: &str, namespace: &str) -> Self {
        Node {
            id: id.into(),
            node_type,
            cluster: cluster.into(),
            namespace: namespace.into(),
            workload: RString::new(),
            app: RString::new(),
            version: RString::new(),
            service: RString::new(),
            dest_services: RVec::new(),
            rates: NodeRates::default(),
            has_cb: false,
            has_missing_sc: false,
            has_vs: false,
            is_dead: false,
            is_inaccessible: false,
            is_outside: false,
            is_root: false,
            is_unused: false,
            is_misconfigured: RString::new(),
            is_service_entry: RString::new(),
            extra: RVec::new(),
        }
    }

    /// Sets (or replaces) an open field.
    pub fn set_field(&mut self, key: &str, value: Value) {
        set_field(&mut self.extra, key, value)
    }
}

/// The cluster of a node whose telemetry names none.
pub const UNKNOWN_CLUSTER: &str = "unknown";

/// One directed edge, keyed by (source, target, protocol).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct Edge {
    /// Internal id of the source node.
    pub source: RString,
    /// Internal id of the target node.
    pub target: RString,
    /// `http`, `grpc`, `tcp`, or empty for edges to unused nodes.
    pub protocol: RString,
    /// Summed traffic.
    pub rates: EdgeRates,
    /// Response time in milliseconds, when the responseTime appender set one.
    pub response_time: ROption<f64>,
    /// `isMTLS`
    pub is_mtls: bool,
    /// Fields added by appenders; each reaches the JSON under its key.
    pub extra: RVec<Field>,
}

impl Edge {
    /// An edge with no traffic.
    pub fn new(source: &str, target: &str, protocol: &str) -> Self {
        Edge {
            source: source.into(),
            target: target.into(),
            protocol: protocol.into(),
            rates: EdgeRates::default(),
            response_time: ROption::RNone,
            is_mtls: false,
            extra: RVec::new(),
        }
    }

    /// Sets (or replaces) an open field.
    pub fn set_field(&mut self, key: &str, value: Value) {
        set_field(&mut self.extra, key, value)
    }
}

fn set_field(fields: &mut RVec<Field>, key: &str, value: Value) {
    if let Some(f) = fields.iter_mut().find(|f| f.key.as_str() == key) {
        f.value = value;
    } else {
        fields.push(Field { key: key.into(), value });
    }
}

/// The traffic graph: nodes (unique internal ids) and edges between them.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Default)]
pub struct Graph {
    /// Nodes, unique by `id`.
    pub nodes: RVec<Node>,
    /// Edges, unique by (source, target, protocol).
    pub edges: RVec<Edge>,
}

impl Graph {
    /// Map from internal node id to its index in `nodes`.
    pub fn node_index(&self) -> HashMap<&str, usize> {
        self.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect()
    }

    /// Number of outgoing edges per node id.
    pub fn out_degree(&self) -> HashMap<&str, usize> {
        let mut m = HashMap::new();
        for e in self.edges.iter() {
            *m.entry(e.source.as_str()).or_insert(0) += 1;
        }
        m
    }

    /// Removes the nodes for which `keep` is false, and every edge touching them.
    pub fn retain_nodes(&mut self, mut keep: impl FnMut(&Node) -> bool) {
        // In place: rebuilding the list pushed every kept node through a dozen regrowths.
        let mut removed = std::collections::HashSet::new();
        self.nodes.retain(|n| {
            let k = keep(n);
            if !k {
                removed.insert(n.id.clone());
            }
            k
        });
        if !removed.is_empty() {
            self.edges.retain(|e| !removed.contains(&e.source) && !removed.contains(&e.target));
        }
    }
}

/// The parameters of the graph request, as appenders see them.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct GraphRequest {
    /// The requested namespaces (one for node graphs).
    pub namespaces: RVec<RString>,
    /// The requested graph type.
    pub graph_type: GraphType,
    /// True for node-detail graphs (app, versioned app, service, workload).
    pub node_graph: bool,
    /// Requested duration in seconds (the query window).
    pub duration_secs: u64,
    /// Evaluation time, Unix seconds.
    pub query_time: i64,
    /// `includeMesh`
    pub include_mesh: bool,
    /// Whether service nodes were injected.
    pub inject_service_nodes: bool,
    /// `responseTimeQuantile`, in (0, 1).
    pub response_time_quantile: f64,
    /// The mesh's infrastructure namespace (`cluster.mesh_namespace`).
    pub mesh_namespace: RString,
    /// The app label name (`cluster.app_label`).
    pub app_label: RString,
    /// The version label name (`cluster.version_label`).
    pub version_label: RString,
    /// The identity domain, e.g. `svc.cluster.local`.
    pub identity_domain: RString,
    /// Request-duration histogram base name the store has, e.g.
    /// `istio_request_duration_milliseconds`.
    pub duration_metric: RString,
    /// Multiply values of `duration_metric` by this to get milliseconds (1 or 1000).
    pub duration_to_ms: f64,
    /// The name of the cluster meshlens runs in (`cluster.name`, default `Kubernetes`).
    /// Its nodes' ids carry no cluster; an appender looks up a node of cluster `unknown`
    /// here.
    pub home_cluster: RString,
}
