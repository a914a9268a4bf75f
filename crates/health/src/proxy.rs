//! Proxy health: the Envoy cluster membership gauges of a service's ports.

use plugin_api::{HistogramStat, MetricQuery, QueryResult, QueryTime, RangeFunc};

use crate::{ProxyPair, status::value};

/// Envoy's metric-name form of a service's cluster: every character outside
/// `[a-zA-Z0-9_]` becomes `_` (e.g. `svc.cluster.local` → `svc_cluster_local`).
fn envoy_name(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// The membership gauges of one service: for each port, inbound healthy/total then
/// outbound healthy/total (four queries per port).
pub fn proxy_queries(
    namespace: &str,
    service: &str,
    ports: &[i32],
    identity_domain: &str,
    time: i64,
) -> Vec<MetricQuery> {
    let mut qs = Vec::new();
    for port in ports {
        for dir in ["inbound", "outbound"] {
            for stat in ["healthy", "total"] {
                let metric = format!(
                    "envoy_cluster_{dir}_{port}__{}_{}_{}_membership_{stat}",
                    envoy_name(service),
                    envoy_name(namespace),
                    envoy_name(identity_domain)
                );
                qs.push(MetricQuery {
                    metric: metric.into(),
                    matchers: Vec::new().into(),
                    func: RangeFunc::None,
                    window_secs: 0,
                    group_by: Some(Vec::new().into()).into(),
                    histogram: HistogramStat::None,
                    time: QueryTime::Instant(time),
                });
            }
        }
    }
    qs
}

/// Folds the results of [`proxy_queries`] (same order); missing series count as zero.
pub fn proxy_health(results: &[impl std::borrow::Borrow<QueryResult>]) -> ProxyPair {
    let mut p = ProxyPair::default();
    for (i, res) in results.iter().enumerate() {
        let v = res.borrow().series.iter().map(value).sum::<f64>().round() as i64;
        let target = if i % 4 < 2 { &mut p.inbound } else { &mut p.outbound };
        if i % 2 == 0 {
            target.healthy += v;
        } else {
            target.total += v;
        }
    }
    p
}
