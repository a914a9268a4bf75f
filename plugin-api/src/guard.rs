//! Catching panics on the plugin's side of the boundary.
//!
//! A panic that unwinds into an `extern "C"` frame aborts the whole host. Every entry point
//! the adapters export runs its body through [`guard`], so a panic becomes a
//! [`PluginError`] with [`ErrorKind::Panic`] instead.

use std::panic::{AssertUnwindSafe, catch_unwind};

use abi_stable::std_types::{RErr, ROk, RResult};

use crate::types::{ErrorKind, PluginError};

/// Runs `f`, turning a panic into an error value naming `what`.
pub fn guard<T>(what: &str, f: impl FnOnce() -> Result<T, PluginError>) -> RResult<T, PluginError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => ROk(v),
        Ok(Err(e)) => RErr(e),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-text panic payload".to_string());
            RErr(PluginError::new(ErrorKind::Panic, format!("{what} panicked: {msg}")))
        }
    }
}

/// Parses a JSON config table handed over by the host.
pub(crate) fn parse_config(text: &str) -> Result<serde_json::Value, PluginError> {
    if text.trim().is_empty() {
        return Ok(serde_json::Value::Object(Default::default()));
    }
    serde_json::from_str(text)
        .map_err(|e| PluginError::invalid(format!("config is not valid JSON: {e}")))
}
