//! Which cluster's telemetry a health answer counts.
//!
//! An instance that reads several clusters asks about one of them, and counts only that
//! cluster's requests, as Kiali v2 does (`prometheus/metrics.go`, `getItemRequestRates` and
//! `getServiceRequestRates`): inbound by `destination_cluster`, outbound by `source_cluster`.
//! A single-cluster instance passes no cluster and its queries stay as they were: older
//! telemetry carries no cluster labels, and there is nothing to tell apart.

use plugin_api::Matcher;

/// The matcher for the inbound side of `cluster`'s requests. A Service's requests also keep
/// `destination_cluster="unknown"`: Istio leaves the destination's cluster unknown when no
/// upstream answered (a 503), and Kiali counts those for the service (`=~"<name>|unknown"`).
pub(crate) fn inbound(cluster: Option<&str>, service: bool) -> Option<Matcher> {
    let c = cluster?;
    Some(if service {
        Matcher::re("destination_cluster", &format!("{}|unknown", regex::escape(c)))
    } else {
        Matcher::eq("destination_cluster", c)
    })
}

/// The matcher for the outbound side of `cluster`'s requests.
pub(crate) fn outbound(cluster: Option<&str>) -> Option<Matcher> {
    cluster.map(|c| Matcher::eq("source_cluster", c))
}
