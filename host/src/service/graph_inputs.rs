//! The appenders' inputs of one graph: each appender's answers as owned values across the
//! ABI and the cluster data it declared, made on the CPU pool beside the build.

use std::sync::Arc;

use abi_stable::std_types::RVec;
use meshlens_query_batch::owned;
use meshlens_traffic::round_results;
use plugin_api::{AppenderData, ClusterData, ClusterKind, QueryResult};
use rayon::prelude::*;

use crate::limits::Scope;

/// Each appender's answers, rounded as the traffic values are (an answer is moved, not
/// copied, unless another owner shares it), and its cluster data from `cluster_data`, in
/// appender order. One task per answer and per cluster data: the pool thread that finishes
/// the build first takes over what is left of these, where one thread used to make them all
/// in turn (on the 1,000-namespace graph, the longer of the two). `None` once the request
/// is gone: what is left is not copied.
pub fn appender_inputs(
    taken: Vec<(Vec<Arc<QueryResult>>, RVec<ClusterKind>)>,
    cluster_data: &(dyn Fn(&[ClusterKind]) -> ClusterData + Sync),
    scope: &Scope,
) -> Option<Vec<AppenderData>> {
    taken
        .into_par_iter()
        .map(|(answers, kinds)| {
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
                    if kinds.is_empty() {
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
        .collect()
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
        let out = appender_inputs(taken.clone(), &named, &scope).expect("inputs");
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
}
