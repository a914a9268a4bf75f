//! Operations of this API (answer 501 until their issue lands).

use crate::router::Route;

use super::not_implemented;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("appList", "/namespaces/{namespace}/apps", not_implemented),
        Route::get("appDetails", "/namespaces/{namespace}/apps/{app}", not_implemented),
    ]
}
