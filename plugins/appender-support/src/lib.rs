//! Graph semantics shared by the host's traffic builder and the bundled appenders.
//!
//! The internal node id is a function of the telemetry labels and the graph type; every
//! component that keys data by node (traffic, response times, mTLS) must compute it the same
//! way, so it lives here once. Pure functions, no I/O.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use plugin_api::{GraphRequest, GraphType, Label, Matcher, NodeType, label_value};

/// The mesh's name for a value the telemetry could not resolve.
pub const UNKNOWN: &str = "unknown";

/// Non-empty and not the literal `unknown`.
pub fn is_ok(s: &str) -> bool {
    !s.is_empty() && s != UNKNOWN
}

/// A node identity after Kiali's field trimming.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeKey {
    /// Internal id, e.g. `wl_bookinfo_productpage-v1`.
    pub id: String,
    /// Kind of node.
    pub node_type: NodeType,
    /// Namespace.
    pub namespace: String,
    /// Workload (trimmed).
    pub workload: String,
    /// App (trimmed).
    pub app: String,
    /// Version (trimmed).
    pub version: String,
    /// Service (trimmed).
    pub service: String,
}

/// Computes the internal node id and the trimmed fields (reference §2.4).
///
/// Returns `None` when none of workload, app and service is usable (Kiali fails the whole
/// request there; we skip the sample instead).
pub fn node_key(namespace: &str, workload: &str, app: &str, version: &str, service: &str, graph_type: GraphType) -> Option<NodeKey> {
    let key = |id: String, node_type, workload: &str, app: &str, version: &str, service: &str| NodeKey {
        id,
        node_type,
        namespace: namespace.to_string(),
        workload: workload.to_string(),
        app: app.to_string(),
        version: version.to_string(),
        service: service.to_string(),
    };
    let trim = |s: &str| if s == UNKNOWN { String::new() } else { s.to_string() };
    if namespace == UNKNOWN && workload == UNKNOWN && app == UNKNOWN && service.is_empty() {
        return Some(key("unknown_source".into(), NodeType::Unknown, workload, app, version, service));
    }
    if workload == UNKNOWN && app == UNKNOWN && service == UNKNOWN {
        return Some(key(format!("svc_{namespace}_unknown"), NodeType::Service, "", "", "", service));
    }
    if !is_ok(workload) && !is_ok(app) && !is_ok(service) {
        return None;
    }
    let service_node = || {
        if is_ok(service) {
            Some(key(format!("svc_{namespace}_{service}"), NodeType::Service, "", "", "", service))
        } else {
            None
        }
    };
    let workload_node = || key(format!("wl_{namespace}_{workload}"), NodeType::Workload, workload, &trim(app), &trim(version), "");
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
                    Some(key(format!("vapp_{namespace}_{workload}"), NodeType::App, workload, app, &trim(version), ""))
                } else if versioned && is_ok(version) {
                    Some(key(format!("vapp_{namespace}_{app}_{version}"), NodeType::App, "", app, version, ""))
                } else {
                    Some(key(format!("app_{namespace}_{app}"), NodeType::App, "", app, "", ""))
                }
            } else if is_ok(workload) {
                Some(workload_node())
            } else {
                service_node()
            }
        }
    }
}

/// The internal id of a service node.
pub fn service_id(namespace: &str, service: &str) -> String {
    format!("svc_{namespace}_{service}")
}

/// Label names of request telemetry.
pub mod labels {
    /// `source_workload_namespace`
    pub const SRC_NS: &str = "source_workload_namespace";
    /// `source_workload`
    pub const SRC_WL: &str = "source_workload";
    /// `source_app`
    pub const SRC_APP: &str = "source_app";
    /// `source_version`
    pub const SRC_VER: &str = "source_version";
    /// `destination_service_namespace`
    pub const DST_SVC_NS: &str = "destination_service_namespace";
    /// `destination_service_name`
    pub const DST_SVC: &str = "destination_service_name";
    /// `destination_workload_namespace`
    pub const DST_WL_NS: &str = "destination_workload_namespace";
    /// `destination_workload`
    pub const DST_WL: &str = "destination_workload";
    /// `destination_app`
    pub const DST_APP: &str = "destination_app";
    /// `destination_version`
    pub const DST_VER: &str = "destination_version";
    /// `request_protocol`
    pub const PROTOCOL: &str = "request_protocol";
    /// `response_code`
    pub const CODE: &str = "response_code";
    /// `grpc_response_status`
    pub const GRPC_STATUS: &str = "grpc_response_status";
    /// `response_flags`
    pub const FLAGS: &str = "response_flags";
    /// `connection_security_policy`
    pub const SECURITY: &str = "connection_security_policy";
    /// `reporter`
    pub const REPORTER: &str = "reporter";

    /// The edge labels every graph query groups by (source and destination identity).
    pub const EDGE: [&str; 9] = [SRC_NS, SRC_WL, SRC_APP, SRC_VER, DST_SVC_NS, DST_SVC, DST_WL, DST_APP, DST_VER];
}

/// A regular expression matching exactly the given namespaces (`a|b`), regex-escaped.
pub fn namespaces_regex<S: AsRef<str>>(namespaces: &[S]) -> String {
    namespaces.iter().map(|n| escape_regex(n.as_ref())).collect::<Vec<_>>().join("|")
}

/// Escapes the characters RE2 treats as syntax.
pub fn escape_regex(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `label =~ "ns1|ns2"` (or `label = "ns"` for one namespace).
pub fn ns_in(label: &str, namespaces: &[impl AsRef<str>]) -> Matcher {
    if namespaces.len() == 1 { Matcher::eq(label, namespaces[0].as_ref()) } else { Matcher::re(label, &namespaces_regex(namespaces)) }
}

/// `label !~ "ns1|ns2"` (or `label != "ns"` for one namespace).
pub fn ns_not_in(label: &str, namespaces: &[impl AsRef<str>]) -> Matcher {
    if namespaces.len() == 1 { Matcher::ne(label, namespaces[0].as_ref()) } else { Matcher::nre(label, &namespaces_regex(namespaces)) }
}

/// The requested namespaces of a request, as plain strings.
pub fn requested_namespaces(req: &GraphRequest) -> Vec<String> {
    req.namespaces.iter().map(|s| s.to_string()).collect()
}

/// The source node of a series (service always empty), if identifiable.
pub fn source_key(l: &[Label], graph_type: GraphType) -> Option<NodeKey> {
    let g = |n| label_value(l, n).unwrap_or(UNKNOWN);
    node_key(g(labels::SRC_NS), g(labels::SRC_WL), g(labels::SRC_APP), g(labels::SRC_VER), "", graph_type)
}

/// The destination namespace of a series: the service namespace, else the workload namespace.
pub fn dest_namespace(l: &[Label]) -> &str {
    match label_value(l, labels::DST_SVC_NS) {
        Some(ns) if !ns.is_empty() => ns,
        _ => label_value(l, labels::DST_WL_NS).unwrap_or(UNKNOWN),
    }
}

/// The destination node of a series, if identifiable.
pub fn dest_key(l: &[Label], graph_type: GraphType) -> Option<NodeKey> {
    let g = |n| label_value(l, n).unwrap_or(UNKNOWN);
    node_key(dest_namespace(l), g(labels::DST_WL), g(labels::DST_APP), g(labels::DST_VER), g(labels::DST_SVC), graph_type)
}

/// The hops a series is recorded on: `(source, destination)` pairs of nodes.
///
/// Without service injection one hop; with it (and a known destination service, and a
/// destination that is not already a service node) two: source → service, service → destination.
pub fn hops(l: &[Label], graph_type: GraphType, inject: bool) -> Vec<(NodeKey, NodeKey)> {
    let (Some(src), Some(dst)) = (source_key(l, graph_type), dest_key(l, graph_type)) else {
        return Vec::new();
    };
    let svc = label_value(l, labels::DST_SVC).unwrap_or("");
    if inject && dst.node_type != NodeType::Service && is_ok(svc) {
        let ns = dest_namespace(l);
        let s = NodeKey {
            id: service_id(ns, svc),
            node_type: NodeType::Service,
            namespace: ns.to_string(),
            workload: String::new(),
            app: String::new(),
            version: String::new(),
            service: svc.to_string(),
        };
        vec![(src, s.clone()), (s, dst)]
    } else {
        vec![(src, dst)]
    }
}

/// Whether edges into the mesh namespace are left out: `includeMesh` is false and the mesh
/// namespace itself was not requested.
pub fn excludes_mesh(req: &GraphRequest) -> bool {
    !req.include_mesh && !req.namespaces.contains(&req.mesh_namespace)
}

/// The three request families of a namespace-level query, each counted once (source reports,
/// plus destination reports of callers outside the mesh): from outside the mesh into the
/// namespaces, from other namespaces into them, and from inside them.
pub fn request_families(req: &GraphRequest) -> [Vec<Matcher>; 3] {
    let ns = requested_namespaces(req);
    let mut inside = vec![Matcher::eq(labels::REPORTER, "source"), ns_in(labels::SRC_NS, &ns)];
    if excludes_mesh(req) {
        inside.push(Matcher::ne(labels::DST_SVC_NS, req.mesh_namespace.as_str()));
    }
    [
        vec![Matcher::eq(labels::REPORTER, "destination"), Matcher::eq(labels::SRC_WL, UNKNOWN), ns_in(labels::DST_SVC_NS, &ns)],
        vec![
            Matcher::eq(labels::REPORTER, "source"),
            ns_not_in(labels::SRC_NS, &ns),
            Matcher::ne(labels::SRC_WL, UNKNOWN),
            ns_in(labels::DST_SVC_NS, &ns),
        ],
        inside,
    ]
}

/// The edge labels as an owned group-by list, plus `extra`.
pub fn edge_group_by(extra: &[&str]) -> Vec<String> {
    labels::EDGE.iter().chain(extra).map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_reference_rules() {
        let k = node_key("unknown", "unknown", "unknown", "unknown", "", GraphType::Workload).unwrap();
        assert_eq!((k.id.as_str(), k.node_type), ("unknown_source", NodeType::Unknown));
        assert_eq!(k.workload, "unknown");
        let k = node_key("bookinfo", "unknown", "unknown", "unknown", "unknown", GraphType::App).unwrap();
        assert_eq!(k.id, "svc_bookinfo_unknown");
        let k = node_key("bookinfo", "productpage-v1", "productpage", "v1", "productpage", GraphType::Workload).unwrap();
        assert_eq!((k.id.as_str(), k.service.as_str()), ("wl_bookinfo_productpage-v1", ""));
        let k = node_key("bookinfo", "reviews-v1", "reviews", "v1", "", GraphType::VersionedApp).unwrap();
        assert_eq!(k.id, "vapp_bookinfo_reviews-v1");
        let k = node_key("bookinfo", "unknown", "reviews", "v1", "reviews", GraphType::VersionedApp).unwrap();
        assert_eq!(k.id, "vapp_bookinfo_reviews_v1");
        let k = node_key("bookinfo", "reviews-v1", "reviews", "v1", "", GraphType::App).unwrap();
        assert_eq!((k.id.as_str(), k.workload.as_str(), k.version.as_str()), ("app_bookinfo_reviews", "", ""));
        let k = node_key("bookinfo", "details-v1", "unknown", "unknown", "", GraphType::App).unwrap();
        assert_eq!((k.id.as_str(), k.app.as_str()), ("wl_bookinfo_details-v1", ""));
        let k = node_key("bookinfo", "unknown", "unknown", "unknown", "api.example.com", GraphType::Workload).unwrap();
        assert_eq!(k.id, "svc_bookinfo_api.example.com");
        assert!(node_key("bookinfo", "unknown", "", "", "", GraphType::Workload).is_none());
    }

    #[test]
    fn namespace_matchers_escape_and_join() {
        assert_eq!(namespaces_regex(&["a.b", "c"]), "a\\.b|c");
        assert_eq!(ns_in("x", &["a"]), Matcher::eq("x", "a"));
        assert_eq!(ns_not_in("x", &["a", "b"]), Matcher::nre("x", "a|b"));
    }

    #[test]
    fn injection_splits_a_hop_through_the_service() {
        let l: Vec<Label> = [
            ("source_workload_namespace", "ns"), ("source_workload", "a-v1"), ("source_app", "a"), ("source_version", "v1"),
            ("destination_service_namespace", "ns"), ("destination_service_name", "b"), ("destination_workload", "b-v1"),
            ("destination_app", "b"), ("destination_version", "v1"),
        ]
        .into_iter()
        .map(|(n, v)| Label::new(n, v))
        .collect();
        let h = hops(&l, GraphType::Workload, true);
        assert_eq!(h.len(), 2);
        assert_eq!((h[0].1.id.as_str(), h[1].1.id.as_str()), ("svc_ns_b", "wl_ns_b-v1"));
        assert_eq!(hops(&l, GraphType::Workload, false).len(), 1);
    }
}
