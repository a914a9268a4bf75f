//! Support for the end-to-end tests: start the real binary, plugin folders, a loopback
//! Kubernetes API, a real Prometheus. Each module is owned by the tests that need it.

pub mod api_schema;
pub mod browser;
pub mod fixtures;
pub mod from_address;
pub mod in_cluster;
pub mod inprocess;
pub mod kube_api;
pub mod kube_reviews;
pub mod load;
pub mod mesh;
pub mod poll;
pub mod prometheus;
pub mod rbac;
pub mod server;
pub mod victoria;
