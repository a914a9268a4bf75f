//! A compliance kit for graph appenders: a test helper, no part of the ABI.
//!
//! Any appender crate can load its built library and run [`check`] on each appender it
//! carries, through the same stable boundary the host uses:
//!
//! ```no_run
//! let lib = plugin_api::compliance::cdylib_path("my_appender");
//! for a in plugin_api::compliance::load_appenders(&lib).unwrap() {
//!     plugin_api::compliance::check(&a).unwrap();
//! }
//! ```
//!
//! It checks that the appender declares its inputs for every kind of request, survives an
//! empty graph, leaves nodes of namespaces other than the requested ones alone, and does not
//! panic on series, workloads or config objects that lack labels or fields.

use std::path::{Path, PathBuf};

use abi_stable::{
    library::lib_header_from_path,
    std_types::{ROption, RResult, RString, RVec},
};

use crate::{
    AppenderBox, AppenderData, ClusterData, ConfigObject, Edge, Graph, GraphRequest, GraphType,
    Label, LabelSet, Node, NodeType, PluginMod_Ref, QueryResult, Sample, Series, ServiceInfo,
    WorkloadInfo,
};

/// The preamble of an appender crate's boundary tests: `appender()` (the first appender
/// of the built library `lib`, loaded once per test binary), `apply()` (panics with the
/// appender's error) and the test `passes_the_compliance_kit`.
///
/// ```text
/// // tests/boundary.rs of the crate that builds libmy_appender.so
/// plugin_api::appender_boundary_tests!("my_appender");
/// ```
#[macro_export]
macro_rules! appender_boundary_tests {
    ($lib:literal) => {
        fn appender() -> &'static $crate::AppenderBox {
            static A: ::std::sync::OnceLock<$crate::AppenderBox> = ::std::sync::OnceLock::new();
            A.get_or_init(|| {
                let path = $crate::compliance::cdylib_path($lib);
                let mut all = $crate::compliance::load_appenders(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                assert!(!all.is_empty(), "{} carries no appender", path.display());
                all.remove(0)
            })
        }

        #[allow(dead_code)]
        fn apply(req: &$crate::GraphRequest, data: &$crate::AppenderData, g: &mut $crate::Graph) {
            if let $crate::abi_stable::std_types::RResult::RErr(e) = appender().apply(req, data, g)
            {
                panic!("apply failed: {e}");
            }
        }

        #[test]
        fn passes_the_compliance_kit() {
            if let Err(problems) = $crate::compliance::check(appender()) {
                panic!("compliance: {problems:#?}");
            }
        }
    };
}

/// A label list from `(name, value)` pairs.
pub fn labels(pairs: &[(&str, &str)]) -> RVec<Label> {
    pairs.iter().map(|(n, v)| Label::new(*n, *v)).collect()
}

/// A series' labels from `(name, value)` pairs.
pub fn label_set(pairs: &[(&str, &str)]) -> LabelSet {
    pairs.iter().copied().collect()
}

/// The namespace the kit's requests ask for.
pub const REQUESTED: &str = "compliance-a";
/// A namespace the kit's requests do not ask for.
pub const OTHER: &str = "compliance-b";
/// The home cluster of the kit's requests; its cluster data is of this cluster, and its
/// graph's nodes are of cluster `unknown` (telemetry without cluster labels), which
/// appenders look up in the home cluster.
pub const HOME_CLUSTER: &str = "Kubernetes";

/// `target/<profile>/lib<name>.so` (platform naming) of the running test binary's build, or
/// the copy in `deps/` when that one is newer (a test build does not always refresh the
/// top-level copy).
pub fn cdylib_path(lib_name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    // target/<profile>/deps/<test-binary>
    let dir = exe.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();
    let file =
        format!("{}{lib_name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let (top, deps) = (dir.join(&file), dir.join("deps").join(&file));
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match (modified(&deps), modified(&top)) {
        (Some(d), Some(t)) if d > t => deps,
        (Some(_), None) => deps,
        _ => top,
    }
}

/// Loads a plugin library and returns its appenders.
pub fn load_appenders(path: &Path) -> Result<Vec<AppenderBox>, String> {
    let module = lib_header_from_path(path)
        .and_then(|h| h.init_root_module::<PluginMod_Ref>())
        .map_err(|e| format!("cannot load {}: {e}", path.display()))?;
    match (module.components())() {
        RResult::ROk(c) => Ok(c.appenders.into_iter().collect()),
        RResult::RErr(e) => Err(format!("cannot list components: {}", e.message)),
    }
}

/// A request for `graph_type` over [`REQUESTED`].
pub fn request(graph_type: GraphType, node_graph: bool) -> GraphRequest {
    GraphRequest {
        namespaces: vec![RString::from(REQUESTED)].into_iter().collect(),
        graph_type,
        node_graph,
        duration_secs: 600,
        query_time: 1_700_000_000,
        include_mesh: false,
        inject_service_nodes: graph_type == GraphType::Service,
        response_time_quantile: 0.95,
        mesh_namespace: "istio-system".into(),
        app_label: "app".into(),
        version_label: "version".into(),
        identity_domain: "svc.cluster.local".into(),
        duration_metric: "istio_request_duration_milliseconds".into(),
        duration_to_ms: 1.0,
        home_cluster: HOME_CLUSTER.into(),
    }
}

fn workload_node(ns: &str, name: &str, app: &str, version: &str) -> Node {
    let mut n = Node::new(&format!("wl_{ns}_{name}"), NodeType::Workload, ns);
    n.workload = name.into();
    n.app = app.into();
    n.version = version.into();
    n
}

/// A small workload graph: `a` calls `b` in [`REQUESTED`], `b` calls `c` in [`OTHER`], and
/// `d` in [`OTHER`] calls `a`; a service node `s` in [`OTHER`] with traffic.
pub fn sample_graph() -> Graph {
    let mut g = Graph::default();
    let mut a = workload_node(REQUESTED, "a-v1", "a", "v1");
    let mut b = workload_node(REQUESTED, "b-v1", "b", "v1");
    let mut c = workload_node(OTHER, "c-v1", "c", "v1");
    let mut d = workload_node(OTHER, "d-v1", "d", "v1");
    let mut s = Node::new(&format!("svc_{OTHER}_s"), NodeType::Service, OTHER);
    s.service = "s".into();
    a.rates.http_in = 1.0;
    a.rates.http_out = 1.0;
    b.rates.http_in = 1.0;
    b.rates.http_out = 2.0;
    b.dest_services.push("b".into());
    c.rates.http_in = 1.0;
    c.dest_services.push("c".into());
    d.rates.http_out = 1.0;
    s.rates.http_in = 1.0;
    s.rates.http_in_5xx = 1.0;
    for (src, dst) in [(&a, &b), (&b, &c), (&d, &a), (&b, &s)] {
        let mut e = Edge::new(src.id.as_str(), dst.id.as_str(), "http");
        e.rates.http = 1.0;
        g.edges.push(e);
    }
    g.nodes = vec![a, b, c, d, s].into_iter().collect();
    g
}

/// Series that look like real telemetry for the sample graph's edges.
fn telemetry() -> RVec<Series> {
    let edge = |sns: &str, sw: &str, sa: &str, dns: &str, dw: &str, da: &str, svc: &str| Series {
        labels: label_set(&[
            ("source_workload_namespace", sns),
            ("source_workload", sw),
            ("source_app", sa),
            ("source_version", "v1"),
            ("destination_service_namespace", dns),
            ("destination_service_name", svc),
            ("destination_workload_namespace", dns),
            ("destination_workload", dw),
            ("destination_app", da),
            ("destination_version", "v1"),
            ("request_protocol", "http"),
            ("response_code", "200"),
            ("connection_security_policy", "mutual_tls"),
            ("le", "+Inf"),
        ]),
        samples: vec![Sample { t: 1_700_000_000.0, v: 1.0 }].into_iter().collect(),
    };
    vec![
        edge(REQUESTED, "a-v1", "a", REQUESTED, "b-v1", "b", "b"),
        edge(REQUESTED, "b-v1", "b", OTHER, "c-v1", "c", "c"),
        edge(OTHER, "d-v1", "d", REQUESTED, "a-v1", "a", "a"),
    ]
    .into_iter()
    .collect()
}

fn cluster(with_labels: bool) -> ClusterData {
    let wl = |ns: &str, name: &str, app: &str, version: &str, pods: u32, sc: bool| WorkloadInfo {
        cluster: HOME_CLUSTER.into(),
        namespace: ns.into(),
        name: name.into(),
        kind: "Deployment".into(),
        labels: if with_labels {
            labels(&[("app", app), ("version", version)])
        } else {
            RVec::new()
        },
        pod_count: pods,
        has_sidecar: sc,
        ..Default::default()
    };
    let obj = |kind: &str, ns: &str, spec: &str| ConfigObject {
        cluster: HOME_CLUSTER.into(),
        kind: kind.into(),
        namespace: ns.into(),
        name: "x".into(),
        labels: RVec::new(),
        spec_json: spec.into(),
    };
    let objects = if with_labels {
        vec![
            obj(
                "DestinationRule",
                REQUESTED,
                r#"{"host":"c.compliance-b.svc.cluster.local","trafficPolicy":{"connectionPool":{}}}"#,
            ),
            obj("VirtualService", REQUESTED, r#"{"hosts":["s.compliance-b.svc.cluster.local"]}"#),
            obj(
                "ServiceEntry",
                REQUESTED,
                r#"{"hosts":["other.example.com"],"location":"MESH_EXTERNAL"}"#,
            ),
        ]
    } else {
        vec![
            obj("DestinationRule", REQUESTED, "{}"),
            obj("VirtualService", REQUESTED, r#"{"hosts":[1, null]}"#),
            obj("ServiceEntry", REQUESTED, "not json"),
            obj(
                "DestinationRule",
                REQUESTED,
                r#"{"host":"b","subsets":[{"trafficPolicy":{"outlierDetection":{}}}]}"#,
            ),
        ]
    };
    ClusterData {
        workloads: vec![
            wl(REQUESTED, "a-v1", "a", "v1", 1, true),
            wl(REQUESTED, "b-v1", "b", "v1", 1, false),
            wl(REQUESTED, "e-v1", "e", "v1", 0, false),
        ]
        .into_iter()
        .collect(),
        services: vec![ServiceInfo {
            cluster: HOME_CLUSTER.into(),
            namespace: REQUESTED.into(),
            name: "b".into(),
            labels: RVec::new(),
        }]
        .into_iter()
        .collect(),
        objects: objects.into_iter().collect(),
    }
}

fn data_for(n_queries: usize, series: RVec<Series>, with_labels: bool) -> AppenderData {
    AppenderData {
        cluster: cluster(with_labels),
        results: (0..n_queries).map(|_| QueryResult { series: series.clone() }).collect(),
    }
}

fn broken_series() -> RVec<Series> {
    vec![
        Series::default(),
        Series { labels: label_set(&[("source_workload", "a-v1")]), samples: RVec::new() },
        Series {
            labels: label_set(&[("destination_service_name", "unknown"), ("response_code", "")]),
            samples: vec![Sample { t: 0.0, v: f64::NAN }].into_iter().collect(),
        },
    ]
    .into_iter()
    .collect()
}

/// Runs every check on one appender; the error lists each failure.
pub fn check(appender: &AppenderBox) -> Result<(), Vec<String>> {
    let mut failures = Vec::new();
    let name = match appender.name() {
        RResult::ROk(n) if !n.is_empty() => n.to_string(),
        RResult::ROk(_) => return Err(vec!["the appender has an empty name".into()]),
        RResult::RErr(e) => return Err(vec![format!("name() failed: {}", e.message)]),
    };
    let mut fail = |m: String| failures.push(format!("{name}: {m}"));
    for gt in [GraphType::App, GraphType::VersionedApp, GraphType::Service, GraphType::Workload] {
        for node_graph in [false, true] {
            let req = request(gt, node_graph);
            let inputs = match appender.inputs(&req) {
                RResult::ROk(i) => i,
                RResult::RErr(e) => {
                    fail(format!(
                        "inputs() failed for {gt:?} (node graph {node_graph}): {}",
                        e.message
                    ));
                    continue;
                }
            };
            for q in inputs.queries.iter() {
                let named = !q.metric.is_empty()
                    || q.matchers.iter().any(|m| m.name.as_str() == "__name__");
                if !named {
                    fail(format!("a declared query names no metric: {q:?}"));
                }
                if q.matchers.iter().any(|m| m.name.is_empty()) {
                    fail(format!("a declared query has a matcher without a label name: {q:?}"));
                }
            }
            let n = inputs.queries.len();
            // An empty graph.
            let mut empty = Graph::default();
            if let RResult::RErr(e) = appender.apply(&req, &AppenderData::default(), &mut empty) {
                fail(format!("failed on an empty graph ({gt:?}): {}", e.message));
            }
            if let RResult::RErr(e) =
                appender.apply(&req, &data_for(n, RVec::new(), true), &mut Graph::default())
            {
                fail(format!("failed on an empty graph with cluster data ({gt:?}): {}", e.message));
            }
            // Nodes of other namespaces stay as they are.
            let mut g = sample_graph();
            let before: Vec<Node> =
                g.nodes.iter().filter(|x| x.namespace.as_str() == OTHER).cloned().collect();
            match appender.apply(&req, &data_for(n, telemetry(), true), &mut g) {
                RResult::RErr(e) => {
                    fail(format!("failed on a plain graph ({gt:?}): {}", e.message))
                }
                RResult::ROk(()) => {
                    let after: Vec<Node> =
                        g.nodes.iter().filter(|x| x.namespace.as_str() == OTHER).cloned().collect();
                    if before != after {
                        fail(format!(
                            "changed nodes of a namespace that was not requested ({gt:?})"
                        ));
                    }
                    let ids: std::collections::HashSet<&str> =
                        g.nodes.iter().map(|x| x.id.as_str()).collect();
                    if g.edges.iter().any(|e| {
                        !ids.contains(e.source.as_str()) || !ids.contains(e.target.as_str())
                    }) {
                        fail(format!("left an edge to a node that is not in the graph ({gt:?})"));
                    }
                }
            }
            // Missing labels and fields.
            let mut g = sample_graph();
            for node in g.nodes.iter_mut() {
                node.app = RString::new();
                node.version = RString::new();
                node.dest_services = RVec::new();
            }
            g.edges.push(Edge {
                response_time: ROption::RNone,
                ..Edge::new("nowhere", "nothing", "")
            });
            if let RResult::RErr(e) =
                appender.apply(&req, &data_for(n, broken_series(), false), &mut g)
            {
                fail(format!("failed on missing labels ({gt:?}): {:?}: {}", e.kind, e.message));
            }
        }
    }
    if failures.is_empty() { Ok(()) } else { Err(failures) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AppenderAdapter, GraphAppender, PluginError};

    struct Polite;
    impl GraphAppender for Polite {
        fn name(&self) -> &str {
            "polite"
        }
        fn apply(
            &self,
            req: &GraphRequest,
            _: &AppenderData,
            g: &mut Graph,
        ) -> Result<(), PluginError> {
            for n in g.nodes.iter_mut().filter(|n| req.namespaces.contains(&n.namespace)) {
                n.has_vs = true;
            }
            Ok(())
        }
    }

    struct Meddler;
    impl GraphAppender for Meddler {
        fn name(&self) -> &str {
            "meddler"
        }
        fn apply(
            &self,
            _: &GraphRequest,
            _: &AppenderData,
            g: &mut Graph,
        ) -> Result<(), PluginError> {
            for n in g.nodes.iter_mut() {
                n.has_cb = true;
            }
            Ok(())
        }
    }

    struct Fragile;
    impl GraphAppender for Fragile {
        fn name(&self) -> &str {
            "fragile"
        }
        fn apply(
            &self,
            _: &GraphRequest,
            d: &AppenderData,
            _: &mut Graph,
        ) -> Result<(), PluginError> {
            for s in d.results.iter().flat_map(|r| r.series.iter()) {
                let _app = s.labels.get("source_app").map(str::to_string).unwrap();
            }
            Ok(())
        }
    }

    #[test]
    fn the_kit_passes_a_well_behaved_appender() {
        check(&AppenderAdapter::boxed(Polite)).unwrap();
    }

    #[test]
    fn the_kit_catches_meddling_and_panics() {
        let e = check(&AppenderAdapter::boxed(Meddler)).unwrap_err();
        assert!(e.iter().any(|m| m.contains("not requested")), "{e:?}");
        struct Declares;
        impl GraphAppender for Declares {
            fn name(&self) -> &str {
                "declares"
            }
            fn inputs(&self, _: &GraphRequest) -> Result<crate::AppenderInputs, PluginError> {
                let q = crate::MetricQuery {
                    metric: "m".into(),
                    matchers: RVec::new(),
                    func: crate::RangeFunc::Rate,
                    window_secs: 60,
                    group_by: ROption::RNone,
                    histogram: crate::HistogramStat::None,
                    time: crate::QueryTime::Instant(0),
                };
                Ok(crate::AppenderInputs {
                    queries: vec![q].into_iter().collect(),
                    ..Default::default()
                })
            }
            fn apply(
                &self,
                r: &GraphRequest,
                d: &AppenderData,
                g: &mut Graph,
            ) -> Result<(), PluginError> {
                Fragile.apply(r, d, g)
            }
        }
        let e = check(&AppenderAdapter::boxed(Declares)).unwrap_err();
        assert!(e.iter().any(|m| m.contains("missing labels") && m.contains("Panic")), "{e:?}");
    }
}
