//! The traffic graph of meshlens.
//!
//! A graph request flows through this crate in one direction:
//! [`GraphOptions::parse`] (validated parameters, 400-style errors) → [`traffic_plan`] (the
//! metric queries, one per traffic family whatever the number of namespaces) → the host runs
//! them together with the appenders' declared inputs (one typed query batch) → [`build_graph`] →
//! appenders in [`appender_run_order`] → [`finish`] (outside/root markers, service-graph
//! reduction) → [`GraphOutput::new`] → JSON ([`GraphOutput::to_json`]) or DOT
//! ([`GraphOutput::to_dot`]).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod ambient;
mod boxes;
mod build;
mod dot;
mod finish;
mod fixed;
mod hash32;
mod json;
mod options;
mod order;
mod output;
mod plan;
mod query;
mod scope;
#[cfg(any(test, feature = "serde-reference"))]
mod serde_ref;

pub use ambient::{AmbientTraffic, AmbientWorkloads, IS_AMBIENT, IS_WAYPOINT};
pub use appender_support::UNKNOWN;
pub use build::{build_graph, build_graph_until};
pub use finish::{BUNDLED_APPENDERS, appender_run_order, finish, names_only};
pub use hash32::md5_hex;
pub use options::{
    BoxBy, GraphFormat, GraphLimits, GraphOptions, GraphSettings, GraphTarget, GroupBy,
    OptionsError,
};
pub use output::GraphOutput;
pub use par_chunks::Stopped;
pub use plan::{
    PlannedQuery, SourceFilter, TrafficKind, round_results, round_value, traffic_plan,
    traffic_queries,
};
pub use query::{
    Flag, GoSeconds, GraphQuery, GraphTypeParam, InjectParam, NotOffered, Quantile, UnixSeconds,
};
pub use scope::{ExprParam, GraphScope, Hops, MAX_HOPS};

#[cfg(test)]
mod tests;
