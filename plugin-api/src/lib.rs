//! The stable-ABI contract between the meshlens host and its plugins.
//!
//! A plugin is a `cdylib` that depends on this crate alone. It implements one or more
//! component traits — [`GraphAppender`], [`MetricsStore`], [`TemplateSource`] — registers
//! each value with a `register_*!` macro, and calls [`export_plugin!`] once. The host
//! finds the library in a configured plugin folder at start-up, checks its ABI layout and
//! the plugin-api version it was built against, and registers its components by name.
//!
//! Every entry point of the generated adapters catches panics on the plugin's side and
//! returns a [`PluginError`], so a faulty plugin fails one request instead of the host.
//!
//! Appenders do no I/O: they declare what they need ([`AppenderInputs`]: cluster kinds and
//! structured [`MetricQuery`]s), the host fetches all of it concurrently, then calls
//! [`GraphAppender::apply`] with the results.
//!
//! # A minimal appender
//!
//! ```
//! use plugin_api::{AppenderData, Graph, GraphAppender, GraphRequest, PluginError, Value};
//!
//! /// Marks every edge that carries HTTP traffic with `"busy": true`.
//! struct Busy;
//!
//! impl GraphAppender for Busy {
//!     fn name(&self) -> &str {
//!         "busy"
//!     }
//!     fn apply(&self, _req: &GraphRequest, _data: &AppenderData, graph: &mut Graph) -> Result<(), PluginError> {
//!         for edge in graph.edges.iter_mut() {
//!             if edge.rates.http > 0.0 {
//!                 edge.set_field("busy", Value::Bool(true));
//!             }
//!         }
//!         Ok(())
//!     }
//! }
//!
//! plugin_api::register_appender!(Busy);
//! plugin_api::export_plugin!(name: "busy-edges", version: "0.1.0");
//! # fn main() {}
//! ```
//!
//! Build it with `crate-type = ["cdylib"]` and drop the library into a folder listed in
//! `plugins.dirs`.
#![allow(non_camel_case_types, non_local_definitions)]
#![warn(missing_docs)]

pub mod appender;
pub mod backend;
pub mod cancel;
pub mod cluster;
pub mod compliance;
pub mod dashboards;
pub mod export;
pub mod graph;
pub mod guard;
pub mod label_set;
pub mod log;
pub mod mesh;
pub mod metrics;
pub mod types;

pub use appender::{
    Appender, AppenderAdapter, AppenderBox, AppenderData, AppenderInputs, GraphAppender,
};
pub use backend::{MetricsAdapter, MetricsBackend, MetricsBackendBox, MetricsStore};
pub use cancel::Cancel;
pub use cluster::{ClusterData, ClusterKind, ConfigObject, ServiceInfo, WorkloadInfo};
pub use dashboards::{
    AggregationDef, ChartTemplate, DashboardAdapter, DashboardProvider, DashboardProviderBox,
    DashboardTemplate, DataType, ProviderTier, TemplateSource,
};
pub use export::{Components, PluginMod, PluginMod_Ref};
pub use graph::{
    Edge, EdgeRates, Graph, GraphRequest, GraphType, Node, NodeRates, NodeType, UNKNOWN_CLUSTER,
};
pub use label_set::LabelSet;
pub use metrics::{
    BackendStatus, HistogramStat, MatchOp, Matcher, MetricQuery, QueryResult, QueryTime, RangeFunc,
    Sample, Series,
};
pub use types::{ErrorKind, Field, Label, PluginError, Value, label_value};

#[doc(hidden)]
pub use abi_stable;
#[doc(hidden)]
pub use inventory;

/// The version of this crate; a plugin records the one it was built against.
pub const API_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Whether a plugin built against `plugin` can be loaded by a host built against `host`:
/// the same major version, and for 0.x the same minor version.
pub fn api_compatible(host: &str, plugin: &str) -> bool {
    let parse = |v: &str| -> Option<(u64, u64)> {
        let mut it = v.trim().split('.');
        Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
    };
    match (parse(host), parse(plugin)) {
        (Some((hmaj, hmin)), Some((pmaj, pmin))) => hmaj == pmaj && (hmaj != 0 || hmin == pmin),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn api_versions_on_one_line_are_compatible() {
        assert!(super::api_compatible("0.1.0", "0.1.7"));
        assert!(!super::api_compatible("0.1.0", "0.2.0"));
        assert!(!super::api_compatible("0.1.0", "0.0.9"));
        assert!(super::api_compatible("1.2.0", "1.0.0"));
        assert!(!super::api_compatible("1.0.0", "2.0.0"));
        assert!(!super::api_compatible("0.1.0", "garbage"));
    }
}
