//! The appenders' inputs of one graph: each appender's answers as owned values across the
//! ABI and the cluster data it declared, made on the CPU pool beside the build.

use std::sync::Arc;

use abi_stable::std_types::RVec;
use meshlens_query_batch::owned;
use meshlens_traffic::round_results;
use plugin_api::{AppenderData, ClusterData, ClusterKind, QueryResult};
use rayon::prelude::*;

use crate::limits::Scope;

/// Every appender's inputs, in appender order. Appenders that declared the same cluster
/// kinds share one copy of that cluster data: it is made for the first of them and moved on
/// to the next once that one has run (appenders run in turn and only borrow their data).
/// Five bundled appenders ask for the workloads; on the 1,000-namespace graph, copying them
/// five times made preparing outlast the build it runs beside.
#[derive(Default)]
pub struct Inputs {
    pub data: Vec<AppenderData>,
    /// For each appender, the one before it whose cluster data it takes over.
    pub shares: Vec<Option<usize>>,
}

impl Inputs {
    /// Inputs made elsewhere, each with its own cluster data.
    pub fn unshared(data: Vec<AppenderData>) -> Inputs {
        Inputs { shares: vec![None; data.len()], data }
    }

    /// Appender `i`'s inputs, its cluster data moved over from the appender it shares them
    /// with. Call in appender order, each once.
    pub fn take_turn(&mut self, i: usize) -> Option<&AppenderData> {
        if let Some(j) = self.shares.get(i).copied().flatten() {
            let cluster = std::mem::take(&mut self.data.get_mut(j)?.cluster);
            self.data.get_mut(i)?.cluster = cluster;
        }
        self.data.get(i)
    }

    /// Appender `i` has run: its answers go (off the pool), so that they are not held
    /// through the other appenders and the output. Its cluster data stays for the next
    /// appender that shares it.
    pub fn done(&mut self, i: usize) {
        if let Some(d) = self.data.get_mut(i) {
            crate::dropper::drop_later(std::mem::take(&mut d.results));
        }
    }
}

/// Each appender's answers, rounded as the traffic values are (an answer is moved, not
/// copied, unless another owner shares it), and its cluster data from `cluster_data`, once
/// per distinct set of kinds, in appender order. One task per answer and per cluster data:
/// the pool thread that finishes the build first takes over what is left of these, where
/// one thread used to make them all in turn (on the 1,000-namespace graph, the longer of
/// the two). `None` once the request is gone: what is left is not copied.
pub fn appender_inputs(
    taken: Vec<(Vec<Arc<QueryResult>>, RVec<ClusterKind>)>,
    cluster_data: &(dyn Fn(&[ClusterKind]) -> ClusterData + Sync),
    scope: &Scope,
) -> Option<Inputs> {
    // The previous appender with the same kinds, if any.
    let shares: Vec<Option<usize>> = taken
        .iter()
        .enumerate()
        .map(|(i, (_, kinds))| {
            (!kinds.is_empty()).then(|| (0..i).rev().find(|&j| taken[j].1 == *kinds)).flatten()
        })
        .collect();
    let data = taken
        .into_par_iter()
        .zip(shares.par_iter())
        .map(|((answers, kinds), shared)| {
            let (results, cluster) = rayon::join(
                || {
                    answers
                        .into_par_iter()
                        .map(|a| {
                            if scope.is_done() {
                                return None;
                            }
                            let mut r = owned(a);
                            round_results(std::slice::from_mut(&mut r));
                            Some(r)
                        })
                        .collect::<Option<Vec<QueryResult>>>()
                },
                || {
                    if kinds.is_empty() || shared.is_some() {
                        Some(ClusterData::default())
                    } else if scope.is_done() {
                        None
                    } else {
                        Some(cluster_data(&kinds))
                    }
                },
            );
            Some(AppenderData { cluster: cluster?, results: results?.into() })
        })
        .collect::<Option<Vec<AppenderData>>>()?;
    Some(Inputs { data, shares })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use plugin_api::{Sample, Series, WorkloadInfo};

    use super::*;

    fn answer(v: f64) -> Arc<QueryResult> {
        let series =
            Series { labels: Default::default(), samples: vec![Sample { t: 0.0, v }].into() };
        Arc::new(QueryResult { series: vec![series].into() })
    }

    fn named(kinds: &[ClusterKind]) -> ClusterData {
        let mut d = ClusterData::default();
        for k in kinds {
            d.workloads.push(WorkloadInfo {
                name: format!("{k:?}").as_str().into(),
                ..Default::default()
            });
        }
        d
    }

    #[test]
    fn inputs_keep_appender_order_round_values_and_stop_with_the_request() {
        let taken = vec![
            (vec![answer(1.23456), answer(2.0)], RVec::from(vec![ClusterKind::Workloads])),
            (Vec::new(), RVec::new()),
            (vec![answer(3.0)], RVec::from(vec![ClusterKind::Services])),
        ];
        let scope = Scope::new(Duration::from_secs(60));
        let out = appender_inputs(taken.clone(), &named, &scope).expect("inputs").data;
        assert_eq!(out.len(), 3);
        let values = |d: &AppenderData| -> Vec<f64> {
            d.results.iter().map(|r| r.series[0].samples[0].v).collect()
        };
        assert_eq!(values(&out[0]), [1.235, 2.0], "rounded to 0.001 as the traffic values");
        assert!(values(&out[1]).is_empty() && out[1].cluster.workloads.is_empty());
        assert_eq!(values(&out[2]), [3.0]);
        assert_eq!(out[0].cluster.workloads[0].name.as_str(), "Workloads");
        assert_eq!(out[2].cluster.workloads[0].name.as_str(), "Services");

        scope.cancel();
        assert!(appender_inputs(taken, &named, &scope).is_none());
    }

    #[test]
    fn appenders_asking_the_same_kinds_share_one_copy_in_turn() {
        let kinds = |k: &[ClusterKind]| RVec::from(k.to_vec());
        let taken = vec![
            (vec![answer(1.0)], kinds(&[ClusterKind::Workloads])),
            (Vec::new(), kinds(&[ClusterKind::Services])),
            (Vec::new(), kinds(&[ClusterKind::Workloads])),
            (Vec::new(), RVec::new()),
            (Vec::new(), kinds(&[ClusterKind::Workloads])),
        ];
        let made = std::sync::atomic::AtomicUsize::new(0);
        let counted = |k: &[ClusterKind]| {
            made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            named(k)
        };
        let scope = Scope::new(Duration::from_secs(60));
        let mut inputs = appender_inputs(taken, &counted, &scope).expect("inputs");
        assert_eq!(made.into_inner(), 2, "one copy per distinct set of kinds");
        assert_eq!(inputs.shares, [None, None, Some(0), None, Some(2)]);
        let first = |d: Option<&AppenderData>| {
            d.and_then(|d| d.cluster.workloads.first()).map(|w| w.name.to_string())
        };
        // Each appender in turn sees the data it declared.
        assert_eq!(first(inputs.take_turn(0)).as_deref(), Some("Workloads"));
        assert_eq!(inputs.data[0].results.len(), 1);
        // Done: its answers go, its cluster data waits for the next that shares it.
        inputs.done(0);
        assert!(inputs.data[0].results.is_empty());
        assert_eq!(first(inputs.take_turn(1)).as_deref(), Some("Services"));
        assert_eq!(first(inputs.take_turn(2)).as_deref(), Some("Workloads"));
        assert_eq!(first(inputs.take_turn(3)), None);
        assert_eq!(first(inputs.take_turn(4)).as_deref(), Some("Workloads"));
        assert!(inputs.take_turn(5).is_none());
    }
}
