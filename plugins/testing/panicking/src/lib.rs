//! Test plugin: every component here panics when called for real work. The host must
//! answer 500 for that request and keep serving (the adapters catch the panic on this
//! side of the boundary).
#![forbid(unsafe_code)]

use std::time::Duration;

use plugin_api::{
    AppenderData, AppenderInputs, BackendStatus, ClusterData, DashboardTemplate, Graph,
    GraphAppender, GraphRequest, MetricQuery, MetricsStore, PluginError, ProviderTier, QueryResult,
    TemplateSource,
};

/// Panics in `apply`.
struct PanicApply;

impl GraphAppender for PanicApply {
    fn name(&self) -> &str {
        "panicApply"
    }
    fn apply(&self, _: &GraphRequest, _: &AppenderData, _: &mut Graph) -> Result<(), PluginError> {
        panic!("panicApply always panics in apply")
    }
}

/// Panics in `inputs`.
struct PanicInputs;

impl GraphAppender for PanicInputs {
    fn name(&self) -> &str {
        "panicInputs"
    }
    fn inputs(&self, _: &GraphRequest) -> Result<AppenderInputs, PluginError> {
        panic!("panicInputs always panics in inputs")
    }
    fn apply(&self, _: &GraphRequest, _: &AppenderData, _: &mut Graph) -> Result<(), PluginError> {
        Ok(())
    }
}

/// A metrics backend that panics in `query` and `status`.
struct PanicBackend;

impl MetricsStore for PanicBackend {
    fn name(&self) -> &str {
        "panicking"
    }
    fn configure(&mut self, _: &serde_json::Value) -> Result<(), PluginError> {
        Ok(())
    }
    fn query(&self, _: &MetricQuery, _: Duration) -> Result<QueryResult, PluginError> {
        panic!("the panicking backend panics in query")
    }
    fn status(&self) -> Result<BackendStatus, PluginError> {
        panic!("the panicking backend panics in status")
    }
}

/// A dashboard provider that panics in `templates`.
struct PanicTemplates;

impl TemplateSource for PanicTemplates {
    fn name(&self) -> &str {
        "panicking"
    }
    fn tier(&self) -> ProviderTier {
        ProviderTier::Folder
    }
    fn templates(&self, _: &ClusterData) -> Result<Vec<DashboardTemplate>, PluginError> {
        panic!("the panicking provider panics in templates")
    }
}

plugin_api::register_appender!(PanicApply);
plugin_api::register_appender!(PanicInputs);
plugin_api::register_metrics_backend!(PanicBackend);
plugin_api::register_dashboard_provider!(PanicTemplates);
plugin_api::export_plugin!(name: "panicking", version: env!("CARGO_PKG_VERSION"));
