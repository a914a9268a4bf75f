//! Operations of this API (answer 501 until their issue lands).

use crate::router::Route;

use super::not_implemented;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("customDashboard", "/namespaces/{namespace}/apps/{app}/customdashboard/{template}", not_implemented),
        Route::get("appDashboard", "/namespaces/{namespace}/apps/{app}/dashboard", not_implemented),
    ]
}
