//! `unusedNode`: adds a node (`isUnused`) for every workload of the requested namespaces
//! that saw no traffic, reference §3.5. Not for service graphs nor node-detail graphs.
#![forbid(unsafe_code)]

use std::collections::{HashMap, HashSet};

use appender_support::{UNKNOWN, node_key};
use plugin_api::{
    AppenderData, AppenderInputs, ClusterKind, Edge, Graph, GraphAppender, GraphRequest, GraphType, Node, PluginError,
    label_value,
};

/// The `unusedNode` appender.
pub struct UnusedNode;

fn applies(req: &GraphRequest) -> bool {
    req.graph_type != GraphType::Service && !req.node_graph
}

impl GraphAppender for UnusedNode {
    fn name(&self) -> &str {
        "unusedNode"
    }
    fn inputs(&self, req: &GraphRequest) -> Result<AppenderInputs, PluginError> {
        let cluster = if applies(req) { vec![ClusterKind::Workloads] } else { Vec::new() };
        Ok(AppenderInputs { cluster: cluster.into_iter().collect(), ..Default::default() })
    }
    fn apply(&self, req: &GraphRequest, data: &AppenderData, graph: &mut Graph) -> Result<(), PluginError> {
        if !applies(req) {
            return Ok(());
        }
        let was_empty = graph.nodes.is_empty();
        let mut known: HashSet<String> = graph.nodes.iter().map(|n| n.id.to_string()).collect();
        // (namespace, app) of every node that some edge leads to, with the edges' sources.
        let mut callers: HashMap<(String, String), Vec<String>> = HashMap::new();
        {
            let index = graph.node_index();
            for e in graph.edges.iter() {
                if let Some(&t) = index.get(e.target.as_str()) {
                    let t = &graph.nodes[t];
                    callers.entry((t.namespace.to_string(), t.app.to_string())).or_default().push(e.source.to_string());
                }
            }
        }
        let requested: HashSet<&str> = req.namespaces.iter().map(|s| s.as_str()).collect();
        let mut new_edges: HashSet<(String, String)> = HashSet::new();
        for w in data.cluster.workloads.iter().filter(|w| requested.contains(w.namespace.as_str())) {
            let app = label_value(&w.labels, req.app_label.as_str()).filter(|s| !s.is_empty()).unwrap_or(UNKNOWN);
            let version = label_value(&w.labels, req.version_label.as_str()).filter(|s| !s.is_empty()).unwrap_or(UNKNOWN);
            let Some(k) = node_key(w.namespace.as_str(), w.name.as_str(), app, version, "", req.graph_type) else { continue };
            if !known.insert(k.id.clone()) {
                continue;
            }
            let mut n = Node::new(&k.id, k.node_type, &k.namespace);
            n.workload = k.workload.as_str().into();
            n.app = k.app.as_str().into();
            n.version = k.version.as_str().into();
            n.is_unused = true;
            graph.nodes.push(n);
            if !was_empty && app != UNKNOWN {
                for src in callers.get(&(k.namespace.clone(), app.to_string())).into_iter().flatten() {
                    if new_edges.insert((src.clone(), k.id.clone())) {
                        graph.edges.push(Edge::new(src, &k.id, ""));
                    }
                }
            }
        }
        Ok(())
    }
}

plugin_api::register_appender!(UnusedNode);
plugin_api::export_plugin!(name: "appender-unused-node", version: env!("CARGO_PKG_VERSION"));
