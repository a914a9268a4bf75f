//! `serviceEntry`: marks terminal service nodes that name a ServiceEntry host with the
//! entry's location (`isServiceEntry` = `MESH_EXTERNAL` or `MESH_INTERNAL`), as
//! Kiali v0.14's `graph/appender/service_entry.go`.
#![forbid(unsafe_code)]

use appender_support::{FastMap, FastSet, HashMapExt};
use plugin_api::{
    AppenderData, AppenderInputs, ClusterKind, Graph, GraphAppender, GraphRequest, NodeType,
    PluginError,
};

/// The `serviceEntry` appender.
pub struct ServiceEntry;

/// Host → location of every ServiceEntry with a mesh location.
fn hosts(data: &AppenderData) -> FastMap<String, String> {
    let mut out = FastMap::new();
    for o in data.cluster.objects.iter().filter(|o| o.kind.as_str() == "ServiceEntry") {
        let spec = o.spec();
        let Some(loc) = spec.get("location").and_then(|l| l.as_str()) else {
            continue;
        };
        if loc != "MESH_EXTERNAL" && loc != "MESH_INTERNAL" {
            continue;
        }
        for h in spec.get("hosts").and_then(|h| h.as_array()).into_iter().flatten() {
            if let Some(h) = h.as_str() {
                out.insert(h.to_string(), loc.to_string());
            }
        }
    }
    out
}

impl GraphAppender for ServiceEntry {
    fn name(&self) -> &str {
        "serviceEntry"
    }
    fn inputs(&self, _req: &GraphRequest) -> Result<AppenderInputs, PluginError> {
        Ok(AppenderInputs {
            cluster: vec![ClusterKind::ServiceEntries].into_iter().collect(),
            ..Default::default()
        })
    }
    fn apply(
        &self,
        _req: &GraphRequest,
        data: &AppenderData,
        graph: &mut Graph,
    ) -> Result<(), PluginError> {
        if graph.nodes.is_empty() {
            return Ok(());
        }
        let hosts = hosts(data);
        if hosts.is_empty() {
            return Ok(());
        }
        let sources: FastSet<&str> = graph.edges.iter().map(|e| e.source.as_str()).collect();
        let terminal: Vec<bool> =
            graph.nodes.iter().map(|n| !sources.contains(n.id.as_str())).collect();
        for (n, terminal) in graph.nodes.iter_mut().zip(terminal) {
            if n.node_type != NodeType::Service || !terminal {
                continue;
            }
            if let Some(loc) = hosts.get(n.service.as_str()) {
                n.is_service_entry = loc.as_str().into();
            }
        }
        Ok(())
    }
}

plugin_api::register_appender!(ServiceEntry);
plugin_api::export_plugin!(name: "appender-service-entry", version: env!("CARGO_PKG_VERSION"));
