//! The computed health status and the per-protocol, per-code request rates it is judged on.

use std::borrow::Cow;

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

/// Request rates by protocol, then by code: Kiali's RequestHealth maps (models/health.go),
/// kept as one short list sorted by (protocol, code), so that it is read in the order the
/// maps were. An object sees a handful of protocols and codes; two nested `BTreeMap`s of
/// owned strings per direction made the health appender allocate and fault in about 20 MB
/// for the 10,000 nodes of the 1,000-namespace graph, most of its time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ByCode(Vec<(Text, Text, f64)>);

/// A protocol or a code: the ones Istio reports all the time are not allocated (60,000 small
/// strings for the 1,000-namespace graph).
type Text = Cow<'static, str>;

fn text(s: &str) -> Text {
    let known = match s {
        "http" => "http",
        "grpc" => "grpc",
        "tcp" => "tcp",
        "-" => "-",
        "0" => "0",
        "1" => "1",
        "2" => "2",
        "4" => "4",
        "13" => "13",
        "14" => "14",
        "200" => "200",
        "204" => "204",
        "400" => "400",
        "401" => "401",
        "403" => "403",
        "404" => "404",
        "429" => "429",
        "500" => "500",
        "502" => "502",
        "503" => "503",
        "504" => "504",
        _ => return Cow::Owned(s.to_string()),
    };
    Cow::Borrowed(known)
}

impl ByCode {
    pub fn new() -> ByCode {
        ByCode::default()
    }

    /// Adds `rate` to the protocol's code.
    pub fn add(&mut self, protocol: &str, code: &str, rate: f64) {
        match self.0.binary_search_by(|(p, c, _)| (p.as_ref(), c.as_ref()).cmp(&(protocol, code))) {
            Ok(i) => self.0[i].2 += rate,
            Err(i) => self.0.insert(i, (text(protocol), text(code), rate)),
        }
    }

    /// Every (protocol, code, rate), by protocol then code.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, f64)> {
        self.0.iter().map(|(p, c, v)| (p.as_ref(), c.as_ref(), *v))
    }

    /// Each protocol with its (code, rate) entries, by protocol then code.
    pub fn by_protocol(&self) -> impl Iterator<Item = (&str, &[(Text, Text, f64)])> {
        self.0.chunk_by(|a, b| a.0 == b.0).map(|run| (run[0].0.as_ref(), run))
    }

    /// The rate of one protocol's code, if it was seen.
    pub fn rate(&self, protocol: &str, code: &str) -> Option<f64> {
        self.iter().find(|(p, c, _)| *p == protocol && *c == code).map(|(_, _, v)| v)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
/// Inbound and outbound request rates of one object, by protocol and code.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestCodes {
    pub inbound: ByCode,
    pub outbound: ByCode,
}

impl RequestCodes {
    /// True when any rate is above zero.
    pub fn has_traffic(&self) -> bool {
        self.inbound.iter().chain(self.outbound.iter()).any(|(_, _, v)| v > 0.0)
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

/// The protocol, the code and the rate a request series counts under
/// ([`protocol_and_code`]; a missing or non-finite rate is 0).
pub fn series_rate(s: &Series) -> (&str, &str, f64) {
    let (protocol, code) = protocol_and_code(s);
    (protocol, code, value(s))
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
    by_code.add(protocol, code, v);
}

/// Folds the results of [`crate::target_queries`] (inbound first, two of them; outbound
/// last) into codes by direction.
pub fn target_codes(
    results: &[impl std::borrow::Borrow<QueryResult>],
    ambient: &crate::Ambient,
) -> RequestCodes {
    let mut rc = RequestCodes::default();
    for (i, res) in results.iter().enumerate() {
        let dir = if i < 2 { &mut rc.inbound } else { &mut rc.outbound };
        for s in res.borrow().series.iter().filter(|s| ambient.counts(s)) {
            add_series(dir, s);
        }
    }
    rc
}
