//! What needs a real backend: a real Prometheus (tests/src/prometheus.rs), VictoriaMetrics, or
//! the loopback Kubernetes API (tests/src/kube_api/).
//!
//! One test binary per group (README, "The two commands"): one `mod` per test file.

mod ambient;
mod app_runtimes;
mod cluster_http;
mod cluster_kube;
mod cluster_liveness;
mod clusters_telemetry;
mod config_kinds;
mod dashboards_entities;
mod dashboards_precedence;
mod dashboards_prometheus;
mod dashboards_runtimes;
mod graph_clusters;
mod graph_prometheus;
mod graph_scope;
mod health;
mod health_status;
mod identities;
mod limits;
mod metrics_backends;
mod metrics_compare;
mod multi_cluster;
mod namespace_metrics;
mod simulator;
mod telemetry;
mod validations_http;
mod validations_kube;
