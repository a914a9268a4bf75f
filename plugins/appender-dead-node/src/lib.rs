//! `deadNode`: removes nodes that are artefacts of pod churn and flags workloads without
//! pods (`isDead`), as Kiali v0.14's
//! `graph/appender/dead_node.go`.
#![forbid(unsafe_code)]

use appender_support::{FastMap, FastSet};
use appender_support::{is_ok, lookup_cluster};
use plugin_api::{
    AppenderData, AppenderInputs, ClusterKind, Graph, GraphAppender, GraphRequest, Node, NodeType,
    PluginError,
};

/// The `deadNode` appender.
pub struct DeadNode;

enum Verdict {
    Keep,
    Dead,
    Remove,
}

/// Pods per (cluster, namespace, workload), the cluster as [`lookup_cluster`] gives it.
type Pods<'a> = FastMap<(&'a str, &'a str, &'a str), u32>;

fn verdict(n: &Node, has_out: bool, pods: &Pods<'_>, home: &str) -> Verdict {
    if n.node_type == NodeType::Service {
        // Incoming traffic without errors does not save a terminal service node.
        return if has_out || !n.is_service_entry.is_empty() || n.rates.has_errors_in() {
            Verdict::Keep
        } else {
            Verdict::Remove
        };
    }
    if n.rates.has_traffic() {
        return Verdict::Keep;
    }
    if n.node_type != NodeType::Unknown && !is_ok(n.workload.as_str()) {
        return Verdict::Keep;
    }
    // The node's own cluster: the same name elsewhere says nothing about it.
    let cluster = lookup_cluster(n.cluster.as_str(), home);
    match pods.get(&(cluster, n.namespace.as_str(), n.workload.as_str())) {
        None => Verdict::Remove,
        Some(0) => Verdict::Dead,
        Some(_) => Verdict::Keep,
    }
}

impl GraphAppender for DeadNode {
    fn name(&self) -> &str {
        "deadNode"
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
        if graph.nodes.is_empty() {
            return Ok(());
        }
        let home = req.home_cluster.as_str();
        let pods: Pods<'_> = data
            .cluster
            .workloads
            .iter()
            .map(|w| {
                let cluster = lookup_cluster(w.cluster.as_str(), home);
                ((cluster, w.namespace.as_str(), w.name.as_str()), w.pod_count)
            })
            .collect();
        let sources: FastSet<&str> = graph.edges.iter().map(|e| e.source.as_str()).collect();
        let verdicts: Vec<Verdict> = graph
            .nodes
            .iter()
            .map(|n| verdict(n, sources.contains(n.id.as_str()), &pods, home))
            .collect();
        let mut it = verdicts.into_iter();
        let mut marks = Vec::new();
        graph.retain_nodes(|_| match it.next() {
            Some(Verdict::Remove) => false,
            Some(Verdict::Dead) => {
                marks.push(true);
                true
            }
            _ => {
                marks.push(false);
                true
            }
        });
        for (n, dead) in graph.nodes.iter_mut().zip(marks) {
            if dead {
                n.is_dead = true;
            }
        }
        Ok(())
    }
}

plugin_api::register_appender!(DeadNode);
plugin_api::export_plugin!(name: "appender-dead-node", version: env!("CARGO_PKG_VERSION"));
