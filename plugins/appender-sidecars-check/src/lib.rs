//! `sidecarsCheck`: flags workload and app nodes whose workloads lack the mesh sidecar
//! (`hasMissingSC`), as Kiali v0.14's `graph/appender/sidecars_check.go`. Ambient
//! workloads and waypoints have no sidecar by design: nodes the host flagged `isAmbient` or
//! `isWaypoint` are never flagged (Kiali `graph/telemetry/istio/appender/mesh_check.go`
//! skips them the same way).
#![forbid(unsafe_code)]

use appender_support::{FastMap, FastSet, HashMapExt};
use appender_support::{is_ok, lookup_cluster};
use plugin_api::{
    AppenderData, AppenderInputs, ClusterKind, Graph, GraphAppender, GraphRequest, NodeType,
    PluginError, label_value,
};

/// Whether the host flagged the node as ambient or as a waypoint.
fn is_ambient(n: &plugin_api::Node) -> bool {
    n.extra.iter().any(|f| {
        matches!(f.key.as_str(), "isAmbient" | "isWaypoint")
            && f.value == plugin_api::Value::Bool(true)
    })
}

/// The `sidecarsCheck` appender.
pub struct SidecarsCheck;

impl GraphAppender for SidecarsCheck {
    fn name(&self) -> &str {
        "sidecarsCheck"
    }
    fn inputs(&self, _req: &GraphRequest) -> Result<AppenderInputs, PluginError> {
        Ok(AppenderInputs {
            cluster: vec![ClusterKind::Workloads].into_iter().collect(),
            ..Default::default()
        })
    }
    fn apply(
        &self,
        req: &GraphRequest,
        data: &AppenderData,
        graph: &mut Graph,
    ) -> Result<(), PluginError> {
        let requested: FastSet<&str> = req.namespaces.iter().map(|s| s.as_str()).collect();
        // Indexed once: graphs of thousands of nodes meet thousands of workloads. For app
        // nodes only "does any workload of this app (and version) lack one" is asked, so
        // that is all that is kept.
        // Keyed by cluster too: a node is checked against its own cluster's workloads.
        let home = req.home_cluster.as_str();
        // App keys only where there are app nodes to ask about (a workload graph has none).
        let apps = graph.nodes.iter().any(|n| n.node_type == NodeType::App);
        let n = data.cluster.workloads.len();
        let mut by_name: FastMap<(&str, &str, &str), bool> = FastMap::with_capacity(n);
        let mut app_missing: FastMap<(&str, &str, &str), bool> = FastMap::with_capacity(n);
        let mut version_missing: FastMap<(&str, &str, &str, &str), bool> =
            FastMap::with_capacity(n);
        for w in data.cluster.workloads.iter() {
            let (ns, missing) = (w.namespace.as_str(), !w.has_sidecar);
            let c = lookup_cluster(w.cluster.as_str(), home);
            by_name.insert((c, ns, w.name.as_str()), w.has_sidecar);
            if !apps {
                continue;
            }
            if let Some(app) = label_value(&w.labels, req.app_label.as_str()) {
                *app_missing.entry((c, ns, app)).or_default() |= missing;
                if let Some(version) = label_value(&w.labels, req.version_label.as_str()) {
                    *version_missing.entry((c, ns, app, version)).or_default() |= missing;
                }
            }
        }
        for n in graph.nodes.iter_mut() {
            let ns = n.namespace.as_str();
            if !requested.contains(ns)
                || ns == req.mesh_namespace.as_str()
                || n.is_dead
                || is_ambient(n)
            {
                continue;
            }
            let c = lookup_cluster(n.cluster.as_str(), home);
            let missing = match n.node_type {
                NodeType::Workload => {
                    by_name.get(&(c, ns, n.workload.as_str())).is_some_and(|sc| !sc)
                }
                NodeType::App => {
                    let (app, version) = (n.app.as_str(), n.version.as_str());
                    let missing = if is_ok(version) {
                        version_missing.get(&(c, ns, app, version))
                    } else {
                        app_missing.get(&(c, ns, app))
                    };
                    missing.copied().unwrap_or(false)
                }
                _ => false,
            };
            if missing {
                n.has_missing_sc = true;
            }
        }
        Ok(())
    }
}

plugin_api::register_appender!(SidecarsCheck);
plugin_api::export_plugin!(name: "appender-sidecars-check", version: env!("CARGO_PKG_VERSION"));
