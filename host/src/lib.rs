//! meshlens: an observability service for a service mesh.
//!
//! request → route ([`router`]) → handler ([`api`]) → plan → fetch (cluster cache and the
//! [`metrics_engine`], concurrently) → build → appenders → JSON.
#![forbid(unsafe_code)]

pub mod access;
pub mod answer_cache;
pub mod api;
pub mod auth;
pub mod cluster_access;
pub mod clusters;
pub mod config;
pub mod console;
pub mod context;
pub mod dropper;
pub mod error;
pub mod flights;
pub mod health_export;
pub mod lifecycle;
pub mod limits;
pub mod listener;
pub mod logwriter;
pub mod metrics_engine;
pub mod plugins;
pub mod probe_port;
pub mod router;
pub mod server;
pub mod service;
pub mod state;
pub mod telemetry;
// The state over hand-made cluster views and reviewers, called in-process.
#[cfg(test)]
mod seams_test;
// The generator of host/swagger.json (a test writes or checks the file).
#[cfg(test)]
mod swagger_gen;
