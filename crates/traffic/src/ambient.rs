//! Istio's ambient data plane in the graph: the `ambientTraffic` parameter, the waypoints the
//! cluster knows, and the `isAmbient` / `isWaypoint` node fields.
//!
//! Telemetry facts (Kiali `graph/telemetry/istio/util/util.go` `GetReporter`, `GetApp`):
//! ztunnel reports only TCP (`istio_tcp_*`), scraped with `app="ztunnel"`; waypoints report
//! requests with `reporter="waypoint"`, naming the real client and server. A hop through a
//! waypoint is two halves in ztunnel's data: client → waypoint (reported only by the
//! client's ztunnel, `reporter="source"`) and waypoint → server (only by the server's,
//! `reporter="destination"`). See `plan.rs` for how each is counted once.

use std::{
    collections::{HashMap, HashSet},
    str::FromStr,
};

use plugin_api::{Graph, NodeType, Value};

/// `ambientTraffic`: which ambient telemetry the graph reads. Sidecar telemetry is read
/// whatever the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AmbientTraffic {
    /// Waypoint requests and ztunnel TCP (the default).
    #[default]
    Total,
    /// ztunnel TCP only.
    Ztunnel,
    /// Waypoint requests only.
    Waypoint,
    /// Neither.
    None,
}

impl AmbientTraffic {
    /// Whether waypoint-reported requests are read.
    pub fn waypoint_requests(self) -> bool {
        matches!(self, AmbientTraffic::Total | AmbientTraffic::Waypoint)
    }
    /// Whether ztunnel's TCP series are read.
    pub fn ztunnel_tcp(self) -> bool {
        matches!(self, AmbientTraffic::Total | AmbientTraffic::Ztunnel)
    }
}

impl FromStr for AmbientTraffic {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "total" => Ok(AmbientTraffic::Total),
            "ztunnel" => Ok(AmbientTraffic::Ztunnel),
            "waypoint" => Ok(AmbientTraffic::Waypoint),
            "none" => Ok(AmbientTraffic::None),
            _ => Err("allowed values are total, ztunnel, waypoint, none"),
        }
    }
}

/// The graph node field of ambient workloads (and apps whose workloads all are).
pub const IS_AMBIENT: &str = "isAmbient";
/// The graph node field of waypoints.
pub const IS_WAYPOINT: &str = "isWaypoint";

/// What the cluster says about ambient workloads, for the graph build. Kiali keeps a
/// waypoint map built from the workloads for the same reason (`GetWaypointMap` in
/// `graph/telemetry/istio/istio.go`): the telemetry does not say which workload is a
/// waypoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AmbientWorkloads {
    /// Waypoint names by namespace: looked up per series without making a key.
    waypoints: HashMap<String, HashSet<String>>,
    workloads: HashSet<(String, String)>,
    apps: HashSet<(String, String)>,
    versions: HashSet<(String, String, String)>,
}

impl AmbientWorkloads {
    /// Records a waypoint workload (namespace, name).
    pub fn add_waypoint(&mut self, namespace: &str, name: &str) {
        self.waypoints.entry(namespace.into()).or_default().insert(name.into());
        self.workloads.insert((namespace.into(), name.into()));
    }
    /// Records an ambient workload (namespace, name).
    pub fn add_workload(&mut self, namespace: &str, name: &str) {
        self.workloads.insert((namespace.into(), name.into()));
    }
    /// Records an app whose workloads are all ambient.
    pub fn add_app(&mut self, namespace: &str, app: &str) {
        self.apps.insert((namespace.into(), app.into()));
    }
    /// Records an app version whose workloads are all ambient.
    pub fn add_version(&mut self, namespace: &str, app: &str, version: &str) {
        self.versions.insert((namespace.into(), app.into(), version.into()));
    }
    /// Whether (namespace, workload) is a waypoint.
    pub fn is_waypoint(&self, namespace: &str, workload: &str) -> bool {
        self.waypoints.get(namespace).is_some_and(|s| s.contains(workload))
    }
    /// The waypoints' workload names, sorted, each once.
    pub fn waypoint_names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.waypoints.values().flatten().map(String::as_str).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
    /// Whether the cluster has a waypoint.
    pub fn has_waypoints(&self) -> bool {
        !self.waypoints.is_empty()
    }
    /// Whether nothing is ambient (the answer is then exactly the sidecar-only one).
    pub fn is_empty(&self) -> bool {
        self.workloads.is_empty() && self.apps.is_empty()
    }

    /// Sets `isWaypoint` on waypoint nodes and `isAmbient` on them, on ambient workload
    /// nodes and on app nodes whose workloads are all ambient. Service nodes are never
    /// flagged (a service is not captured; its workloads are).
    ///
    /// Run after the build (the appenders read the flags: sidecarsCheck skips such nodes,
    /// ambient hides waypoints) and again after the appenders, for the nodes they added
    /// (unusedNode's idle workloads): there `hasMissingSC`, which such a node got for lack
    /// of a flag, is cleared, since ambient workloads and waypoints have no sidecar by design.
    pub fn mark(&self, graph: &mut Graph) {
        if self.is_empty() {
            return;
        }
        for n in graph.nodes.iter_mut() {
            let ns = n.namespace.to_string();
            let (ambient, waypoint) = match n.node_type {
                NodeType::Workload => {
                    let waypoint = self.is_waypoint(&ns, n.workload.as_str());
                    (self.workloads.contains(&(ns, n.workload.to_string())), waypoint)
                }
                // A versioned app node that names its workload follows the workload.
                NodeType::App if !n.workload.is_empty() => {
                    let key = (ns.clone(), n.workload.to_string());
                    let by_version =
                        self.versions.contains(&(ns, n.app.to_string(), n.version.to_string()));
                    (self.workloads.contains(&key) || by_version, false)
                }
                NodeType::App if !n.version.is_empty() => {
                    (self.versions.contains(&(ns, n.app.to_string(), n.version.to_string())), false)
                }
                NodeType::App => (self.apps.contains(&(ns, n.app.to_string())), false),
                _ => (false, false),
            };
            if ambient {
                n.set_field(IS_AMBIENT, Value::Bool(true));
                n.has_missing_sc = false;
            }
            if waypoint {
                n.set_field(IS_WAYPOINT, Value::Bool(true));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plugin_api::Node;

    #[test]
    fn values_parse_and_bad_ones_list_the_allowed() {
        assert_eq!("total".parse(), Ok(AmbientTraffic::Total));
        assert_eq!("ztunnel".parse(), Ok(AmbientTraffic::Ztunnel));
        assert_eq!("waypoint".parse(), Ok(AmbientTraffic::Waypoint));
        assert_eq!("none".parse(), Ok(AmbientTraffic::None));
        assert!("Total".parse::<AmbientTraffic>().unwrap_err().contains("total, ztunnel"));
        assert!(AmbientTraffic::Total.waypoint_requests() && AmbientTraffic::Total.ztunnel_tcp());
        assert!(!AmbientTraffic::None.waypoint_requests() && !AmbientTraffic::None.ztunnel_tcp());
    }

    #[test]
    fn marks_workloads_apps_and_waypoints_but_not_services() {
        let mut a = AmbientWorkloads::default();
        a.add_waypoint("ns", "waypoint");
        a.add_workload("ns", "api-v1");
        a.add_app("ns", "api");
        a.add_version("ns", "api", "v1");
        let mut g = Graph::default();
        let mut wl = |id: &str, t: NodeType, w: &str, app: &str, v: &str| {
            let mut n = Node::new(id, t, "ns");
            n.workload = w.into();
            n.app = app.into();
            n.version = v.into();
            g.nodes.push(n);
        };
        wl("wp", NodeType::Workload, "waypoint", "", "");
        wl("w1", NodeType::Workload, "api-v1", "api", "v1");
        wl("w2", NodeType::Workload, "db-v1", "db", "v1");
        wl("a1", NodeType::App, "", "api", "");
        wl("a2", NodeType::App, "", "db", "");
        wl("v1", NodeType::App, "", "api", "v1");
        wl("s1", NodeType::Service, "", "", "");
        a.mark(&mut g);
        let flags: Vec<(bool, bool)> = g
            .nodes
            .iter()
            .map(|n| {
                let f =
                    |k: &str| n.extra.iter().any(|f| f.key == k && f.value == Value::Bool(true));
                (f(IS_AMBIENT), f(IS_WAYPOINT))
            })
            .collect();
        assert_eq!(
            flags,
            [
                (true, true),
                (true, false),
                (false, false),
                (true, false),
                (false, false),
                (true, false),
                (false, false)
            ]
        );
    }
}
