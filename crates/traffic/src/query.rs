//! The graph operations' query parameters (README, The API) as one typed struct, [`GraphQuery`],
//! and its value types. Each value type's error says what the parameter accepts; the host
//! answers `Invalid {parameter}: {that}` ([`crate::OptionsError`]).

use std::{fmt::Display, str::FromStr};

use meshlens_params::query::first;
use plugin_api::GraphType;
use serde::Deserialize;

use crate::ambient::AmbientTraffic;
use crate::options::{BoxBy, GraphFormat, GroupBy};

/// What the five graph operations accept. graphService does not offer `injectServiceNodes`:
/// it reads `GraphQuery<NotOffered>`, so any value there is ignored as before.
#[derive(Debug, Default, Deserialize)]
#[serde(default, bound(deserialize = "I: FromStr + Default, I::Err: Display"))]
pub struct GraphQuery<I = Flag> {
    /// `namespaces`: comma-separated (graphNamespaces only; the others take the path's).
    #[serde(deserialize_with = "first")]
    pub namespaces: Option<String>,
    /// `graphType`.
    #[serde(rename = "graphType", deserialize_with = "first")]
    pub graph_type: Option<GraphTypeParam>,
    /// `groupBy`.
    #[serde(rename = "groupBy", deserialize_with = "first")]
    pub group_by: Option<GroupBy>,
    /// `boxBy`: Kiali v2's comma-separated `cluster`, `namespace`, `app`.
    #[serde(rename = "boxBy", deserialize_with = "first")]
    pub box_by: Option<BoxBy>,
    /// `includeMesh`.
    #[serde(rename = "includeMesh", deserialize_with = "first")]
    pub include_mesh: Option<Flag>,
    /// `injectServiceNodes`.
    #[serde(rename = "injectServiceNodes", deserialize_with = "first")]
    pub inject_service_nodes: Option<I>,
    /// `duration` (Go's grammar).
    #[serde(deserialize_with = "first")]
    pub duration: Option<GoSeconds>,
    /// `queryTime`.
    #[serde(rename = "queryTime", deserialize_with = "first")]
    pub query_time: Option<UnixSeconds>,
    /// `appenders`: comma-separated names, checked against the registered appenders.
    #[serde(deserialize_with = "first")]
    pub appenders: Option<String>,
    /// `responseTimeQuantile`.
    #[serde(rename = "responseTimeQuantile", deserialize_with = "first")]
    pub response_time_quantile: Option<Quantile>,
    /// `format`.
    #[serde(deserialize_with = "first")]
    pub format: Option<GraphFormat>,
    /// `ambientTraffic`.
    #[serde(rename = "ambientTraffic", deserialize_with = "first")]
    pub ambient_traffic: Option<AmbientTraffic>,
    /// `waypoints`.
    #[serde(deserialize_with = "first")]
    pub waypoints: Option<Flag>,
    /// `clusterName`: the cluster of a node graph's node (the router checked that it is
    /// known); the namespaces graph ignores it, as it covers every cluster.
    #[serde(rename = "clusterName", deserialize_with = "first")]
    pub cluster_name: Option<String>,
}

/// A `graphType` value; the node-detail operations of an app narrow the set further.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphTypeParam(pub GraphType);

/// Every graph type, as the namespaces graph lists them in its 400.
pub(crate) const GRAPH_TYPES: &str = "app, service, versionedApp, workload";

impl FromStr for GraphTypeParam {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(GraphTypeParam(match s {
            "app" => GraphType::App,
            "versionedApp" => GraphType::VersionedApp,
            "service" => GraphType::Service,
            "workload" => GraphType::Workload,
            _ => return Err(format!("allowed values are {GRAPH_TYPES}")),
        }))
    }
}

impl FromStr for GroupBy {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(GroupBy::None),
            "app" => Ok(GroupBy::App),
            "version" => Ok(GroupBy::Version),
            _ => Err("allowed values are app, none, version"),
        }
    }
}

impl FromStr for BoxBy {
    type Err = &'static str;
    /// Comma-separated, in any order, empty items ignored (Kiali v2's `boxBy`,
    /// `graph/types.go`: `BoxByCluster`, `BoxByNamespace`, `BoxByApp`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut b = BoxBy::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match item {
                "cluster" => b.cluster = true,
                "namespace" => b.namespace = true,
                "app" => b.app = true,
                _ => return Err("allowed values are app, cluster, namespace (comma-separated)"),
            }
        }
        Ok(b)
    }
}

impl FromStr for GraphFormat {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "json" => Ok(GraphFormat::Json),
            "dot" => Ok(GraphFormat::Dot),
            _ => Err("allowed values are json, dot"),
        }
    }
}

/// A boolean as Go's `strconv.ParseBool` reads it (`true`, `T`, `1`, …).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Flag(pub bool);

impl FromStr for Flag {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        meshlens_params::parse_bool(s).map(Flag).ok_or("allowed values are true, false")
    }
}

/// A parameter the operation does not offer: whatever is sent is ignored.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct NotOffered;

impl FromStr for NotOffered {
    type Err = std::convert::Infallible;
    fn from_str(_: &str) -> Result<Self, Self::Err> {
        Ok(NotOffered)
    }
}

/// Reads `injectServiceNodes` where it is offered.
pub trait InjectParam {
    /// The value sent, if the operation offers the parameter.
    fn requested(&self) -> bool;
}

impl InjectParam for Flag {
    fn requested(&self) -> bool {
        self.0
    }
}

impl InjectParam for NotOffered {
    fn requested(&self) -> bool {
        false
    }
}

/// A graph `duration` (Go's grammar) in whole seconds, at least one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoSeconds(pub u64);

impl FromStr for GoSeconds {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_duration(s).map(GoSeconds).ok_or("expected a duration such as 600s, 10m or 1h")
    }
}

/// [`GoSeconds`]' grammar: Go's, whole seconds, at least one.
pub(crate) fn parse_duration(s: &str) -> Option<u64> {
    meshlens_params::parse_go_duration(s)
        .map(|d| d.as_secs())
        .filter(|secs| (1..1_000_000_000_000).contains(secs))
}

/// A `queryTime`: Unix seconds, positive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnixSeconds(pub i64);

impl FromStr for UnixSeconds {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        meshlens_params::parse_unix_seconds(s)
            .map(UnixSeconds)
            .ok_or("expected Unix time in seconds")
    }
}

/// A `responseTimeQuantile`: strictly between 0 and 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quantile(pub f64);

impl FromStr for Quantile {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|q| *q > 0.0 && *q < 1.0)
            .map(Quantile)
            .ok_or("expected a number between 0 and 1 (exclusive)")
    }
}
