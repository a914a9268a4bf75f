//! One module per API; each lists its operations in `routes()`.

use crate::router::Route;

pub mod apps;
pub mod dashboards;
pub mod external;
pub mod graph;
pub mod health;
pub mod mesh_config;
pub mod metrics;
pub mod namespaces;
pub mod probes;
pub mod services;
pub mod status;
pub mod swagger;
pub mod token;
pub mod validations;
pub mod workloads;

/// Every operation the server answers.
pub fn all_routes() -> Vec<Route> {
    [
        status::routes(),
        probes::routes(),
        token::routes(),
        external::routes(),
        swagger::routes(),
        namespaces::routes(),
        apps::routes(),
        workloads::routes(),
        services::routes(),
        mesh_config::routes(),
        validations::routes(),
        health::routes(),
        metrics::routes(),
        graph::routes(),
        dashboards::routes(),
    ]
    .into_iter()
    .flatten()
    .collect()
}
