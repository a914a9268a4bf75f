//! Operations of this API (answer 501 until their issue lands).

use crate::router::Route;

use super::not_implemented;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("workloadList", "/namespaces/{namespace}/workloads", not_implemented),
        Route::get("workloadDetails", "/namespaces/{namespace}/workloads/{workload}", not_implemented),
    ]
}
