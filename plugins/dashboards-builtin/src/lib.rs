//! Dashboard template provider plugin `builtin`: runtime dashboards shipped with meshlens.
//!
//! The templates are data (`templates/*.yaml`, compiled in), written with the metric names
//! each runtime's Prometheus exporter emits. They rank lowest, so a folder or a
//! MonitoringDashboard resource with the same name overrides them.
#![forbid(unsafe_code)]

use std::sync::OnceLock;

use dashboards_spec::{Format, templates_from_text};
use plugin_api::{ClusterData, DashboardTemplate, PluginError, ProviderTier, TemplateSource};

/// The shipped template files, by file name (the name appears in error messages).
pub const FILES: &[(&str, &str)] = &[
    ("vertx.yaml", include_str!("../templates/vertx.yaml")),
    ("nodejs.yaml", include_str!("../templates/nodejs.yaml")),
    ("go.yaml", include_str!("../templates/go.yaml")),
    ("springboot.yaml", include_str!("../templates/springboot.yaml")),
    ("microprofile.yaml", include_str!("../templates/microprofile.yaml")),
    ("envoy.yaml", include_str!("../templates/envoy.yaml")),
];

/// Parses every shipped file, in [`FILES`] order.
pub fn builtin_templates() -> Result<Vec<DashboardTemplate>, PluginError> {
    let mut all = Vec::new();
    for (file, text) in FILES {
        let ts = templates_from_text(text, Format::Yaml)
            .map_err(|e| PluginError::internal(format!("built-in template file {file}: {e}")))?;
        all.extend(ts);
    }
    Ok(all)
}

/// The provider: parses the data once, on first use.
#[derive(Default)]
pub struct Builtin {
    parsed: OnceLock<Result<Vec<DashboardTemplate>, PluginError>>,
}

impl TemplateSource for Builtin {
    fn name(&self) -> &str {
        "builtin"
    }
    fn tier(&self) -> ProviderTier {
        ProviderTier::Builtin
    }
    fn templates(&self, _data: &ClusterData) -> Result<Vec<DashboardTemplate>, PluginError> {
        self.parsed.get_or_init(builtin_templates).clone()
    }
}

plugin_api::register_dashboard_provider!(Builtin::default());
plugin_api::export_plugin!(name: "dashboards-builtin", version: env!("CARGO_PKG_VERSION"));

#[cfg(test)]
mod tests;
