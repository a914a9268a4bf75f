//! Finding a graph's edges by the ids of their ends without allocating per lookup.

use std::hash::{BuildHasher, Hasher};

use foldhash::fast::FixedState;
use plugin_api::{Edge, Graph, GraphType, QueryResult, Series};

use par_chunks::map_chunks;

use crate::{FastMap, HashMapExt, IdBuf, SeriesLabels};

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

/// Edge positions by the ids of their ends, built once per `apply` so that matching series to
/// edges does not rebuild id strings per edge.
///
/// Keyed by a hash of the (source id, target id) pair, checked against the edge's own ids on
/// lookup: a series' ends are found without first looking up each end's node.
#[derive(Debug)]
pub struct EdgeIndex<'g> {
    edges: &'g [Edge],
    /// The first edge of each pair hash: one pair can carry several protocols.
    pairs: FastMap<u64, u32>,
    /// The next edge with the same pair hash after each edge, if any.
    next: Vec<Option<u32>>,
}

/// Seeds the pair hash; any fixed value works, it only has to be the same for every lookup.
const PAIR_HASH: FixedState = FixedState::with_seed(0x6564_6765_7061_6972);

fn pair_hash(source: &str, target: &str) -> u64 {
    let mut h = PAIR_HASH.build_hasher();
    h.write(source.as_bytes());
    // Keeps ("ab", "c") and ("a", "bc") apart.
    h.write_u8(0xff);
    h.write(target.as_bytes());
    h.finish()
}

impl<'g> EdgeIndex<'g> {
    /// Indexes the edges of `graph` as they are now, whether or not their ends are nodes
    /// (the response leaves out edges with a missing end).
    pub fn new(graph: &'g Graph) -> Self {
        // On big graphs, hashed on all cores.
        let hashes: Vec<u64> = map_chunks(&graph.edges, |_, c| {
            c.iter().map(|e| pair_hash(e.source.as_str(), e.target.as_str())).collect::<Vec<_>>()
        })
        .concat();
        let mut pairs: FastMap<u64, u32> = FastMap::with_capacity(hashes.len());
        let mut next = vec![None; hashes.len()];
        // Filled from the last edge back, so that each pair's chain runs in edge order.
        for (i, h) in hashes.into_iter().enumerate().rev() {
            next[i] = pairs.insert(h, i as u32);
        }
        EdgeIndex { edges: graph.edges.as_slice(), pairs, next }
    }

    /// Positions of the edges from `source` to `target` (any protocol), by internal id.
    pub fn edges<'s>(
        &'s self,
        source: &'s str,
        target: &'s str,
    ) -> impl Iterator<Item = usize> + 's {
        let first = self.pairs.get(&pair_hash(source, target)).copied();
        std::iter::successors(first, |&e| self.next.get(e as usize).copied().flatten())
            .map(|e| e as usize)
            .filter(move |&e| {
                self.edges
                    .get(e)
                    .is_some_and(|x| x.source.as_str() == source && x.target.as_str() == target)
            })
    }

    /// `(edge, value)` for each hop of each series of `results` that `pick` gives a value
    /// (`None` skips the series), with `home` the home cluster's name (node ids of other
    /// clusters carry theirs). Big results are matched on all cores; the pairs come back
    /// in result order.
    pub fn hits<'r, T: Copy + Send>(
        &self,
        results: &'r [QueryResult],
        graph_type: GraphType,
        inject: bool,
        home: &str,
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
                let chain = sl.hops(graph_type, inject, home);
                let filled = ids.fill(&chain);
                // A chain of n ids has n - 1 hops; the last is the one into the destination.
                let skip = match on {
                    OnHops::Every => 0,
                    OnHops::Last => filled.ids().len().saturating_sub(2),
                };
                for (src, dst) in filled.pairs().skip(skip) {
                    hits.extend(self.edges(src, dst).map(|e| (e, v)));
                }
            }
            hits
        })
        .concat()
    }
}
