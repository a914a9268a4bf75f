//! Operations of this API (answer 501 until their issue lands).

use crate::router::Route;

use super::not_implemented;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("meshConfigList", "/namespaces/{namespace}/mesh", not_implemented),
    ]
}
