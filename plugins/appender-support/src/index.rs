//! Finding a graph's edges by the ids of their ends without allocating per lookup.

use plugin_api::Graph;

use crate::{FastMap, HashMapExt, map_chunks};

/// Node positions by id and edge positions by (source, target) position, built once per
/// `apply` so that matching series to edges does not rebuild id strings per edge.
#[derive(Debug)]
pub struct EdgeIndex<'g> {
    nodes: FastMap<&'g str, u32>,
    /// Edge positions grouped by (source, target): one pair can carry several protocols.
    edges: Vec<u32>,
    /// Where each (source, target) group starts in `edges`, and its length.
    pairs: FastMap<(u32, u32), (u32, u32)>,
}

impl<'g> EdgeIndex<'g> {
    /// Indexes `graph` as it is now; edges whose ends are not nodes are left out.
    pub fn new(graph: &'g Graph) -> Self {
        let nodes: FastMap<&str, u32> = graph.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i as u32)).collect();
        // Two id lookups per edge: on big graphs, on all cores.
        let mut ends: Vec<(u32, u32, u32)> = map_chunks(&graph.edges, |start, c| {
            (start..)
                .zip(c)
                .filter_map(|(i, e)| Some((*nodes.get(e.source.as_str())?, *nodes.get(e.target.as_str())?, i as u32)))
                .collect::<Vec<_>>()
        })
        .concat();
        ends.sort_unstable();
        let mut pairs: FastMap<(u32, u32), (u32, u32)> = FastMap::with_capacity(ends.len());
        for (at, &(s, t, _)) in ends.iter().enumerate() {
            pairs.entry((s, t)).or_insert((at as u32, 0)).1 += 1;
        }
        EdgeIndex { nodes, edges: ends.into_iter().map(|(_, _, e)| e).collect(), pairs }
    }

    /// Positions of the edges from `source` to `target` (any protocol), by internal id.
    pub fn edges(&self, source: &str, target: &str) -> impl Iterator<Item = usize> + '_ {
        let pair = self.nodes.get(source).zip(self.nodes.get(target)).and_then(|(&s, &t)| self.pairs.get(&(s, t)));
        let (start, len) = pair.map_or((0, 0), |&(a, n)| (a as usize, n as usize));
        self.edges[start..start + len].iter().map(|&e| e as usize)
    }
}
