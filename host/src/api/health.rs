//! Operations of this API (answer 501 until their issue lands).

use crate::router::Route;

use super::not_implemented;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("appHealth", "/namespaces/{namespace}/apps/{app}/health", not_implemented),
        Route::get("serviceHealth", "/namespaces/{namespace}/services/{service}/health", not_implemented),
        Route::get("workloadHealth", "/namespaces/{namespace}/workloads/{workload}/health", not_implemented),
        Route::get("namespaceHealth", "/namespaces/{namespace}/health", not_implemented),
    ]
}
