//! Test plugin: claims to be built against plugin-api 0.0.9, which this host must refuse
//! (naming both versions) while it keeps serving.
#![forbid(unsafe_code)]

use plugin_api::{AppenderData, Graph, GraphAppender, GraphRequest, PluginError};

struct Old;

impl GraphAppender for Old {
    fn name(&self) -> &str {
        "oldApi"
    }
    fn apply(&self, _: &GraphRequest, _: &AppenderData, _: &mut Graph) -> Result<(), PluginError> {
        Ok(())
    }
}

plugin_api::register_appender!(Old);
plugin_api::__export_plugin_with_api!("0.0.9", "wrong-api", env!("CARGO_PKG_VERSION"));
