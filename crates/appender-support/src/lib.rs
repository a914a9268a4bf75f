//! Graph semantics shared by the host's traffic builder and the bundled appenders.
//!
//! The internal node id is a function of the telemetry labels and the graph type; every
//! component that keys data by node (traffic, response times, mTLS) must compute it the same
//! way, so it lives here once. Pure functions, no I/O.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use plugin_api::{GraphRequest, Matcher};

mod ids;
mod index;

pub use ids::{Hops, IdBuf, NodeRef, SeriesLabels, node_ref};
pub use index::{EdgeIndex, OnHops, node_positions};

/// Hash maps and sets for node ids and label values: graph code hashes tens of thousands
/// of short strings per request, and SipHash was a tenth of the time. foldhash is seeded
/// per process, which keeps some resistance to crafted keys.
pub use foldhash::{HashMap as FastMap, HashMapExt, HashSet as FastSet, HashSetExt};

/// The mesh's name for a value the telemetry could not resolve.
pub const UNKNOWN: &str = "unknown";

/// Non-empty and not the literal `unknown`.
pub fn is_ok(s: &str) -> bool {
    !s.is_empty() && s != UNKNOWN
}

/// The cluster whose objects describe a node or an object of cluster `cluster`: itself,
/// or `home` when it is unknown (telemetry without cluster labels, as older Istio wrote
/// it and a single cluster may still write it) or empty (data from before clusters).
/// Appenders key their lookups by this, so a node is matched in its own cluster only.
pub fn lookup_cluster<'a>(cluster: &'a str, home: &'a str) -> &'a str {
    if is_ok(cluster) { cluster } else { home }
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
    /// `source_cluster`
    pub const SRC_CLUSTER: &str = "source_cluster";
    /// `destination_cluster`
    pub const DST_CLUSTER: &str = "destination_cluster";

    /// The edge labels every graph query groups by (source and destination identity, the
    /// clusters included as Kiali v2 groups them: `graph/telemetry/istio/istio.go`). In one
    /// cluster every series of an edge has the same cluster labels (or none), so grouping by
    /// them gives the same series and numbers as before.
    pub const EDGE: [&str; 11] = [
        SRC_CLUSTER,
        SRC_NS,
        SRC_WL,
        SRC_APP,
        SRC_VER,
        DST_CLUSTER,
        DST_SVC_NS,
        DST_SVC,
        DST_WL,
        DST_APP,
        DST_VER,
    ];
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
    if namespaces.len() == 1 {
        Matcher::eq(label, namespaces[0].as_ref())
    } else {
        Matcher::re(label, &namespaces_regex(namespaces))
    }
}

/// `label !~ "ns1|ns2"` (or `label != "ns"` for one namespace).
pub fn ns_not_in(label: &str, namespaces: &[impl AsRef<str>]) -> Matcher {
    if namespaces.len() == 1 {
        Matcher::ne(label, namespaces[0].as_ref())
    } else {
        Matcher::nre(label, &namespaces_regex(namespaces))
    }
}

/// The requested namespaces of a request, as plain strings.
pub fn requested_namespaces(req: &GraphRequest) -> Vec<String> {
    req.namespaces.iter().map(|s| s.to_string()).collect()
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
        vec![
            Matcher::eq(labels::REPORTER, "destination"),
            Matcher::eq(labels::SRC_WL, UNKNOWN),
            ns_in(labels::DST_SVC_NS, &ns),
        ],
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
    use plugin_api::{GraphType, LabelSet, NodeType};

    const HOME: &str = "Kubernetes";

    fn ids_empty(h: &Hops<'_>) -> bool {
        IdBuf::default().fill(h).ids().is_empty()
    }

    #[test]
    fn ids_follow_the_reference_rules() {
        let k =
            node_ref("unknown", "unknown", "unknown", "unknown", "", GraphType::Workload).unwrap();
        assert_eq!((k.id().as_str(), k.node_type), ("unknown_source", NodeType::Unknown));
        assert_eq!(k.workload, "unknown");
        let k = node_ref("bookinfo", "unknown", "unknown", "unknown", "unknown", GraphType::App)
            .unwrap();
        assert_eq!(k.id(), "svc_bookinfo_unknown");
        let k = node_ref(
            "bookinfo",
            "productpage-v1",
            "productpage",
            "v1",
            "productpage",
            GraphType::Workload,
        )
        .unwrap();
        assert_eq!((k.id().as_str(), k.service), ("wl_bookinfo_productpage-v1", ""));
        let k = node_ref("bookinfo", "reviews-v1", "reviews", "v1", "", GraphType::VersionedApp)
            .unwrap();
        assert_eq!(k.id(), "vapp_bookinfo_reviews-v1");
        let k =
            node_ref("bookinfo", "unknown", "reviews", "v1", "reviews", GraphType::VersionedApp)
                .unwrap();
        assert_eq!(k.id(), "vapp_bookinfo_reviews_v1");
        let k = node_ref("bookinfo", "reviews-v1", "reviews", "v1", "", GraphType::App).unwrap();
        assert_eq!((k.id().as_str(), k.workload, k.version), ("app_bookinfo_reviews", "", ""));
        let k =
            node_ref("bookinfo", "details-v1", "unknown", "unknown", "", GraphType::App).unwrap();
        assert_eq!((k.id().as_str(), k.app), ("wl_bookinfo_details-v1", ""));
        let k = node_ref(
            "bookinfo",
            "unknown",
            "unknown",
            "unknown",
            "api.example.com",
            GraphType::Workload,
        )
        .unwrap();
        assert_eq!(k.id(), "svc_bookinfo_api.example.com");
        assert!(node_ref("bookinfo", "unknown", "", "", "", GraphType::Workload).is_none());
    }

    #[test]
    fn series_labels_read_every_known_name() {
        let names = [
            labels::SRC_NS,
            labels::SRC_WL,
            labels::SRC_APP,
            labels::SRC_VER,
            labels::DST_SVC_NS,
            labels::DST_SVC,
            labels::DST_WL_NS,
            labels::DST_WL,
            labels::DST_APP,
            labels::DST_VER,
            labels::PROTOCOL,
            labels::CODE,
            labels::GRPC_STATUS,
            labels::SECURITY,
            labels::SRC_CLUSTER,
            labels::DST_CLUSTER,
        ];
        // Decoys of the same lengths come first; a repeated name keeps its first value.
        let decoys: LabelSet =
            ["source_versioN", "response_flags", "xestination_app", "destination_workloaD"]
                .iter()
                .map(|n| (*n, "decoy"))
                .collect();
        let mut l = decoys.clone();
        l.extend(names.iter().map(|n| (*n, format!("v-{n}"))));
        l.push(labels::SRC_APP, "second");
        let s = SeriesLabels::read(&l);
        let got = [
            s.src_ns,
            s.src_wl,
            s.src_app,
            s.src_ver,
            s.dst_svc_ns,
            s.dst_svc,
            s.dst_wl_ns,
            s.dst_wl,
            s.dst_app,
            s.dst_ver,
            s.protocol,
            s.code,
            s.grpc_status,
            s.security,
            s.src_cluster,
            s.dst_cluster,
        ];
        for (n, v) in names.iter().zip(got) {
            assert_eq!(v, Some(format!("v-{n}").as_str()), "{n}");
        }
        assert!(
            SeriesLabels::read(&decoys).src_ver.is_none()
                && SeriesLabels::read(&decoys).dst_wl.is_none()
        );
    }

    fn call(src_cluster: Option<&str>, dst_cluster: Option<&str>) -> LabelSet {
        let mut l: LabelSet = [
            ("source_workload_namespace", "ns"),
            ("source_workload", "a-v1"),
            ("source_app", "a"),
            ("source_version", "v1"),
            ("destination_service_namespace", "ns"),
            ("destination_service_name", "b"),
            ("destination_workload_namespace", "ns"),
            ("destination_workload", "b-v1"),
            ("destination_app", "b"),
            ("destination_version", "v1"),
        ]
        .into_iter()
        .collect();
        if let Some(c) = src_cluster {
            l.push(labels::SRC_CLUSTER, c);
        }
        if let Some(c) = dst_cluster {
            l.push(labels::DST_CLUSTER, c);
        }
        l
    }

    fn chain(l: &LabelSet, inject: bool) -> Vec<(String, String)> {
        let h = SeriesLabels::read(l).hops(GraphType::Workload, inject, HOME);
        h.nodes().map(|n| (n.id(), n.cluster.to_string())).collect()
    }

    #[test]
    fn other_clusters_put_their_name_in_ids_home_and_unknown_do_not() {
        let pair = |a: &str, ac: &str, b: &str, bc: &str| {
            vec![(a.to_string(), ac.to_string()), (b.to_string(), bc.to_string())]
        };
        // No cluster labels (older telemetry): ids as before, cluster unknown.
        assert_eq!(
            chain(&call(None, None), false),
            pair("wl_ns_a-v1", "unknown", "wl_ns_b-v1", "unknown")
        );
        assert_eq!(
            chain(&call(Some(HOME), Some(HOME)), false),
            pair("wl_ns_a-v1", HOME, "wl_ns_b-v1", HOME)
        );
        // East (home) to west: one hop, the west end named with its cluster.
        assert_eq!(
            chain(&call(Some(HOME), Some("west")), false),
            pair("wl_ns_a-v1", HOME, "wl_west_ns_b-v1", "west")
        );
        // istio#29373: a missing or unknown destination cluster is the source's.
        for dst in [None, Some("unknown"), Some("")] {
            assert_eq!(
                chain(&call(Some("west"), dst), false),
                pair("wl_west_ns_a-v1", "west", "wl_west_ns_b-v1", "west"),
                "{dst:?}"
            );
        }
        // ... unless the source's is unknown too.
        assert_eq!(
            chain(&call(Some("unknown"), None), false),
            pair("wl_ns_a-v1", "unknown", "wl_ns_b-v1", "unknown")
        );
        // The injected service is in the destination's cluster.
        let c = chain(&call(Some(HOME), Some("west")), true);
        assert_eq!(c[1], ("svc_west_ns_b".to_string(), "west".to_string()));
        // An unknown caller of another cluster.
        let k = node_ref("unknown", "unknown", "unknown", "unknown", "", GraphType::Workload)
            .unwrap()
            .in_cluster("west", HOME);
        assert_eq!(k.id(), "west_unknown_source");
        assert_eq!(k.to_node("x").cluster.as_str(), "west");
        assert_eq!(lookup_cluster("unknown", HOME), HOME);
        assert_eq!(lookup_cluster("", HOME), HOME);
        assert_eq!(lookup_cluster("west", HOME), "west");
    }

    #[test]
    fn edge_index_finds_every_protocol_of_a_pair() {
        use plugin_api::{Edge, Graph, Node};
        let mut g = Graph::default();
        for id in ["a", "b", "c"] {
            g.nodes.push(Node::new(id, NodeType::Workload, "ns"));
        }
        for (s, t, p) in [
            ("a", "b", "http"),
            ("b", "c", "http"),
            ("a", "b", "tcp"),
            ("a", "c", "grpc"),
            ("ab", "c", "http"),
            ("a", "bc", "tcp"),
        ] {
            g.edges.push(Edge::new(s, t, p));
        }
        let index = EdgeIndex::new(&g);
        assert_eq!(index.edges("a", "b").collect::<Vec<_>>(), [0, 2]);
        assert_eq!(index.edges("a", "c").collect::<Vec<_>>(), [3]);
        assert_eq!(index.edges("b", "a").count(), 0);
        assert_eq!(
            index.edges("ab", "c").collect::<Vec<_>>(),
            [4],
            "ends that concatenate alike stay apart"
        );
        assert_eq!(index.edges("a", "bc").collect::<Vec<_>>(), [5]);
        assert_eq!(index.edges("x", "b").count(), 0);
    }

    #[test]
    fn namespace_matchers_escape_and_join() {
        assert_eq!(namespaces_regex(&["a.b", "c"]), "a\\.b|c");
        assert_eq!(ns_in("x", &["a"]), Matcher::eq("x", "a"));
        assert_eq!(ns_not_in("x", &["a", "b"]), Matcher::nre("x", "a|b"));
    }

    #[test]
    fn injection_splits_a_hop_through_the_service() {
        let l: LabelSet = [
            ("source_workload_namespace", "ns"),
            ("source_workload", "a-v1"),
            ("source_app", "a"),
            ("source_version", "v1"),
            ("destination_service_namespace", "ns"),
            ("destination_service_name", "b"),
            ("destination_workload", "b-v1"),
            ("destination_app", "b"),
            ("destination_version", "v1"),
        ]
        .into_iter()
        .collect();
        let h = SeriesLabels::read(&l).hops(GraphType::Workload, true, HOME);
        assert_eq!(h.len(), 2);
        let mut ids = IdBuf::default();
        let pairs: Vec<(&str, &str)> = ids.fill(&h).pairs().collect();
        assert_eq!(pairs, [("wl_ns_a-v1", "svc_ns_b"), ("svc_ns_b", "wl_ns_b-v1")]);
        let ids: Vec<String> = h.nodes().map(|n| n.id()).collect();
        assert_eq!(ids, ["wl_ns_a-v1", "svc_ns_b", "wl_ns_b-v1"]);
        let h = SeriesLabels::read(&l).hops(GraphType::Workload, false, HOME);
        assert_eq!(h.len(), 1);
        assert_eq!(
            h.pairs().map(|(s, d)| (s.id(), d.id())).collect::<Vec<_>>(),
            [("wl_ns_a-v1".to_string(), "wl_ns_b-v1".to_string())]
        );
        let nameless: LabelSet = l
            .iter()
            .filter(|(n, _)| !n.starts_with("source"))
            .chain([("source_workload_namespace", "ns")])
            .collect();
        let h = SeriesLabels::read(&nameless).hops(GraphType::Workload, true, HOME);
        assert!(h.is_empty() && ids_empty(&h));
    }
}
