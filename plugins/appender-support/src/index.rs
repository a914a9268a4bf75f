//! Finding a graph's edges by the ids of their ends without allocating per lookup.

use plugin_api::Graph;

use crate::FastMap;

/// Node positions by id and edge positions by (source, target) position, built once per
/// `apply` so that matching series to edges does not rebuild id strings per edge.
#[derive(Debug)]
pub struct EdgeIndex<'g> {
    nodes: FastMap<&'g str, u32>,
    /// `(source, target, edge)` positions, sorted; one pair can carry several protocols.
    edges: Vec<(u32, u32, u32)>,
}

impl<'g> EdgeIndex<'g> {
    /// Indexes `graph` as it is now; edges whose ends are not nodes are left out.
    pub fn new(graph: &'g Graph) -> Self {
        let nodes: FastMap<&str, u32> = graph.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i as u32)).collect();
        let mut edges: Vec<(u32, u32, u32)> = graph
            .edges
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((*nodes.get(e.source.as_str())?, *nodes.get(e.target.as_str())?, i as u32)))
            .collect();
        edges.sort_unstable();
        EdgeIndex { nodes, edges }
    }

    /// The position of the node with this internal id.
    pub fn node(&self, id: &str) -> Option<usize> {
        self.nodes.get(id).map(|&i| i as usize)
    }

    /// Positions of the edges from `source` to `target` (any protocol), by internal id.
    pub fn edges(&self, source: &str, target: &str) -> impl Iterator<Item = usize> + '_ {
        let pair = self.nodes.get(source).zip(self.nodes.get(target)).map(|(&s, &t)| (s, t));
        let found = match pair {
            Some((s, t)) => {
                let start = self.edges.partition_point(|&(a, b, _)| (a, b) < (s, t));
                let len = self.edges[start..].iter().take_while(|&&(a, b, _)| (a, b) == (s, t)).count();
                &self.edges[start..start + len]
            }
            None => &self.edges[..0],
        };
        found.iter().map(|&(_, _, e)| e as usize)
    }
}
