//! Operations of this API (answer 501 until their issue lands).

use crate::router::Route;

use super::not_implemented;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("graphNamespaces", "/namespaces/graph", not_implemented),
        Route::get("graphApp", "/namespaces/{namespace}/applications/{app}/graph", not_implemented),
        Route::get("graphAppVersion", "/namespaces/{namespace}/applications/{app}/versions/{version}/graph", not_implemented),
        Route::get("graphService", "/namespaces/{namespace}/services/{service}/graph", not_implemented),
        Route::get("graphWorkload", "/namespaces/{namespace}/workloads/{workload}/graph", not_implemented),
    ]
}
