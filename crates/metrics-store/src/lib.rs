//! The embedded metrics store: what the `openmetrics_file` and `simulator` backends share, so
//! both answer every query identically (and as Prometheus does over the same samples).
//!
//! - [`store`]: series with interned labels and compact samples, indexed by metric name;
//! - [`parse`]: reading OpenMetrics / Prometheus text exposition files into a store;
//! - [`eval`]: evaluating a structured query with PromQL's semantics;
//! - [`cap`]: the host's cap on series per answer.
#![forbid(unsafe_code)]

pub mod cap;
pub mod eval;
pub mod parse;
pub mod store;
