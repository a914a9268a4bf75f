//! The topology file: a small TOML description of a mesh and its traffic.
//!
//! ```toml
//! step_seconds = 15          # seconds between samples (default 15)
//! cycle_minutes = 30         # length of the scenario cycle (default 30)
//!
//! [[workload]]               # one per workload; no pods = a dead workload
//! namespace = "bookinfo"
//! name = "details-v1"
//! app = "details"
//! version = "v1"             # optional
//! service_account = "bookinfo-details"   # default: the workload's name
//! sidecar = false            # default true; reporters follow from it
//! pods = 1                   # default 1
//! ambient = true             # Istio ambient: ztunnel reports its TCP (with sidecar = false)
//! waypoint = true            # a waypoint proxy: reports the requests of those that use it
//! use_waypoint = "travel/waypoint"   # requests to this ambient workload go through it
//! cluster = "west"           # its series' source_cluster / destination_cluster (default "Kubernetes")
//!
//! [[edge]]
//! from = "bookinfo/productpage-v1"   # "namespace/workload", or "unknown" (outside the mesh)
//! to = "bookinfo/details-v1"         # omit for a ServiceEntry host (external = true)
//! service = "details"                # service name, or the external host
//! service_namespace = "bookinfo"     # default: the destination's namespace
//! port = 9080                        # optional: Envoy membership gauges for this service
//! protocol = "http"                  # http | grpc | tcp
//! mtls = true
//! latency_ms = 5.0                   # mean of an exponential request duration
//! request_bytes = 350.0              # optional: size histograms
//! response_bytes = 180.0
//! responses = [{ code = "200", rate = 9.0 }, { code = "404", rate = 1.0 }]
//! # tcp edges: sent_bytes, received_bytes (per second), connections (opened and closed per second)
//! # scenarios, in minutes of the cycle:
//! burst = { at_minute = 10, minutes = 4, code = "500", share = 0.5 }  # share of requests fail
//! spike = { at_minute = 20, minutes = 4, latency_ms = 900.0 }          # mean latency rises
//! shift = { at_minute = 0, minutes = 30, peak = 2.5 }   # traffic x1 → x peak (middle) → x1
//!
//! [[runtime]]                        # runtime metrics of an app's pods
//! namespace = "bookinfo"
//! app = "reviews"
//! kind = "vertx"                     # vertx | go
//! ```
//!
//! A response may also have `grpc_status`, `flags` (Envoy's response flags, default "-")
//! and `client_side = true` (a failure only the caller's proxy reports).

use serde::Deserialize;

/// A problem with a topology file, naming what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// The file cannot be read.
    #[error("cannot read the topology {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Not valid TOML, or a key or value the format does not have.
    #[error("topology {path}: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// toml's message (names the key and line).
        message: String,
    },
    /// Well-formed but inconsistent (an unknown workload, a scenario outside the cycle ...).
    #[error("topology: {0}")]
    Invalid(String),
}

fn default_step() -> u64 {
    15
}
fn default_cycle() -> u64 {
    30
}
fn yes() -> bool {
    true
}
fn one() -> u32 {
    1
}
fn no_flags() -> String {
    "-".into()
}
fn half() -> f64 {
    0.5
}
/// Istio's default CLUSTER_ID, and meshlens' default `[cluster] name`.
fn home_cluster() -> String {
    "Kubernetes".into()
}

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// Seconds between samples.
    #[serde(default = "default_step")]
    pub step_seconds: u64,
    /// Minutes of the scenario cycle.
    #[serde(default = "default_cycle")]
    pub cycle_minutes: u64,
    /// The workloads.
    #[serde(default)]
    pub workload: Vec<WorkloadSpec>,
    /// The traffic.
    #[serde(default)]
    pub edge: Vec<EdgeSpec>,
    /// Runtime metrics.
    #[serde(default)]
    pub runtime: Vec<RuntimeSpec>,
}

/// One workload.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    pub namespace: String,
    pub name: String,
    pub app: String,
    pub version: Option<String>,
    pub service_account: Option<String>,
    #[serde(default = "yes")]
    pub sidecar: bool,
    #[serde(default = "one")]
    pub pods: u32,
    /// Captured by ztunnel (Istio's ambient mode): its ztunnel reports its TCP, with
    /// `app="ztunnel"`; no L7 report of its own (needs `sidecar = false`).
    #[serde(default)]
    pub ambient: bool,
    /// A waypoint proxy: it reports (`reporter="waypoint"`) the requests to the workloads
    /// that use it (needs `sidecar = false`).
    #[serde(default)]
    pub waypoint: bool,
    /// The waypoint (`namespace/name`) requests to this ambient workload go through.
    pub use_waypoint: Option<String>,
    /// The cluster it runs in: the `source_cluster` / `destination_cluster` of its series.
    #[serde(default = "home_cluster")]
    pub cluster: String,
}

/// Protocol of an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Http,
    Grpc,
    Tcp,
}

impl Protocol {
    /// The `request_protocol` label value.
    pub fn label(self) -> &'static str {
        match self {
            Protocol::Http => "http",
            Protocol::Grpc => "grpc",
            Protocol::Tcp => "tcp",
        }
    }
}

/// One response class of an edge.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseSpec {
    pub code: String,
    /// Requests per second.
    pub rate: f64,
    pub grpc_status: Option<String>,
    #[serde(default = "no_flags")]
    pub flags: String,
    #[serde(default)]
    pub client_side: bool,
}

/// An error burst: for `minutes` from `at_minute` of each cycle, `share` of the edge's
/// requests answer `code` instead.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Burst {
    pub at_minute: u64,
    pub minutes: u64,
    pub code: String,
    pub share: f64,
}

/// A latency spike: the mean request duration is `latency_ms` for `minutes` from `at_minute`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spike {
    pub at_minute: u64,
    pub minutes: u64,
    pub latency_ms: f64,
}

/// A traffic shift (a canary's share): the edge's rates are multiplied by a factor that rises
/// linearly from 1 to `peak` over the first half of the span and falls back over the second.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shift {
    pub at_minute: u64,
    pub minutes: u64,
    pub peak: f64,
}

/// One source → destination edge.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeSpec {
    pub from: String,
    pub to: Option<String>,
    pub service: String,
    pub service_namespace: Option<String>,
    #[serde(default)]
    pub external: bool,
    pub port: Option<u16>,
    pub protocol: Protocol,
    #[serde(default)]
    pub mtls: bool,
    #[serde(default)]
    pub latency_ms: f64,
    pub request_bytes: Option<f64>,
    pub response_bytes: Option<f64>,
    #[serde(default)]
    pub responses: Vec<ResponseSpec>,
    #[serde(default)]
    pub sent_bytes: f64,
    #[serde(default)]
    pub received_bytes: f64,
    #[serde(default = "half")]
    pub connections: f64,
    pub burst: Option<Burst>,
    pub spike: Option<Spike>,
    pub shift: Option<Shift>,
}

/// Which runtime's metrics an app exposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    Vertx,
    Go,
}

/// Runtime metrics for every pod of an app.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeSpec {
    pub namespace: String,
    pub app: String,
    pub kind: Runtime,
}

impl Topology {
    /// Reads and checks a topology file.
    pub fn load(path: &std::path::Path) -> Result<Topology, TopologyError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| TopologyError::Io { path: shown.clone(), source })?;
        Topology::parse(&text).map_err(|e| match e {
            TopologyError::Syntax { message, .. } => TopologyError::Syntax { path: shown, message },
            other => other,
        })
    }

    /// Parses and checks topology text.
    pub fn parse(text: &str) -> Result<Topology, TopologyError> {
        let t: Topology = toml::from_str(text)
            .map_err(|e| TopologyError::Syntax { path: "(text)".into(), message: e.to_string() })?;
        t.check()?;
        Ok(t)
    }

    /// The workload `namespace/name`.
    pub fn workload(&self, key: &str) -> Option<&WorkloadSpec> {
        let (ns, name) = key.split_once('/')?;
        self.workload.iter().find(|w| w.namespace == ns && w.name == name)
    }

    fn check(&self) -> Result<(), TopologyError> {
        let bad = |m: String| Err(TopologyError::Invalid(m));
        if self.step_seconds == 0
            || self.cycle_minutes == 0
            || !(self.cycle_minutes * 60).is_multiple_of(self.step_seconds)
        {
            return bad("step_seconds and cycle_minutes must be above zero, and a cycle a whole number of steps".into());
        }
        for (i, e) in self.edge.iter().enumerate() {
            let at = format!("edge {} ({} -> {})", i + 1, e.from, e.service);
            if e.from != "unknown" && self.workload(&e.from).is_none() {
                return bad(format!(
                    "{at}: from {:?} is not \"unknown\" nor a listed namespace/workload",
                    e.from
                ));
            }
            match (&e.to, e.external) {
                (Some(to), false) if self.workload(to).is_some() => {}
                (None, true) => {}
                (Some(to), false) => {
                    return bad(format!("{at}: to {to:?} is not a listed namespace/workload"));
                }
                _ => {
                    return bad(format!(
                        "{at}: an edge has a destination workload (to) or is external, not both"
                    ));
                }
            }
            if e.external && e.service_namespace.is_none() {
                return bad(format!("{at}: an external edge needs service_namespace"));
            }
            let rates = e.responses.iter().map(|r| r.rate).chain([
                e.sent_bytes,
                e.received_bytes,
                e.connections,
            ]);
            if rates.into_iter().any(|r| !r.is_finite() || r < 0.0)
                || !e.latency_ms.is_finite()
                || e.latency_ms < 0.0
            {
                return bad(format!("{at}: rates and latencies must be finite and not negative"));
            }
            if e.protocol == Protocol::Tcp && !e.responses.is_empty() {
                return bad(format!(
                    "{at}: a tcp edge has no responses (use sent_bytes/received_bytes)"
                ));
            }
            if e.protocol != Protocol::Tcp && e.responses.is_empty() {
                return bad(format!("{at}: an http or grpc edge needs responses"));
            }
            let spans = [
                e.burst.as_ref().map(|b| (b.at_minute, b.minutes)),
                e.spike.as_ref().map(|s| (s.at_minute, s.minutes)),
                e.shift.as_ref().map(|s| (s.at_minute, s.minutes)),
            ];
            if spans
                .into_iter()
                .flatten()
                .any(|(at, len)| len == 0 || at + len > self.cycle_minutes)
            {
                return bad(format!(
                    "{at}: a scenario must last at least a minute and end within the cycle"
                ));
            }
            if e.burst.as_ref().is_some_and(|b| !(0.0..=1.0).contains(&b.share)) {
                return bad(format!("{at}: burst share must be between 0 and 1"));
            }
            if e.shift.as_ref().is_some_and(|s| !s.peak.is_finite() || s.peak < 0.0)
                || e.spike.as_ref().is_some_and(|s| !s.latency_ms.is_finite() || s.latency_ms < 0.0)
            {
                return bad(format!(
                    "{at}: shift peak and spike latency must be finite and not negative"
                ));
            }
        }
        for w in &self.workload {
            let at = format!("workload {}/{}", w.namespace, w.name);
            if w.cluster.is_empty() {
                return bad(format!("{at}: cluster must not be empty"));
            }
            if (w.ambient || w.waypoint) && w.sidecar {
                return bad(format!("{at}: an ambient workload or waypoint has sidecar = false"));
            }
            if let Some(wp) = &w.use_waypoint
                && (!w.ambient || !self.workload(wp).is_some_and(|x| x.waypoint))
            {
                return bad(format!(
                    "{at}: use_waypoint needs ambient = true and names a waypoint = true workload"
                ));
            }
        }
        for r in &self.runtime {
            if !self.workload.iter().any(|w| w.namespace == r.namespace && w.app == r.app) {
                return bad(format!("runtime {}/{}: no workload of that app", r.namespace, r.app));
            }
        }
        Ok(())
    }
}
