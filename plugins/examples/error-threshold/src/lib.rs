//! An example custom graph appender: `errorThreshold`.
//!
//! It marks every edge whose error percentage (HTTP 4xx+5xx, or gRPC errors, over all
//! requests of the edge) is at least a configured threshold, by setting an open field on
//! the edge. The field reaches the graph JSON under its name.
//!
//! Config (`[appenders.errorThreshold]` in meshlens.toml):
//! ```toml
//! [appenders.errorThreshold]
//! threshold = 5.0          # percent, default 10
//! field = "highErrorRate"  # edge field to set, default "highErrorRate"
//! ```
#![forbid(unsafe_code)]

use plugin_api::{AppenderData, Graph, GraphAppender, GraphRequest, PluginError, Value};

/// The appender and its configuration.
pub struct ErrorThreshold {
    threshold: f64,
    field: String,
}

impl Default for ErrorThreshold {
    fn default() -> Self {
        ErrorThreshold { threshold: 10.0, field: "highErrorRate".into() }
    }
}

impl GraphAppender for ErrorThreshold {
    fn name(&self) -> &str {
        "errorThreshold"
    }

    fn configure(&mut self, config: &serde_json::Value) -> Result<(), PluginError> {
        let Some(table) = config.as_object() else {
            return Err(PluginError::invalid("expected a table"));
        };
        for (key, value) in table {
            match key.as_str() {
                "threshold" => {
                    let t = value.as_f64().filter(|t| (0.0..=100.0).contains(t));
                    self.threshold = t.ok_or_else(|| PluginError::invalid("`threshold` must be a number from 0 to 100"))?;
                }
                "field" => {
                    let f = value.as_str().filter(|f| !f.is_empty());
                    self.field = f.ok_or_else(|| PluginError::invalid("`field` must be a non-empty string"))?.to_string();
                }
                other => return Err(PluginError::invalid(format!("unknown key `{other}`"))),
            }
        }
        Ok(())
    }

    // No inputs: the edge rates are already in the graph.

    fn apply(&self, _req: &GraphRequest, _data: &AppenderData, graph: &mut Graph) -> Result<(), PluginError> {
        for edge in graph.edges.iter_mut() {
            let r = &edge.rates;
            let (errors, total) = if r.grpc > 0.0 { (r.grpc_err, r.grpc) } else { (r.http_4xx + r.http_5xx, r.http) };
            if total > 0.0 {
                let pct = errors / total * 100.0;
                if pct >= self.threshold {
                    edge.set_field(&self.field, Value::Bool(true));
                    edge.set_field("errorPercent", Value::Number((pct * 10.0).round() / 10.0));
                }
            }
        }
        Ok(())
    }
}

plugin_api::register_appender!(ErrorThreshold::default());
plugin_api::export_plugin!(name: "example-error-threshold", version: env!("CARGO_PKG_VERSION"));
