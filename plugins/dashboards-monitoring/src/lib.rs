//! Dashboard template provider plugin `monitoring`: `MonitoringDashboard` custom resources
//! (`monitoring.kiali.io/v1alpha1`), read by the host from the cluster source.
//!
//! The plugin declares [`ClusterKind::MonitoringDashboards`]; the host reads the resources
//! (of the app's namespace and the mesh namespace) and hands them over as
//! [`plugin_api::ConfigObject`]s. Each maps to one template named after the resource, with the
//! resource's namespace kept in [`DashboardTemplate::namespace`] so the host can rank the
//! app's namespace above the mesh namespace. A resource whose spec is not a valid template is
//! skipped and reported as a warning template (empty name; see `dashboards_spec::warning`).
#![forbid(unsafe_code)]

use dashboards_spec::{template_from_spec, warning};
use plugin_api::{
    ClusterData, ClusterKind, ConfigObject, DashboardTemplate, PluginError, ProviderTier,
    TemplateSource, label_value,
};

/// The provider (no configuration).
#[derive(Default)]
pub struct MonitoringDashboards;

/// Maps one resource to a template, or a warning naming the resource.
pub fn template_of(obj: &ConfigObject) -> DashboardTemplate {
    let spec = obj.spec();
    let label_runtime = label_value(&obj.labels, "runtime").unwrap_or("");
    match template_from_spec(obj.name.as_str(), &spec, label_runtime) {
        Ok(mut t) => {
            t.namespace = obj.namespace.clone();
            t
        }
        Err(e) => {
            warning(format!("MonitoringDashboard {}/{} skipped: {e}", obj.namespace, obj.name))
        }
    }
}

impl TemplateSource for MonitoringDashboards {
    fn name(&self) -> &str {
        "monitoring"
    }
    fn tier(&self) -> ProviderTier {
        ProviderTier::Cluster
    }
    fn inputs(&self) -> Vec<ClusterKind> {
        vec![ClusterKind::MonitoringDashboards]
    }
    fn templates(&self, data: &ClusterData) -> Result<Vec<DashboardTemplate>, PluginError> {
        Ok(data
            .objects
            .iter()
            .filter(|o| o.kind.is_empty() || o.kind.as_str() == "MonitoringDashboard")
            .map(template_of)
            .collect())
    }
}

plugin_api::register_dashboard_provider!(MonitoringDashboards);
plugin_api::export_plugin!(name: "dashboards-monitoring", version: env!("CARGO_PKG_VERSION"));

#[cfg(test)]
mod tests {
    use plugin_api::{DataType, Label};

    use super::*;

    fn obj(ns: &str, name: &str, spec: &str) -> ConfigObject {
        ConfigObject {
            cluster: Default::default(),
            kind: "MonitoringDashboard".into(),
            namespace: ns.into(),
            name: name.into(),
            labels: vec![Label::new("runtime", "Vert.x")].into(),
            spec_json: spec.into(),
        }
    }

    const SPEC: &str = r#"{"title":"Team Vert.x","discoverOn":"vertx_http_server_requests_total","charts":[
        {"name":"Requests","unit":"ops","spans":12,"metricName":"vertx_http_server_requests_total","dataType":"rate",
         "aggregations":[{"label":"path","displayName":"Path"}]}]}"#;

    #[test]
    fn resources_map_to_templates_keeping_their_namespace() {
        let data = ClusterData {
            objects: vec![
                obj("bookinfo", "vertx-server", SPEC),
                obj("istio-system", "vertx-server", SPEC),
            ]
            .into(),
            ..Default::default()
        };
        let ts = MonitoringDashboards.templates(&data).unwrap();
        assert_eq!(ts.len(), 2);
        assert_eq!(ts[0].name.as_str(), "vertx-server");
        assert_eq!(ts[0].namespace.as_str(), "bookinfo");
        assert_eq!(ts[1].namespace.as_str(), "istio-system");
        assert_eq!(
            ts[0].runtime.as_str(),
            "Vert.x",
            "runtime from the label when the spec has none"
        );
        assert_eq!(ts[0].title.as_str(), "Team Vert.x");
        assert_eq!(ts[0].charts[0].data_type, DataType::Rate);
        assert_eq!(ts[0].charts[0].spans, 12);
    }

    #[test]
    fn a_bad_resource_becomes_a_warning_naming_it() {
        let data = ClusterData {
            objects: vec![obj("bookinfo", "broken", r#"{"charts":[]}"#)].into(),
            ..Default::default()
        };
        let ts = MonitoringDashboards.templates(&data).unwrap();
        assert!(dashboards_spec::is_warning(&ts[0]));
        assert!(
            ts[0].title.contains("bookinfo/broken") && ts[0].title.contains("title"),
            "{}",
            ts[0].title
        );
    }

    #[test]
    fn other_kinds_are_ignored_and_the_input_is_declared() {
        let mut o = obj("bookinfo", "x", SPEC);
        o.kind = "VirtualService".into();
        let data = ClusterData { objects: vec![o].into(), ..Default::default() };
        assert!(MonitoringDashboards.templates(&data).unwrap().is_empty());
        assert_eq!(MonitoringDashboards.inputs(), vec![ClusterKind::MonitoringDashboards]);
        assert_eq!(MonitoringDashboards.tier(), ProviderTier::Cluster);
    }
}
