//! One error type for every handler, and every domain error's mapping to it: the one place
//! where failures become HTTP statuses.

use warp::http::StatusCode;

/// An API failure. The message is sent to the client: it names parameters and objects,
/// never echoes arbitrary request text.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    /// Too many failed logins from one address; `retry_after` in seconds.
    #[error("{message}")]
    TooManyRequests { message: String, retry_after: u64 },
    #[error("{0}")]
    NotFound(String),
    #[error("method not allowed: only GET is supported")]
    MethodNotAllowed,
    #[error("{0}")]
    NotAcceptable(String),
    #[error("{0}")]
    Internal(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    NotImplemented(String),
    /// 503 with `Retry-After`: admission control refused the request.
    #[error("{0}")]
    Overloaded(String),
}

impl ApiError {
    pub fn bad_request(msg: impl Into<String>) -> Self {
        ApiError::BadRequest(msg.into())
    }
    pub fn not_found(msg: impl Into<String>) -> Self {
        ApiError::NotFound(msg.into())
    }
    pub fn internal(msg: impl Into<String>) -> Self {
        ApiError::Internal(msg.into())
    }
    pub fn unavailable(msg: impl Into<String>) -> Self {
        ApiError::Unavailable(msg.into())
    }
    /// A 400 for a query parameter: names it and what it accepts, not what was sent.
    pub fn bad_param(name: &str, expected: &str) -> Self {
        ApiError::BadRequest(format!("invalid value for query parameter '{name}': {expected}"))
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Unavailable(_) | ApiError::Overloaded(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
        }
    }

    /// The spec's error body `{code, message}`.
    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({ "code": self.status().as_u16(), "message": self.to_string() })
    }
}

impl From<plugin_api::PluginError> for ApiError {
    fn from(e: plugin_api::PluginError) -> Self {
        use plugin_api::ErrorKind::*;
        let msg = e.message.to_string();
        match e.kind {
            InvalidInput => ApiError::BadRequest(msg),
            Unavailable | Timeout => ApiError::Unavailable(msg),
            Internal | Panic => ApiError::Internal(msg),
        }
    }
}

/// A query parameter with a wrong value: `invalid value for query parameter '{name}': {what
/// it accepts}`, as [`ApiError::bad_param`] words it.
impl From<meshlens_params::query::QueryError> for ApiError {
    fn from(e: meshlens_params::query::QueryError) -> Self {
        if e.param.is_empty() {
            ApiError::BadRequest(e.reason)
        } else {
            ApiError::bad_param(&e.param, &e.reason)
        }
    }
}

impl From<meshlens_cluster::ClusterError> for ApiError {
    fn from(e: meshlens_cluster::ClusterError) -> Self {
        let msg = e.to_string();
        match e.http_status() {
            400 => ApiError::BadRequest(msg),
            404 => ApiError::NotFound(msg),
            503 => ApiError::Unavailable(msg),
            _ => ApiError::Internal(msg),
        }
    }
}

impl From<meshlens_validations::ValidationError> for ApiError {
    fn from(e: meshlens_validations::ValidationError) -> Self {
        match e {
            // The router's rule: messages do not echo request text, so the type sent is left out.
            meshlens_validations::ValidationError::UnknownType { known, .. } => {
                ApiError::bad_request(format!(
                    "Object type not managed. Known types: {}",
                    known.join(", ")
                ))
            }
            meshlens_validations::ValidationError::NotFound(_) => {
                ApiError::not_found(e.to_string())
            }
        }
    }
}

impl From<meshlens_dashboards::DashboardError> for ApiError {
    fn from(e: meshlens_dashboards::DashboardError) -> Self {
        match e {
            meshlens_dashboards::DashboardError::BadRequest(m) => ApiError::BadRequest(m),
            meshlens_dashboards::DashboardError::Unavailable(m) => ApiError::Unavailable(m),
            meshlens_dashboards::DashboardError::Internal(m) => ApiError::Internal(m),
        }
    }
}

impl From<crate::metrics_engine::MetricsError> for ApiError {
    fn from(e: crate::metrics_engine::MetricsError) -> Self {
        match e {
            crate::metrics_engine::MetricsError::BadQuery(_) => {
                ApiError::bad_request(e.to_string())
            }
            crate::metrics_engine::MetricsError::Internal(_)
            | crate::metrics_engine::MetricsError::TooLarge(_) => ApiError::internal(e.to_string()),
            _ => ApiError::unavailable(e.to_string()),
        }
    }
}
