//! The computed health status and the per-protocol, per-code request rates it is judged on.

use std::collections::BTreeMap;

use plugin_api::{QueryResult, Series};
use serde::Serialize;

/// A computed health status.
///
/// Kiali (models/health_status.go) also has `Not Ready` for a workload scaled to zero; here
/// that is `na`, as the issue asks: nothing to judge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing to judge: a service without traffic, a workload scaled to zero.
    Na,
    /// Within every tolerance, all replicas up.
    Healthy,
    /// A tolerance's `degraded` reached, or fewer replicas available than desired.
    Degraded,
    /// A tolerance's `failure` reached, or no replica available.
    Failure,
}

impl Status {
    /// Every status, best to worst after `na` (the gauge's `status` label values).
    pub const ALL: [Status; 4] = [Status::Healthy, Status::Degraded, Status::Failure, Status::Na];

    /// The JSON and label spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Na => "na",
            Status::Healthy => "healthy",
            Status::Degraded => "degraded",
            Status::Failure => "failure",
        }
    }

    /// The worse of two (Kiali's MergeHealthStatus: failure > degraded > healthy > na).
    pub fn worst(self, other: Status) -> Status {
        self.max(other)
    }
}

/// A workload's replica status (Kiali's models.WorkloadStatusHealth, without the current
/// replica and proxy-sync counts meshlens does not keep): none desired is `na`, none
/// available is failure, fewer available than desired is degraded.
pub fn workload_status(desired: i64, available: i64) -> Status {
    if desired <= 0 {
        Status::Na
    } else if available <= 0 {
        Status::Failure
    } else if available < desired {
        Status::Degraded
    } else {
        Status::Healthy
    }
}

/// Request rates by protocol, then by code: Kiali's RequestHealth maps (models/health.go).
pub type ByCode = BTreeMap<String, BTreeMap<String, f64>>;

/// Inbound and outbound request rates of one object, by protocol and code.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestCodes {
    pub inbound: ByCode,
    pub outbound: ByCode,
}

impl RequestCodes {
    /// True when any rate is above zero.
    pub fn has_traffic(&self) -> bool {
        self.inbound
            .values()
            .chain(self.outbound.values())
            .flat_map(|c| c.values())
            .any(|v| *v > 0.0)
    }
}

/// The protocol and the code a request series counts under, as Kiali's `aggregate`
/// (models/health.go): `response_code` 0 is `-` (no response) whatever the protocol, and
/// gRPC requests use `grpc_response_status`, since Istio reports 200 for gRPC errors.
pub fn protocol_and_code(s: &Series) -> (&str, &str) {
    let protocol = s.labels.get("request_protocol").unwrap_or("");
    let code = s.labels.get("response_code").unwrap_or("");
    let code = if code == "0" {
        "-"
    } else if protocol == "grpc" {
        s.labels.get("grpc_response_status").unwrap_or(code)
    } else {
        code
    };
    (protocol, code)
}

pub(crate) fn value(s: &Series) -> f64 {
    s.samples.first().map(|x| x.v).filter(|v| v.is_finite()).unwrap_or(0.0)
}

/// Adds a series' rate to `by_code`.
pub fn add_series(by_code: &mut ByCode, s: &Series) {
    add(by_code, s, value(s));
}

pub(crate) fn add(by_code: &mut ByCode, s: &Series, v: f64) {
    let (protocol, code) = protocol_and_code(s);
    let codes = match by_code.get_mut(protocol) {
        Some(c) => c,
        None => by_code.entry(protocol.to_string()).or_default(),
    };
    match codes.get_mut(code) {
        Some(x) => *x += v,
        None => {
            codes.insert(code.to_string(), v);
        }
    }
}

/// Folds the results of [`crate::target_queries`] (inbound first, two of them; outbound
/// last) into codes by direction.
pub fn target_codes(results: &[impl std::borrow::Borrow<QueryResult>]) -> RequestCodes {
    let mut rc = RequestCodes::default();
    for (i, res) in results.iter().enumerate() {
        let dir = if i < 2 { &mut rc.inbound } else { &mut rc.outbound };
        for s in res.borrow().series.iter() {
            add_series(dir, s);
        }
    }
    rc
}
