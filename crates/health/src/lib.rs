//! Health: request rates and error counts of apps, services, workloads and namespaces,
//! deployment statuses and proxy (Envoy cluster membership) health.
//!
//! Each request is counted once, the way the graph counts it: from the source proxy's
//! report (`reporter="source"`), plus the destination proxy's report only where the
//! source has no proxy (`source_workload="unknown"`). So client-side failures (e.g.
//! `response_flags="UF"`) are seen and nothing is counted twice. Errors are responses
//! whose code starts with 4 or 5.
//!
//! In Istio's ambient mode a waypoint reports the requests it proxies
//! (`reporter="waypoint"`, with the real client and server); its clients have no L7 proxy
//! of their own, so the waypoint's report stands where the source's would be (Kiali
//! `graph/telemetry/istio/util/util.go` `GetReporter` reads `reporter=~"waypoint|source"`).
//! ztunnel reports only TCP, so a workload with ztunnel alone has no request counts.
//! Which report stands for a request is told by its source ([`Ambient::counts`]), as the
//! graph does (`meshlens-traffic`, `traffic_plan`): a waypoint's report only where the
//! caller has no L7 proxy of its own (a sidecar's or gateway's `reporter="source"` report
//! of the same request is read instead), and a sidecar server's `reporter="destination"`
//! report also where the caller is an ambient workload (nobody on its side reports it).
//! In a cluster without ambient workloads the queries are exactly those of a sidecar mesh.
//!
//! Every answer also carries a computed `status`, judged by the configured rules
//! ([`Rules`], Kiali's `health_config.rate`) on the request rates by protocol and code,
//! and by the replicas of the workloads involved ([`workload_status`]).
//!
//! The crate plans structured queries and folds their results; it does no I/O.
#![forbid(unsafe_code)]

use std::collections::{BTreeMap, BTreeSet};

use plugin_api::{HistogramStat, Matcher, MetricQuery, QueryResult, QueryTime, RangeFunc, Series};
use serde::Serialize;

mod config;
mod pattern;
mod proxy;
mod rules;
mod scope;
mod status;

pub use config::HealthConfig;
pub use proxy::{proxy_health, proxy_queries};
pub use rules::{RateRule, RuleProblem, Rules, ToleranceRule, default_rule, thresholds};
use status::value;
pub use status::{
    ByCode, RequestCodes, Status, add_series, protocol_and_code, series_rate, target_codes,
    workload_status,
};

const REQUESTS: &str = "istio_requests_total";

/// What the status is judged on: the protocol and both codes (gRPC errors are in
/// `grpc_response_status`, models/health.go in Kiali).
const CODES: [&str; 3] = ["request_protocol", "response_code", "grpc_response_status"];

/// What a single-object health request is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target<'a> {
    /// An app (value of the app label).
    App(&'a str),
    /// A Service.
    Service(&'a str),
    /// A workload.
    Workload(&'a str),
}

/// The namespace health `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `app` (default).
    App,
    /// `service`.
    Service,
    /// `workload`.
    Workload,
}

impl Kind {
    /// The spelling rules match `kind` against.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::App => "app",
            Kind::Service => "service",
            Kind::Workload => "workload",
        }
    }

    /// Parses the `type` parameter.
    pub fn parse(text: &str) -> Option<Kind> {
        match text {
            "app" => Some(Kind::App),
            "service" => Some(Kind::Service),
            "workload" => Some(Kind::Workload),
            _ => None,
        }
    }
}

/// `{requestCount, requestErrorCount}`: request and error rates (per second) over the interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Requests {
    pub request_count: f64,
    pub request_error_count: f64,
}

/// `{name, replicas, available}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeploymentStatus {
    pub name: String,
    pub replicas: i64,
    pub available: i64,
}

/// `{healthy, total}` endpoints of an Envoy cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ProxyHealth {
    pub healthy: i64,
    pub total: i64,
}

/// Inbound and outbound proxy health of one service.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ProxyPair {
    pub inbound: ProxyHealth,
    pub outbound: ProxyHealth,
}

/// One entry of AppHealth's `proxy` list.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServiceProxy {
    pub service: String,
    pub inbound: ProxyHealth,
    pub outbound: ProxyHealth,
}

/// AppHealth.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppHealth {
    pub deployment_statuses: Vec<DeploymentStatus>,
    pub proxy: Vec<ServiceProxy>,
    pub requests: Requests,
    /// The worst of the request status and every workload's status.
    pub status: Status,
}

/// ServiceHealth.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServiceHealth {
    pub proxy: ProxyPair,
    pub requests: Requests,
    /// The request status.
    pub status: Status,
}

/// WorkloadHealth.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadHealth {
    pub deployment_status: DeploymentStatus,
    pub requests: Requests,
    /// The worse of the request status and the workload's status.
    pub status: Status,
}

/// `{errorRatio, inboundErrorRatio, outboundErrorRatio}`; -1 where there was no traffic.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ratios {
    pub error_ratio: f64,
    pub inbound_error_ratio: f64,
    pub outbound_error_ratio: f64,
}

/// One entry of a namespace health map.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceEntry {
    pub requests: Ratios,
    /// Workloads of the app (type app); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload_statuses: Option<Vec<DeploymentStatus>>,
    /// The workload itself (type workload); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload_status: Option<DeploymentStatus>,
    /// The entry's computed status.
    pub status: Status,
}

/// The cluster's ambient workloads other than waypoints (Istio ambient): callers without
/// an L7 proxy of their own. Empty in a cluster without ambient workloads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ambient {
    /// Workload names by namespace.
    clients: BTreeMap<String, BTreeSet<String>>,
    /// Whether the cluster has any ambient workload (waypoints too).
    any: bool,
}

/// The labels an ambient-aware query adds to its grouping, for [`Ambient::counts`].
const SOURCE_BY: [&str; 3] = ["reporter", "source_workload_namespace", "source_workload"];

impl Ambient {
    /// Records an ambient workload other than a waypoint.
    pub fn add_client(&mut self, namespace: &str, workload: &str) {
        self.clients.entry(namespace.into()).or_default().insert(workload.into());
        self.any = true;
    }
    /// Records a waypoint.
    pub fn add_waypoint(&mut self) {
        self.any = true;
    }
    /// Whether nothing is ambient (the queries are then those of a sidecar mesh).
    pub fn is_empty(&self) -> bool {
        !self.any
    }
    fn is_client(&self, namespace: Option<&str>, workload: Option<&str>) -> bool {
        namespace
            .zip(workload)
            .is_some_and(|(n, w)| self.clients.get(n).is_some_and(|s| s.contains(w)))
    }
    /// The clients' names as one alternation (any namespace: [`Ambient::counts`] checks it).
    fn names(&self) -> Vec<String> {
        let set: BTreeSet<&String> = self.clients.values().flatten().collect();
        set.into_iter().map(|n| regex::escape(n)).collect()
    }
    /// Whether a series of the planned queries stands for its requests: a waypoint's report
    /// only where the caller has no L7 proxy (an ambient workload, or one nobody can name),
    /// a destination report only where the caller is unknown or an ambient workload; every
    /// source report. Always true in a cluster without ambient workloads.
    pub fn counts(&self, s: &Series) -> bool {
        if self.is_empty() {
            return true;
        }
        let (ns, wl) = (s.labels.get("source_workload_namespace"), s.labels.get("source_workload"));
        let unknown = wl.is_none_or(|w| w == "unknown");
        match s.labels.get("reporter") {
            Some("waypoint" | "destination") => unknown || self.is_client(ns, wl),
            _ => true,
        }
    }
}

fn base(matchers: Vec<Matcher>, group_by: &[&str], window_secs: u64, time: i64) -> MetricQuery {
    MetricQuery {
        metric: REQUESTS.into(),
        matchers: matchers.into(),
        func: RangeFunc::Rate,
        window_secs,
        group_by: Some(group_by.iter().map(|s| (*s).into()).collect::<Vec<_>>().into()).into(),
        histogram: HistogramStat::None,
        time: QueryTime::Instant(time),
    }
}

/// The source proxy's or the waypoint's report.
fn from_client() -> Matcher {
    Matcher::re("reporter", "source|waypoint")
}

/// How a plan's queries group: `group_by`, plus the source and reporter where the cluster
/// has ambient workloads ([`Ambient::counts`] reads them).
fn grouping<'a>(group_by: &[&'a str], ambient: &Ambient) -> Vec<&'a str> {
    let mut g = group_by.to_vec();
    if !ambient.is_empty() {
        g.extend(SOURCE_BY);
    }
    g
}

/// The reports that together count every request into `dest` once: source- (or
/// waypoint-) reported, plus destination-reported from callers without a proxy (and, in an
/// ambient cluster, from ambient callers).
fn counted_once(
    dest: Vec<Matcher>,
    group_by: &[&str],
    ambient: &Ambient,
    window: u64,
    time: i64,
) -> [MetricQuery; 2] {
    let by = grouping(group_by, ambient);
    let mut from_source = vec![from_client()];
    from_source.extend(dest.iter().cloned());
    let unknown = if ambient.is_empty() {
        Matcher::eq("source_workload", "unknown")
    } else {
        let mut names = vec!["unknown".to_string()];
        names.extend(ambient.names());
        Matcher::re("source_workload", &names.join("|"))
    };
    let mut from_unknown = vec![Matcher::eq("reporter", "destination"), unknown];
    from_unknown.extend(dest);
    [base(from_source, &by, window, time), base(from_unknown, &by, window, time)]
}

/// The outbound queries of `source`: its proxy's (or waypoints') reports, and in an ambient
/// cluster the sidecar servers' reports of ambient callers.
fn outbound(
    source: Vec<Matcher>,
    group_by: &[&str],
    ambient: &Ambient,
    window: u64,
    time: i64,
) -> Vec<MetricQuery> {
    let by = grouping(group_by, ambient);
    let mut m = vec![from_client()];
    m.extend(source.iter().cloned());
    let mut qs = vec![base(m, &by, window, time)];
    let names = ambient.names();
    if !names.is_empty() {
        let mut m = vec![
            Matcher::eq("reporter", "destination"),
            Matcher::re("source_workload", &names.join("|")),
        ];
        m.extend(source);
        qs.push(base(m, &by, window, time));
    }
    qs
}

/// Queries for one object's request health: inbound (two reports), then outbound.
/// `cluster`: only that cluster's requests count (see [`scope`]); `None` counts every series.
pub fn target_queries(
    namespace: &str,
    cluster: Option<&str>,
    target: Target<'_>,
    ambient: &Ambient,
    window_secs: u64,
    time: i64,
) -> Vec<MetricQuery> {
    let by = CODES;
    let (mut inbound, mut outbound_sel) = match target {
        Target::App(app) => (
            vec![
                Matcher::eq("destination_workload_namespace", namespace),
                Matcher::eq("destination_app", app),
            ],
            Some(vec![
                Matcher::eq("source_workload_namespace", namespace),
                Matcher::eq("source_app", app),
            ]),
        ),
        Target::Workload(w) => (
            vec![
                Matcher::eq("destination_workload_namespace", namespace),
                Matcher::eq("destination_workload", w),
            ],
            Some(vec![
                Matcher::eq("source_workload_namespace", namespace),
                Matcher::eq("source_workload", w),
            ]),
        ),
        Target::Service(s) => (
            vec![
                Matcher::eq("destination_service_namespace", namespace),
                Matcher::eq("destination_service_name", s),
            ],
            None,
        ),
    };
    inbound.extend(scope::inbound(cluster, matches!(target, Target::Service(_))));
    if let Some(out) = outbound_sel.as_mut() {
        out.extend(scope::outbound(cluster));
    }
    let mut qs: Vec<MetricQuery> = counted_once(inbound, &by, ambient, window_secs, time).into();
    if let Some(out) = outbound_sel {
        qs.extend(outbound(out, &by, ambient, window_secs, time));
    }
    qs
}

fn is_error(code: Option<&str>) -> bool {
    matches!(code.and_then(|c| c.chars().next()), Some('4' | '5'))
}

/// Folds the results of [`target_queries`] (same order) into request counts.
pub fn target_requests(
    results: &[impl std::borrow::Borrow<QueryResult>],
    ambient: &Ambient,
) -> Requests {
    let mut r = Requests::default();
    for res in results {
        for s in res.borrow().series.iter().filter(|s| ambient.counts(s)) {
            let v = value(s);
            r.request_count += v;
            if is_error(s.labels.get("response_code")) {
                r.request_error_count += v;
            }
        }
    }
    r
}

/// The fixed set of queries for a namespace's health, however many objects it holds.
/// `cluster`: only that cluster's requests count (see [`scope`]); `None` counts every series.
pub fn namespace_queries(
    namespace: &str,
    cluster: Option<&str>,
    kind: Kind,
    ambient: &Ambient,
    window_secs: u64,
    time: i64,
) -> Vec<MetricQuery> {
    let selector = |label: &str, side: Option<Matcher>| {
        let mut m = vec![Matcher::eq(label, namespace)];
        m.extend(side);
        m
    };
    match kind {
        Kind::Service => counted_once(
            selector("destination_service_namespace", scope::inbound(cluster, true)),
            &["destination_service_name", CODES[0], CODES[1], CODES[2]],
            ambient,
            window_secs,
            time,
        )
        .into(),
        Kind::App | Kind::Workload => {
            let mut qs: Vec<MetricQuery> = counted_once(
                selector("destination_workload_namespace", scope::inbound(cluster, false)),
                &["destination_app", "destination_workload", CODES[0], CODES[1], CODES[2]],
                ambient,
                window_secs,
                time,
            )
            .into();
            qs.extend(outbound(
                selector("source_workload_namespace", scope::outbound(cluster)),
                &["source_app", "source_workload", CODES[0], CODES[1], CODES[2]],
                ambient,
                window_secs,
                time,
            ));
            qs
        }
    }
}

#[derive(Default, Clone)]
struct Counts {
    in_req: f64,
    in_err: f64,
    out_req: f64,
    out_err: f64,
    codes: RequestCodes,
}

fn ratio(err: f64, req: f64) -> f64 {
    if req > 0.0 { err / req } else { -1.0 }
}

impl Counts {
    fn ratios(&self) -> Ratios {
        Ratios {
            error_ratio: ratio(self.in_err + self.out_err, self.in_req + self.out_req),
            inbound_error_ratio: ratio(self.in_err, self.in_req),
            outbound_error_ratio: ratio(self.out_err, self.out_req),
        }
    }
}

/// One object of the namespace, as the cluster knows it.
#[derive(Clone, Debug)]
pub struct Entity {
    /// App, service or workload name.
    pub name: String,
    /// Deployment statuses of an app's workloads (type app).
    pub statuses: Option<Vec<DeploymentStatus>>,
    /// The deployment status of a workload (type workload).
    pub status: Option<DeploymentStatus>,
}

impl Entity {
    /// The worst replica status of the entity's workloads (`na` for a service).
    fn workloads_status(&self) -> Status {
        self.statuses
            .iter()
            .flatten()
            .chain(self.status.iter())
            .map(DeploymentStatus::status)
            .fold(Status::Na, Status::worst)
    }
}

impl DeploymentStatus {
    /// The replica status of this workload ([`workload_status`]).
    pub fn status(&self) -> Status {
        workload_status(self.replicas, self.available)
    }
}

/// The status of one object: its request status under `rules`, merged with the replica
/// status of its workloads (Kiali's CalculateAppHealth / CalculateWorkloadHealth /
/// CalculateServiceHealth in business/health_calculator.go).
pub fn object_status(
    rules: &Rules,
    namespace: &str,
    kind: Kind,
    name: &str,
    codes: &RequestCodes,
    workloads: &[DeploymentStatus],
) -> Status {
    workloads
        .iter()
        .map(DeploymentStatus::status)
        .fold(rules.request_status(namespace, kind.as_str(), name, codes), Status::worst)
}

/// Folds the results of [`namespace_queries`] (same order) into the namespace health map.
/// Every entity gets an entry, with -1 ratios when it saw no traffic, and its status under
/// `rules`.
pub fn namespace_health(
    rules: &Rules,
    namespace: &str,
    kind: Kind,
    entities: Vec<Entity>,
    results: &[impl std::borrow::Borrow<QueryResult>],
    ambient: &Ambient,
) -> BTreeMap<String, NamespaceEntry> {
    let (in_label, out_label) = match kind {
        Kind::App => ("destination_app", "source_app"),
        Kind::Workload => ("destination_workload", "source_workload"),
        Kind::Service => ("destination_service_name", ""),
    };
    let mut counts: BTreeMap<String, Counts> = BTreeMap::new();
    for (i, res) in results.iter().enumerate() {
        // Inbound results come first (two of them), outbound last.
        let inbound = i < 2;
        let label = if inbound { in_label } else { out_label };
        for s in res.borrow().series.iter().filter(|s| ambient.counts(s)) {
            let Some(name) = s.labels.get(label) else { continue };
            let v = value(s);
            let err = is_error(s.labels.get("response_code"));
            let c = match counts.get_mut(name) {
                Some(c) => c,
                None => counts.entry(name.to_string()).or_default(),
            };
            if inbound {
                c.in_req += v;
                if err {
                    c.in_err += v;
                }
                status::add(&mut c.codes.inbound, s, v);
            } else {
                c.out_req += v;
                if err {
                    c.out_err += v;
                }
                status::add(&mut c.codes.outbound, s, v);
            }
        }
    }
    let idle = Counts::default();
    entities
        .into_iter()
        .map(|e| {
            let c = counts.get(&e.name).unwrap_or(&idle);
            let status = rules
                .request_status(namespace, kind.as_str(), &e.name, &c.codes)
                .worst(e.workloads_status());
            (
                e.name,
                NamespaceEntry {
                    requests: c.ratios(),
                    workload_statuses: e.statuses,
                    workload_status: e.status,
                    status,
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests;
