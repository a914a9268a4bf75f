//! `unusedNode`: adds a node (`isUnused`) for every workload of the requested namespaces
//! that saw no traffic, as Kiali v0.14's
//! `graph/appender/unused_node.go`. Not for service graphs nor node-detail graphs.
#![forbid(unsafe_code)]

use appender_support::{
    FastMap, FastSet, HashMapExt, HashSetExt, UNKNOWN, lookup_cluster, node_positions, node_ref,
};
use plugin_api::{
    AppenderData, AppenderInputs, ClusterKind, Edge, Graph, GraphAppender, GraphRequest, GraphType,
    Node, PluginError, label_value,
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
    fn apply(
        &self,
        req: &GraphRequest,
        data: &AppenderData,
        graph: &mut Graph,
    ) -> Result<(), PluginError> {
        if !applies(req) {
            return Ok(());
        }
        let was_empty = graph.nodes.is_empty();
        let requested: FastSet<&str> = req.namespaces.iter().map(|s| s.as_str()).collect();
        // Planned against the graph as it is, then added: ids are borrowed, not copied.
        let mut new_nodes: Vec<Node> = Vec::new();
        let mut new_edges: Vec<Edge> = Vec::new();
        {
            let index = node_positions(graph);
            // New nodes, with the (cluster, namespace, app) whose callers they get edges from.
            let home = req.home_cluster.as_str();
            let mut added: FastSet<String> = FastSet::new();
            let mut wants_callers: Vec<(usize, (&str, &str, &str))> = Vec::new();
            let mut id = String::new();
            for w in
                data.cluster.workloads.iter().filter(|w| requested.contains(w.namespace.as_str()))
            {
                let app = label_value(&w.labels, req.app_label.as_str())
                    .filter(|s| !s.is_empty())
                    .unwrap_or(UNKNOWN);
                let version = label_value(&w.labels, req.version_label.as_str())
                    .filter(|s| !s.is_empty())
                    .unwrap_or(UNKNOWN);
                let Some(k) = node_ref(
                    w.namespace.as_str(),
                    w.name.as_str(),
                    app,
                    version,
                    "",
                    req.graph_type,
                ) else {
                    continue;
                };
                // In its own cluster: the id of a home workload is the one of before.
                let k = k.in_cluster(w.cluster.as_str(), home);
                k.write_id(&mut id);
                if index.contains_key(id.as_str()) || !added.insert(id.clone()) {
                    continue;
                }
                let mut n = k.to_node(&id);
                n.is_unused = true;
                if !was_empty && app != UNKNOWN {
                    let c = lookup_cluster(w.cluster.as_str(), home);
                    wants_callers.push((new_nodes.len(), (c, k.namespace, app)));
                }
                new_nodes.push(n);
            }
            // Callers of those apps only: most graphs add few nodes, and indexing every edge
            // by its target's app cost more than the rest of this appender.
            if !wants_callers.is_empty() {
                let wanted: FastSet<(&str, &str, &str)> =
                    wants_callers.iter().map(|(_, k)| *k).collect();
                let mut callers: FastMap<(&str, &str, &str), Vec<&str>> = FastMap::new();
                for e in graph.edges.iter() {
                    if let Some(&t) = index.get(e.target.as_str()) {
                        let n = &graph.nodes[t];
                        let c = lookup_cluster(n.cluster.as_str(), home);
                        let key = (c, n.namespace.as_str(), n.app.as_str());
                        if wanted.contains(&key) {
                            callers.entry(key).or_default().push(e.source.as_str());
                        }
                    }
                }
                for (at, key) in &wants_callers {
                    let mut seen: FastSet<&str> = FastSet::new();
                    for &src in callers.get(key).into_iter().flatten() {
                        if seen.insert(src) {
                            new_edges.push(Edge::new(src, new_nodes[*at].id.as_str(), ""));
                        }
                    }
                }
            }
        }
        graph.nodes.extend(new_nodes);
        graph.edges.extend(new_edges);
        Ok(())
    }
}

plugin_api::register_appender!(UnusedNode);
plugin_api::export_plugin!(name: "appender-unused-node", version: env!("CARGO_PKG_VERSION"));
