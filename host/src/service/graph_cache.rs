//! Finished graphs (after the appenders, before the scope), kept for the answer cache's TTL.
//!
//! A console user who has a graph in view asks for the same graph again and again with
//! another scope: focus on a node, another hops count, a hide or find expression, another
//! format, a replay step back to a time already seen. Each of those is the same graph at the
//! same aligned query time, scoped differently (the scope is applied after the appenders, so
//! it never changes what is built). Keeping the finished graph makes those answers cost only
//! the scope and the output. Kiali keeps the last namespace graph per session for the same
//! reason (kiali/kiali#8870); ours is keyed by everything the graph depends on instead of the
//! session, so two viewers of one graph share it.
//!
//! What a finished graph depends on, and so its key: the parsed options (namespaces, type,
//! boxes, appenders, duration, aligned query time, ...), the metric answers (fixed for a
//! past aligned time within the answer cache's TTL, the same bound), the cluster model it
//! was built against (compared by identity: any watch event makes a new model) and the
//! caller's hidden namespaces (names-only nodes).

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use meshlens_cluster::ClusterState;
use plugin_api::Graph;

use crate::dropper::DropLater;

/// A finished graph, shared between the cache and the answers scoped from it. The last owner
/// frees it on the dropper thread.
pub type SharedGraph = Arc<DropLater<Graph>>;

/// A graph estimated above this is not kept: the 200-namespace graph (2,001 nodes) fits, the
/// 1,000-namespace one (10,001 nodes) does not; keeping that would hold a large share of the
/// Deployment's memory limit for one viewer's next scope.
const MAX_BYTES_PER_GRAPH: usize = 8 << 20;
/// The most graphs kept at once (oldest first out).
const MAX_GRAPHS: usize = 8;
/// The estimated bytes of all kept graphs together, a bound on memory.
const MAX_BYTES: usize = 24 << 20;

/// The heap a graph holds, roughly: its elements and their strings and extra fields.
fn estimate_bytes(g: &Graph) -> usize {
    use plugin_api::{Edge, Field, Node, Value};
    let field = |f: &Field| {
        std::mem::size_of::<Field>()
            + f.key.len()
            + match &f.value {
                Value::Text(t) => t.len(),
                _ => 0,
            }
    };
    let nodes: usize = g
        .nodes
        .iter()
        .map(|n| {
            std::mem::size_of::<Node>()
                + [&n.id, &n.cluster, &n.namespace, &n.workload, &n.app, &n.version, &n.service]
                    .iter()
                    .map(|s| s.len())
                    .sum::<usize>()
                + n.dest_services.iter().map(|s| s.len() + 24).sum::<usize>()
                + n.is_misconfigured.len()
                + n.is_service_entry.len()
                + n.extra.iter().map(field).sum::<usize>()
        })
        .sum();
    let edges: usize = g
        .edges
        .iter()
        .map(|e| {
            std::mem::size_of::<Edge>()
                + e.source.len()
                + e.target.len()
                + e.protocol.len()
                + e.extra.iter().map(field).sum::<usize>()
        })
        .sum();
    nodes + edges
}

struct Entry {
    key: String,
    /// The cluster models it was built from (home first).
    models: Vec<Arc<ClusterState>>,
    graph: SharedGraph,
    stored: Instant,
    bytes: usize,
}

/// The finished-graph cache; off when the TTL is zero.
pub struct GraphCache {
    ttl: Duration,
    entries: Mutex<Vec<Entry>>,
}

impl GraphCache {
    /// A cache whose graphs live `ttl` (the metric answer cache's TTL).
    pub fn new(ttl: Duration) -> GraphCache {
        GraphCache { ttl, entries: Mutex::new(Vec::new()) }
    }

    /// The graph stored under `key` for these very models, if still fresh.
    pub fn get<N>(&self, key: &str, models: &[(N, Arc<ClusterState>)]) -> Option<SharedGraph> {
        if self.ttl.is_zero() {
            return None;
        }
        let mut entries = self.entries.lock().ok()?;
        entries.retain(|e| e.stored.elapsed() < self.ttl);
        entries
            .iter()
            .find(|e| {
                e.key == key
                    && e.models.len() == models.len()
                    && e.models.iter().zip(models).all(|(a, (_, b))| Arc::ptr_eq(a, b))
            })
            .map(|e| e.graph.clone())
    }

    /// Keeps a finished graph, unless it is too big; evicts expired, then oldest entries.
    pub fn put(&self, key: String, models: Vec<Arc<ClusterState>>, graph: SharedGraph) {
        if self.ttl.is_zero() {
            return;
        }
        let bytes = estimate_bytes(&graph);
        if bytes > MAX_BYTES_PER_GRAPH {
            return;
        }
        let Ok(mut entries) = self.entries.lock() else { return };
        let ttl = self.ttl;
        entries.retain(|e| e.stored.elapsed() < ttl && e.key != key);
        while !entries.is_empty()
            && (entries.len() >= MAX_GRAPHS
                || entries.iter().map(|e| e.bytes).sum::<usize>() + bytes > MAX_BYTES)
        {
            entries.remove(0);
        }
        entries.push(Entry { key, models, graph, stored: Instant::now(), bytes });
    }

    /// Graphs held now (for tests and `/metrics`).
    pub fn len(&self) -> usize {
        self.entries.lock().map_or(0, |e| e.len())
    }

    /// Whether no graph is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshlens_cluster::{ClusterConfig, Settings, raw::RawObjects};
    use plugin_api::{Node, NodeType};

    fn model() -> Arc<ClusterState> {
        let settings = Arc::new(Settings::from_config(&ClusterConfig::default()).unwrap());
        Arc::new(ClusterState::build(&RawObjects::default(), settings))
    }

    fn named(models: &[&Arc<ClusterState>]) -> Vec<(&'static str, Arc<ClusterState>)> {
        models.iter().map(|m| ("c", Arc::clone(m))).collect()
    }

    fn graph(nodes: usize) -> SharedGraph {
        let mut g = Graph::default();
        for i in 0..nodes {
            g.nodes.push(Node::new(&format!("n{i}"), NodeType::Workload, "ns"));
        }
        Arc::new(DropLater::new(g))
    }

    #[test]
    fn a_graph_is_found_under_its_key_for_its_own_model_only() {
        let cache = GraphCache::new(Duration::from_secs(10));
        let (m1, m2) = (model(), model());
        cache.put("k".into(), vec![m1.clone()], graph(3));
        assert_eq!(cache.get("k", &named(&[&m1])).map(|g| g.nodes.len()), Some(3));
        assert!(cache.get("other", &named(&[&m1])).is_none());
        // Same content, another model: a watch event happened in between.
        assert!(cache.get("k", &named(&[&m2])).is_none());
        // A remote came back: two models where the graph was built from one.
        assert!(cache.get("k", &named(&[&m1, &m2])).is_none());
        // Stored again under the same key: replaced, not doubled.
        cache.put("k".into(), vec![m1.clone()], graph(4));
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get("k", &named(&[&m1])).map(|g| g.nodes.len()), Some(4));
    }

    #[test]
    fn graphs_expire_and_stay_bounded() {
        let cache = GraphCache::new(Duration::from_millis(50));
        let m = model();
        cache.put("k".into(), vec![m.clone()], graph(1));
        std::thread::sleep(Duration::from_millis(80));
        assert!(cache.get("k", &named(&[&m])).is_none());
        assert!(cache.is_empty());

        let cache = GraphCache::new(Duration::from_secs(10));
        for i in 0..MAX_GRAPHS + 3 {
            cache.put(format!("k{i}"), vec![m.clone()], graph(1));
        }
        assert_eq!(cache.len(), MAX_GRAPHS);
        assert!(cache.get("k0", &named(&[&m])).is_none(), "the oldest goes first");
        assert!(cache.get(&format!("k{}", MAX_GRAPHS + 2), &named(&[&m])).is_some());
        // Too big to keep (estimated bytes); and the byte bound evicts the oldest for room.
        let per_node = estimate_bytes(&graph(1));
        let big = graph(MAX_BYTES_PER_GRAPH / per_node + 2);
        assert!(estimate_bytes(&big) > MAX_BYTES_PER_GRAPH);
        cache.put("big".into(), vec![m.clone()], big);
        assert!(cache.get("big", &named(&[&m])).is_none());
        let cache = GraphCache::new(Duration::from_secs(10));
        let near = || graph(MAX_BYTES_PER_GRAPH * 7 / 8 / per_node);
        for k in ["a", "b", "c", "d"] {
            cache.put(k.into(), vec![m.clone()], near());
        }
        let kept: Vec<bool> =
            ["a", "b", "c", "d"].iter().map(|k| cache.get(k, &named(&[&m])).is_some()).collect();
        assert_eq!(kept, [false, true, true, true], "three of 7 MiB fit in 24 MiB");
        // Off when the TTL is zero.
        let off = GraphCache::new(Duration::ZERO);
        off.put("k".into(), vec![m.clone()], graph(1));
        assert!(off.get("k", &named(&[&m])).is_none());
    }
}
