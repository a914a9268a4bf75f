//! Finding a graph's edges by the ids of their ends without allocating per lookup.

use plugin_api::{Graph, GraphType, QueryResult, Series};

use crate::{FastMap, HashMapExt, IdBuf, SeriesLabels, map_chunks};

/// Node positions in `graph.nodes` by internal id.
pub fn node_positions(graph: &Graph) -> FastMap<&str, usize> {
    graph.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect()
}

/// Which hops of a series' chain its value belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnHops {
    /// Every hop (source → service → destination).
    Every,
    /// Only the hop into the destination.
    Last,
}

/// Node positions by id and edge positions by (source, target) position, built once per
/// `apply` so that matching series to edges does not rebuild id strings per edge.
#[derive(Debug)]
pub struct EdgeIndex<'g> {
    nodes: FastMap<&'g str, usize>,
    /// The first edge of each (source, target) pair: one pair can carry several protocols.
    pairs: FastMap<(u32, u32), u32>,
    /// The pair's next edge after each edge, if any.
    next: Vec<Option<u32>>,
}

impl<'g> EdgeIndex<'g> {
    /// Indexes `graph` as it is now; edges whose ends are not nodes are left out.
    pub fn new(graph: &'g Graph) -> Self {
        let nodes = node_positions(graph);
        // Two id lookups per edge: on big graphs, on all cores.
        let ends: Vec<Option<(u32, u32)>> = map_chunks(&graph.edges, |_, c| {
            c.iter().map(|e| Some((*nodes.get(e.source.as_str())? as u32, *nodes.get(e.target.as_str())? as u32))).collect::<Vec<_>>()
        })
        .concat();
        let mut pairs: FastMap<(u32, u32), u32> = FastMap::with_capacity(ends.len());
        let mut next = vec![None; ends.len()];
        // Filled from the last edge back, so that each pair's chain runs in edge order.
        for (i, pair) in ends.into_iter().enumerate().rev() {
            if let Some(pair) = pair {
                next[i] = pairs.insert(pair, i as u32);
            }
        }
        EdgeIndex { nodes, pairs, next }
    }

    /// Positions of the edges from `source` to `target` (any protocol), by internal id.
    pub fn edges(&self, source: &str, target: &str) -> impl Iterator<Item = usize> + '_ {
        let ends = self.nodes.get(source).zip(self.nodes.get(target));
        ends.into_iter().flat_map(|(&s, &t)| self.pair(s, t))
    }

    /// Positions of the edges between the nodes at positions `s` and `t`.
    fn pair(&self, s: usize, t: usize) -> impl Iterator<Item = usize> + '_ {
        let first = self.pairs.get(&(s as u32, t as u32)).copied();
        std::iter::successors(first, |&e| self.next.get(e as usize).copied().flatten()).map(|e| e as usize)
    }

    /// `(edge, value)` for each hop of each series of `results` that `pick` gives a value
    /// (`None` skips the series). Big results are matched on all cores; the pairs come back
    /// in result order.
    pub fn hits<'r, T: Copy + Send>(
        &self,
        results: &'r [QueryResult],
        graph_type: GraphType,
        inject: bool,
        on: OnHops,
        pick: impl Fn(&'r Series, &SeriesLabels<'r>) -> Option<T> + Sync,
    ) -> Vec<(usize, T)> {
        let series: Vec<&Series> = results.iter().flat_map(|r| r.series.iter()).collect();
        map_chunks(&series, |_, chunk| {
            let mut ids = IdBuf::default();
            // A series counts on one hop or two: sized once rather than regrown.
            let mut hits = Vec::with_capacity(2 * chunk.len());
            for &s in chunk {
                let sl = SeriesLabels::read(&s.labels);
                let Some(v) = pick(s, &sl) else {
                    continue;
                };
                let chain = sl.hops(graph_type, inject);
                let filled = ids.fill(&chain).ids();
                // A chain of n ids has n - 1 hops; the last is the one into the destination.
                let skip = match on {
                    OnHops::Every => 0,
                    OnHops::Last => filled.len().saturating_sub(2),
                };
                // Each node of the chain is looked up once, even when it ends one hop and
                // starts the next.
                let mut at = [None; 3];
                for (slot, id) in at.iter_mut().zip(filled).skip(skip) {
                    *slot = self.nodes.get(id.as_str()).copied();
                }
                for w in at[skip..filled.len()].windows(2) {
                    if let [Some(s), Some(t)] = *w {
                        hits.extend(self.pair(s, t).map(|e| (e, v)));
                    }
                }
            }
            hits
        })
        .concat()
    }
}
