//! `sidecarsCheck`: flags workload and app nodes whose workloads lack the mesh sidecar
//! (`hasMissingSC`), reference §3.7.
#![forbid(unsafe_code)]

use std::collections::HashSet;

use appender_support::is_ok;
use plugin_api::{
    AppenderData, AppenderInputs, ClusterKind, Graph, GraphAppender, GraphRequest, NodeType, PluginError, label_value,
};

/// The `sidecarsCheck` appender.
pub struct SidecarsCheck;

impl GraphAppender for SidecarsCheck {
    fn name(&self) -> &str {
        "sidecarsCheck"
    }
    fn inputs(&self, _req: &GraphRequest) -> Result<AppenderInputs, PluginError> {
        Ok(AppenderInputs { cluster: vec![ClusterKind::Workloads].into_iter().collect(), ..Default::default() })
    }
    fn apply(&self, req: &GraphRequest, data: &AppenderData, graph: &mut Graph) -> Result<(), PluginError> {
        let requested: HashSet<&str> = req.namespaces.iter().map(|s| s.as_str()).collect();
        let workloads = &data.cluster.workloads;
        for n in graph.nodes.iter_mut() {
            let ns = n.namespace.as_str();
            if !requested.contains(ns) || ns == req.mesh_namespace.as_str() || n.is_dead {
                continue;
            }
            let missing = match n.node_type {
                NodeType::Workload => workloads
                    .iter()
                    .find(|w| w.namespace.as_str() == ns && w.name == n.workload)
                    .is_some_and(|w| !w.has_sidecar),
                NodeType::App => {
                    let version = n.version.as_str();
                    workloads
                        .iter()
                        .filter(|w| w.namespace.as_str() == ns)
                        .filter(|w| label_value(&w.labels, req.app_label.as_str()) == Some(n.app.as_str()))
                        .filter(|w| !is_ok(version) || label_value(&w.labels, req.version_label.as_str()) == Some(version))
                        .any(|w| !w.has_sidecar)
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
