//! What needs a process of its own: the CLI, signals and drain, the listener, logs, plugins
//! loaded from disk, the deploy manifests and the demo, and load. Operations checked beside
//! them (foundation's answers, lifecycle's forbidden kind) run on the service in process.
//!
//! One test binary per group (README, "The two commands"): one `mod` per test file.

mod cli;
mod demo;
mod deploy_cluster;
mod deploy_manifests;
mod deploy_victoria;
mod foundation;
mod graph_custom_appender;
mod lifecycle;
mod listener;
mod load;
mod log_backpressure;
