//! Errors of the dashboard operations and their HTTP status.

use plugin_api::{ErrorKind, PluginError};

/// What went wrong; [`DashboardError::status`] gives the HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DashboardError {
    /// A bad parameter, an unknown template, app or namespace: 400.
    #[error("{0}")]
    BadRequest(String),
    /// The metrics store cannot be reached or timed out: 503.
    #[error("{0}")]
    Unavailable(String),
    /// Anything else: 500.
    #[error("{0}")]
    Internal(String),
}

impl DashboardError {
    /// The HTTP status code for this error.
    pub fn status(&self) -> u16 {
        match self {
            DashboardError::BadRequest(_) => 400,
            DashboardError::Unavailable(_) => 503,
            DashboardError::Internal(_) => 500,
        }
    }

    /// Maps a metrics backend's error: a store that is down or slow is a 503.
    pub fn from_query(e: &PluginError) -> Self {
        match e.kind {
            ErrorKind::Unavailable | ErrorKind::Timeout => {
                DashboardError::Unavailable(format!("metrics store unavailable: {}", e.message))
            }
            _ => DashboardError::Internal(format!("metrics query failed: {}", e.message)),
        }
    }
}
