//! Operations of this API (answer 501 until their issue lands).

use crate::router::Route;

use super::not_implemented;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("objectValidations", "/namespaces/{namespace}/mesh/{object_type}/{object}/mesh_validations", not_implemented),
        Route::get("namespaceValidations", "/namespaces/{namespace}/mesh_validations", not_implemented),
        Route::get("serviceValidations", "/namespaces/{namespace}/services/{service}/mesh_validations", not_implemented),
    ]
}
