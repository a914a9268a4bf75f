//! `serviceEntry`: marks terminal service nodes that name a ServiceEntry host with the
//! entry's location (`isServiceEntry` = `MESH_EXTERNAL` or `MESH_INTERNAL`), as
//! Kiali v0.14's `graph/appender/service_entry.go`.
#![forbid(unsafe_code)]

use appender_support::{FastMap, FastSet, HashMapExt, lookup_cluster};
use plugin_api::{
    AppenderData, AppenderInputs, ClusterKind, Graph, GraphAppender, GraphRequest, NodeType,
    PluginError,
};

/// The `serviceEntry` appender.
pub struct ServiceEntry;

/// Host → (cluster, location) of every ServiceEntry with a mesh location: an entry applies
/// in its own cluster (the cluster as [`lookup_cluster`] gives it, `home` the home one).
fn hosts<'a>(data: &'a AppenderData, home: &'a str) -> FastMap<String, Vec<(&'a str, String)>> {
    let mut out = FastMap::new();
    for o in data.cluster.objects.iter().filter(|o| o.kind.as_str() == "ServiceEntry") {
        let cluster = lookup_cluster(o.cluster.as_str(), home);
        let spec = o.spec();
        let Some(loc) = spec.get("location").and_then(|l| l.as_str()) else {
            continue;
        };
        if loc != "MESH_EXTERNAL" && loc != "MESH_INTERNAL" {
            continue;
        }
        for h in spec.get("hosts").and_then(|h| h.as_array()).into_iter().flatten() {
            if let Some(h) = h.as_str() {
                let at: &mut Vec<(&str, String)> = out.entry(h.to_string()).or_default();
                match at.iter_mut().find(|(c, _)| *c == cluster) {
                    // The last entry of a host wins, as before clusters.
                    Some(e) => e.1 = loc.to_string(),
                    None => at.push((cluster, loc.to_string())),
                }
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
        req: &GraphRequest,
        data: &AppenderData,
        graph: &mut Graph,
    ) -> Result<(), PluginError> {
        if graph.nodes.is_empty() {
            return Ok(());
        }
        let home = req.home_cluster.as_str();
        let hosts = hosts(data, home);
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
            let cluster = lookup_cluster(n.cluster.as_str(), home);
            let entry =
                hosts.get(n.service.as_str()).and_then(|at| at.iter().find(|(c, _)| *c == cluster));
            if let Some((_, loc)) = entry {
                n.is_service_entry = loc.as_str().into();
            }
        }
        Ok(())
    }
}

plugin_api::register_appender!(ServiceEntry);
plugin_api::export_plugin!(name: "appender-service-entry", version: env!("CARGO_PKG_VERSION"));
