//! One module per API; each lists its operations in `routes()`.

use crate::{error::ApiError, router::Route};

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

/// A list answer whose items (`items`: the array's key) each name the cluster they are in,
/// as Kiali v2's list items carry `cluster`: a client that lists several clusters' namespaces
/// keeps apart the same name in two of them.
pub(crate) fn items_in_cluster<T: serde::Serialize>(
    list: &T,
    items: &str,
    cluster: &str,
) -> Result<serde_json::Value, ApiError> {
    let mut v = serde_json::to_value(list)
        .map_err(|e| ApiError::internal(format!("serialisation failed: {e}")))?;
    for item in v.get_mut(items).and_then(serde_json::Value::as_array_mut).into_iter().flatten() {
        if let Some(o) = item.as_object_mut() {
            o.insert("cluster".into(), cluster.into());
        }
    }
    Ok(v)
}
