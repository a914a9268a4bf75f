//! Test plugin: an appender named `duplicate` (dup-two carries another one).
#![forbid(unsafe_code)]
use plugin_api::{AppenderData, Graph, GraphAppender, GraphRequest, PluginError};

struct Duplicate;

impl GraphAppender for Duplicate {
    fn name(&self) -> &str {
        "duplicate"
    }
    fn apply(&self, _: &GraphRequest, _: &AppenderData, _: &mut Graph) -> Result<(), PluginError> {
        Ok(())
    }
}

plugin_api::register_appender!(Duplicate);
plugin_api::export_plugin!(name: "dup-two", version: env!("CARGO_PKG_VERSION"));
