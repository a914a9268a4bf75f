//! The host's answer cap (`limits.max_answer_series`), handed to both embedded backends in
//! their config table as `max_series`.

use plugin_api::PluginError;

/// `max_series` from a backend's table (`backend` names it in the error): unbounded when
/// absent, else a positive integer.
pub fn max_series(backend: &str, v: Option<&serde_json::Value>) -> Result<usize, PluginError> {
    match v {
        None => Ok(usize::MAX),
        Some(v) => v
            .as_u64()
            .filter(|n| *n > 0)
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
            .ok_or_else(|| {
                PluginError::invalid(format!(
                    "metrics.{backend}.max_series must be a positive integer"
                ))
            }),
    }
}
