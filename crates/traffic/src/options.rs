//! Graph request parameters (README, The API): the typed [`GraphQuery`], validated into
//! [`GraphOptions`].

use meshlens_params::query::{QueryError, parse_query};
use plugin_api::abi_stable::std_types::RString;
use plugin_api::{GraphRequest, GraphType};

use std::sync::Arc;

use crate::ambient::{AmbientTraffic, AmbientWorkloads};
pub use crate::boxes::BoxBy;
use crate::query::{GraphQuery, InjectParam, NotOffered};

/// A rejected parameter: the host answers 400 with [`OptionsError::message`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct OptionsError {
    /// The parameter at fault.
    pub param: String,
    /// A message naming the parameter and, where there is a closed set, its allowed values.
    pub message: String,
}

impl OptionsError {
    fn new(param: &str, message: String) -> Self {
        OptionsError { param: param.to_string(), message }
    }
    /// `Invalid {param}: {what it accepts}`; never the value sent (no reflected request text).
    /// An app's node graph accepts fewer graph types, and its message lists those.
    fn from_query(e: QueryError, app_route: bool) -> Self {
        let reason = if app_route && e.param == "graphType" {
            "allowed values are app, versionedApp".to_string()
        } else {
            e.reason
        };
        match e.param.as_str() {
            "" => Self::new("", reason),
            p => Self::new(p, format!("Invalid {p}: {reason}")),
        }
    }
}

/// Which graph operation was called (and its path parameters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraphTarget {
    /// graphNamespaces: namespaces come from the `namespaces` query parameter.
    Namespaces,
    /// graphApp.
    App {
        /// Path namespace.
        namespace: String,
        /// App label value.
        app: String,
    },
    /// graphAppVersion.
    AppVersion {
        /// Path namespace.
        namespace: String,
        /// App label value.
        app: String,
        /// Version label value.
        version: String,
    },
    /// graphService.
    Service {
        /// Path namespace.
        namespace: String,
        /// Service name.
        service: String,
    },
    /// graphWorkload.
    Workload {
        /// Path namespace.
        namespace: String,
        /// Workload name.
        workload: String,
    },
}

impl GraphTarget {
    /// graphApp and graphAppVersion: their graphs are of apps.
    fn is_app_route(&self) -> bool {
        matches!(self, GraphTarget::App { .. } | GraphTarget::AppVersion { .. })
    }
}

/// `groupBy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    /// No boxes.
    None,
    /// Boxes per app.
    App,
    /// Boxes per app over versioned app nodes (versionedApp graphs only).
    Version,
}

/// `format`: the response encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    /// Cytoscape JSON (the default).
    Json,
    /// Graphviz DOT.
    Dot,
}

/// Values from the service's configuration that shape every graph.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphSettings {
    /// The mesh's infrastructure namespace (e.g. `istio-system`).
    pub mesh_namespace: String,
    /// The app label name.
    pub app_label: String,
    /// The version label name.
    pub version_label: String,
    /// The identity domain, e.g. `svc.cluster.local`.
    pub identity_domain: String,
    /// The home cluster's name (`cluster.name`): its nodes' ids carry no cluster.
    pub home_cluster: String,
}

impl Default for GraphSettings {
    fn default() -> Self {
        GraphSettings {
            mesh_namespace: "istio-system".into(),
            app_label: "app".into(),
            version_label: "version".into(),
            identity_domain: "svc.cluster.local".into(),
            home_cluster: "Kubernetes".into(),
        }
    }
}

/// What one graph request may ask for (`[limits]` in the service's configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphLimits {
    /// Most namespaces in `namespaces`.
    pub max_namespaces: usize,
    /// Longest `duration`, seconds.
    pub max_window_secs: u64,
    /// How far `queryTime` may be past `now`, seconds.
    pub max_future_secs: u64,
    /// The server's clock, Unix seconds. Not the default `queryTime`, which the answer
    /// cache rounds down and so lags the clock by up to one TTL.
    pub now: i64,
}

impl Default for GraphLimits {
    /// The contract's defaults, at the current time.
    fn default() -> Self {
        GraphLimits {
            max_namespaces: 1000,
            max_window_secs: 30 * 86_400,
            max_future_secs: 300,
            now: meshlens_params::now(),
        }
    }
}

/// A validated graph request.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphOptions {
    /// The operation and its path parameters.
    pub target: GraphTarget,
    /// Requested namespaces, in request order, without duplicates (one for node graphs).
    pub namespaces: Vec<String>,
    /// `graphType`.
    pub graph_type: GraphType,
    /// `groupBy`.
    pub group_by: GroupBy,
    /// `boxBy`.
    pub box_by: BoxBy,
    /// `includeMesh`.
    pub include_mesh: bool,
    /// `injectServiceNodes` (forced on for graphType=service).
    pub inject_service_nodes: bool,
    /// `duration` in whole seconds.
    pub duration_secs: u64,
    /// `queryTime`, Unix seconds.
    pub query_time: i64,
    /// `appenders`: `None` = all, `Some([])` = none.
    pub appenders: Option<Vec<String>>,
    /// `responseTimeQuantile`.
    pub response_time_quantile: f64,
    /// `format`.
    pub format: GraphFormat,
    /// Configuration values.
    pub settings: GraphSettings,
    /// `ambientTraffic` (default `total`).
    pub ambient_traffic: AmbientTraffic,
    /// `waypoints`: show waypoint nodes (default false).
    pub waypoints: bool,
    /// The cluster's ambient workloads and waypoints; the host fills it after parsing.
    pub ambient: Arc<AmbientWorkloads>,
    /// A node graph's `clusterName`: its node is that cluster's (inbound
    /// `destination_cluster`, outbound `source_cluster`). `None` (not given, or the
    /// namespaces graph) selects the node by name in every cluster, as before clusters.
    pub node_cluster: Option<String>,
}

impl GraphOptions {
    /// Validates the query string (without `?`) of one graph operation under the default
    /// limits.
    ///
    /// `now` is the current Unix time; `known_appenders` are the registered appender names
    /// (for the `appenders` check).
    pub fn parse(
        target: GraphTarget,
        query: &str,
        now: i64,
        known_appenders: &[String],
        settings: &GraphSettings,
    ) -> Result<GraphOptions, OptionsError> {
        Self::parse_limited(target, query, now, known_appenders, settings, &GraphLimits::default())
    }

    /// [`GraphOptions::parse`] under the given cost limits: a request over one is refused
    /// with a message naming the parameter and the limit, before anything is queried.
    pub fn parse_limited(
        target: GraphTarget,
        query: &str,
        now: i64,
        known_appenders: &[String],
        settings: &GraphSettings,
        limits: &GraphLimits,
    ) -> Result<GraphOptions, OptionsError> {
        let app_route = target.is_app_route();
        let read = |e| OptionsError::from_query(e, app_route);
        if let GraphTarget::Service { .. } = target {
            let q: GraphQuery<NotOffered> = parse_query(query).map_err(read)?;
            Self::from_query(target, q, now, known_appenders, settings, limits)
        } else {
            let q: GraphQuery = parse_query(query).map_err(read)?;
            Self::from_query(target, q, now, known_appenders, settings, limits)
        }
    }

    /// Validates the typed parameters: what depends on the operation, the registered
    /// appenders and the limits.
    pub fn from_query<I: InjectParam>(
        target: GraphTarget,
        q: GraphQuery<I>,
        now: i64,
        known_appenders: &[String],
        settings: &GraphSettings,
        limits: &GraphLimits,
    ) -> Result<GraphOptions, OptionsError> {
        let target_is_node = target != GraphTarget::Namespaces;
        let namespaces = match &target {
            GraphTarget::Namespaces => {
                let mut out: Vec<String> = Vec::new();
                // Each once, in the order asked; a set, as 1,000 namespaces are accepted.
                let mut seen: std::collections::HashSet<&str> = Default::default();
                for ns in q
                    .namespaces
                    .as_deref()
                    .unwrap_or_default()
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                {
                    if seen.insert(ns) {
                        out.push(ns.to_string());
                    }
                }
                if out.is_empty() {
                    return Err(OptionsError::new(
                        "namespaces",
                        "At least one namespace must be specified via the namespaces query parameter.".into(),
                    ));
                }
                if out.len() > limits.max_namespaces {
                    return Err(OptionsError::new(
                        "namespaces",
                        format!(
                            "Invalid namespaces: at most {} namespaces per graph are accepted (limits.max_graph_namespaces)",
                            limits.max_namespaces
                        ),
                    ));
                }
                out
            }
            GraphTarget::App { namespace, .. }
            | GraphTarget::AppVersion { namespace, .. }
            | GraphTarget::Service { namespace, .. }
            | GraphTarget::Workload { namespace, .. } => vec![namespace.clone()],
        };
        let default_type = match target {
            GraphTarget::App { .. } => GraphType::App,
            GraphTarget::AppVersion { .. } => GraphType::VersionedApp,
            _ => GraphType::Workload,
        };
        let graph_type = q.graph_type.map_or(default_type, |t| t.0);
        if target.is_app_route() && matches!(graph_type, GraphType::Service | GraphType::Workload) {
            return Err(OptionsError::new(
                "graphType",
                "Invalid graphType. This node detail graph supports only graphType app or versionedApp.".to_string(),
            ));
        }
        let duration_secs = q.duration.map_or(600, |d| d.0);
        if duration_secs > limits.max_window_secs {
            return Err(OptionsError::new(
                "duration",
                format!(
                    "Invalid duration: at most {}s is accepted (limits.max_window)",
                    limits.max_window_secs
                ),
            ));
        }
        let query_time = q.query_time.map_or(now, |t| t.0);
        if query_time
            > limits.now.saturating_add(i64::try_from(limits.max_future_secs).unwrap_or(i64::MAX))
        {
            return Err(OptionsError::new(
                "queryTime",
                format!(
                    "Invalid queryTime: at most {}s past the server's clock is accepted (limits.max_query_time_skew)",
                    limits.max_future_secs
                ),
            ));
        }
        let appenders = match q.appenders {
            None => None,
            Some(v) => {
                let mut list: Vec<String> = Vec::new();
                for name in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    if !known_appenders.iter().any(|k| k == name) {
                        let mut known = known_appenders.to_vec();
                        known.sort();
                        return Err(OptionsError::new(
                            "appenders",
                            format!(
                                "Invalid appender in appenders: allowed values are {}",
                                known.join(", ")
                            ),
                        ));
                    }
                    if !list.iter().any(|n| n == name) {
                        list.push(name.to_string());
                    }
                }
                Some(list)
            }
        };
        let inject_param = q.inject_service_nodes.is_some_and(|i| i.requested());
        Ok(GraphOptions {
            inject_service_nodes: inject_param || graph_type == GraphType::Service,
            target,
            namespaces,
            graph_type,
            group_by: q.group_by.unwrap_or(GroupBy::None),
            box_by: q.box_by.unwrap_or_default(),
            include_mesh: q.include_mesh.is_some_and(|f| f.0),
            duration_secs,
            query_time,
            appenders,
            response_time_quantile: q.response_time_quantile.map_or(0.95, |r| r.0),
            format: q.format.unwrap_or(GraphFormat::Json),
            settings: settings.clone(),
            ambient_traffic: q.ambient_traffic.unwrap_or_default(),
            waypoints: q.waypoints.is_some_and(|f| f.0),
            ambient: Arc::default(),
            node_cluster: q.cluster_name.filter(|c| !c.is_empty() && target_is_node),
        })
    }

    /// True for the four node-detail operations.
    pub fn is_node_graph(&self) -> bool {
        self.target != GraphTarget::Namespaces
    }

    /// Whether edges into the mesh namespace are filtered out (includeMesh=false and the mesh
    /// namespace itself was not requested).
    pub fn excludes_mesh(&self) -> bool {
        !self.include_mesh && !self.namespaces.contains(&self.settings.mesh_namespace)
    }

    /// The request as appenders see it. `duration_metric`/`duration_to_ms` name the
    /// request-duration histogram the store has.
    pub fn graph_request(&self, duration_metric: &str, duration_to_ms: f64) -> GraphRequest {
        GraphRequest {
            namespaces: self.namespaces.iter().map(|s| RString::from(s.as_str())).collect(),
            graph_type: self.graph_type,
            node_graph: self.is_node_graph(),
            duration_secs: self.duration_secs,
            query_time: self.query_time,
            include_mesh: self.include_mesh,
            inject_service_nodes: self.inject_service_nodes,
            response_time_quantile: self.response_time_quantile,
            mesh_namespace: self.settings.mesh_namespace.as_str().into(),
            app_label: self.settings.app_label.as_str().into(),
            version_label: self.settings.version_label.as_str().into(),
            identity_domain: self.settings.identity_domain.as_str().into(),
            duration_metric: duration_metric.into(),
            duration_to_ms,
            home_cluster: self.settings.home_cluster.as_str().into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::parse_duration;
    use meshlens_params::query::query_string;

    fn parse(target: GraphTarget, q: &[(&str, &str)]) -> Result<GraphOptions, OptionsError> {
        let known: Vec<String> = crate::BUNDLED_APPENDERS.iter().map(|s| s.to_string()).collect();
        GraphOptions::parse(
            target,
            &query_string(q),
            1_700_000_000,
            &known,
            &GraphSettings::default(),
        )
    }

    #[test]
    fn defaults_follow_the_spec() {
        let o = parse(GraphTarget::Namespaces, &[("namespaces", " a, b ,a,")]).unwrap();
        assert_eq!(o.namespaces, ["a", "b"]);
        assert_eq!(o.graph_type, GraphType::Workload);
        assert_eq!(
            (o.duration_secs, o.query_time, o.group_by),
            (600, 1_700_000_000, GroupBy::None)
        );
        assert_eq!(
            (o.include_mesh, o.inject_service_nodes, o.appenders.clone()),
            (false, false, None)
        );
        assert_eq!((o.response_time_quantile, o.format), (0.95, GraphFormat::Json));
    }

    #[test]
    fn app_routes_default_and_restrict_the_graph_type() {
        let app = GraphTarget::App { namespace: "ns".into(), app: "a".into() };
        let ver = GraphTarget::AppVersion {
            namespace: "ns".into(),
            app: "a".into(),
            version: "v1".into(),
        };
        assert_eq!(parse(app.clone(), &[]).unwrap().graph_type, GraphType::App);
        assert_eq!(parse(ver, &[]).unwrap().graph_type, GraphType::VersionedApp);
        let e = parse(app.clone(), &[("graphType", "workload")]).unwrap_err();
        assert_eq!(e.param, "graphType");
        assert!(e.message.contains("app or versionedApp"), "{}", e.message);
        let e = parse(app, &[("graphType", "x")]).unwrap_err();
        assert_eq!(e.message, "Invalid graphType: allowed values are app, versionedApp");
    }

    #[test]
    fn parameters_an_operation_does_not_read_are_ignored_and_the_first_value_counts() {
        let svc = GraphTarget::Service { namespace: "ns".into(), service: "s".into() };
        let o = parse(svc, &[("injectServiceNodes", "maybe"), ("namespaces", "")]).unwrap();
        assert!(!o.inject_service_nodes, "graphService does not offer the parameter");
        let wl = GraphTarget::Workload { namespace: "ns".into(), workload: "w".into() };
        let e = parse(wl, &[("injectServiceNodes", "maybe")]).unwrap_err();
        assert_eq!(e.message, "Invalid injectServiceNodes: allowed values are true, false");
        let o = parse(
            GraphTarget::Namespaces,
            &[("namespaces", "a"), ("duration", "1m"), ("duration", "soon"), ("extra", "1")],
        )
        .unwrap();
        assert_eq!(o.duration_secs, 60);
    }

    #[test]
    fn bad_values_name_the_parameter_and_allowed_values() {
        let cases = [
            ("graphType", "x", "app, service, versionedApp, workload"),
            ("groupBy", "x", "app, none, version"),
            ("boxBy", "cluster,version", "app, cluster, namespace"),
            ("boxBy", "Cluster", "app, cluster, namespace"),
            ("includeMesh", "x", "true, false"),
            ("injectServiceNodes", "x", "true, false"),
            ("duration", "10 minutes", "10m"),
            ("queryTime", "yesterday", "Unix time"),
            ("appenders", "deadNode,nope", "deadNode, health, mesh, responseTime"),
            ("responseTimeQuantile", "1.5", "between 0 and 1"),
            ("format", "svg", "json, dot"),
            ("ambientTraffic", "all", "total, ztunnel, waypoint, none"),
            ("waypoints", "yes", "true, false"),
        ];
        for (p, v, allowed) in cases {
            let e = parse(GraphTarget::Namespaces, &[("namespaces", "a"), (p, v)]).unwrap_err();
            assert_eq!(e.param, p);
            assert!(e.message.contains(p) && e.message.contains(allowed), "{}", e.message);
        }
        let e = parse(GraphTarget::Namespaces, &[]).unwrap_err();
        assert_eq!(e.param, "namespaces");
    }

    #[test]
    fn service_graphs_force_injection_and_appenders_can_be_emptied() {
        let o = parse(
            GraphTarget::Namespaces,
            &[("namespaces", "a"), ("graphType", "service"), ("appenders", "")],
        )
        .unwrap();
        assert!(o.inject_service_nodes);
        assert_eq!(o.appenders, Some(vec![]));
        let o = parse(
            GraphTarget::Namespaces,
            &[("namespaces", "a"), ("duration", "1h30m"), ("includeMesh", "T")],
        )
        .unwrap();
        assert_eq!((o.duration_secs, o.include_mesh), (5400, true));
    }

    #[test]
    fn requests_over_a_limit_name_the_parameter_and_the_limit() {
        let limits = GraphLimits {
            max_namespaces: 2,
            max_window_secs: 3600,
            max_future_secs: 60,
            now: 1_000,
        };
        let run = |q: &[(&str, &str)]| limited(q, 1_000, &limits);
        let e = run(&[("namespaces", "a,b,c")]).unwrap_err();
        assert_eq!(e.param, "namespaces");
        assert!(
            e.message.contains("at most 2") && e.message.contains("limits.max_graph_namespaces"),
            "{}",
            e.message
        );
        assert!(run(&[("namespaces", "a,b,a")]).is_ok(), "duplicates count once");
        let e = run(&[("namespaces", "a"), ("duration", "2h")]).unwrap_err();
        assert_eq!(e.param, "duration");
        assert!(
            e.message.contains("3600s") && e.message.contains("limits.max_window"),
            "{}",
            e.message
        );
        assert!(run(&[("namespaces", "a"), ("duration", "1h")]).is_ok());
        let e = run(&[("namespaces", "a"), ("queryTime", "1061")]).unwrap_err();
        assert_eq!(e.param, "queryTime");
        assert!(
            e.message.contains("60s") && e.message.contains("limits.max_query_time_skew"),
            "{}",
            e.message
        );
        assert!(run(&[("namespaces", "a"), ("queryTime", "1060")]).is_ok());
        // The defaults are the contract's.
        assert_eq!(
            parse(GraphTarget::Namespaces, &[("namespaces", "a"), ("duration", "721h")])
                .unwrap_err()
                .param,
            "duration"
        );
        assert!(
            parse(GraphTarget::Namespaces, &[("namespaces", "a"), ("duration", "720h")]).is_ok()
        );
    }

    /// A namespace graph's parameters `q`, parsed at default time `now` under `limits`.
    fn limited(
        q: &[(&str, &str)],
        now: i64,
        limits: &GraphLimits,
    ) -> Result<GraphOptions, OptionsError> {
        GraphOptions::parse_limited(
            GraphTarget::Namespaces,
            &query_string(q),
            now,
            &[],
            &GraphSettings::default(),
            limits,
        )
    }

    #[test]
    fn query_time_skew_is_checked_against_the_clock_not_the_aligned_default_time() {
        // The answer cache rounds the default time down (here to 900 while the clock reads
        // 1,050): a queryTime within the skew of the clock is accepted, and past it refused.
        let limits = GraphLimits {
            max_namespaces: 2,
            max_window_secs: 3600,
            max_future_secs: 60,
            now: 1_050,
        };
        let run = |t: &str| limited(&[("namespaces", "a"), ("queryTime", t)], 900, &limits);
        assert_eq!(run("1110").unwrap().query_time, 1110);
        assert_eq!(run("1111").unwrap_err().param, "queryTime");
        // Without queryTime the aligned time is used.
        let o = limited(&[("namespaces", "a")], 900, &limits).unwrap();
        assert_eq!(o.query_time, 900);
    }

    #[test]
    fn go_durations_parse() {
        assert_eq!(parse_duration("600s"), Some(600));
        assert_eq!(parse_duration("1.5h"), Some(5400));
        assert_eq!(parse_duration("90"), None);
        assert_eq!(parse_duration("500ms"), None);
        assert_eq!(parse_duration("-5m"), None);
    }
}
