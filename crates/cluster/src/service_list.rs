//! serviceList: the Services of a namespace with the workloads they select.
//!
//! Kiali's `ServiceOverview` (models/service.go, v0.14) is `{name, istioSidecar, appLabel}`;
//! meshlens spells the sidecar flag `meshSidecar` as appList and workloadList do, and adds
//! the selected workloads' names so that a service page can link them without a call per
//! workload.

use serde::Serialize;

use crate::{ClusterError, model::ClusterState, payload::NamespaceRef};

/// serviceList payload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServiceList {
    /// The namespace.
    pub namespace: NamespaceRef,
    /// Its services by name.
    pub services: Vec<ServiceListItem>,
}

/// One service of [`ServiceList`].
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceListItem {
    /// Name.
    pub name: String,
    /// It selects at least one workload, and every selected workload has the sidecar.
    pub mesh_sidecar: bool,
    /// It carries the app label (its own, else its selector's).
    pub app_label: bool,
    /// The workloads its selector selects, by name.
    pub workloads: Vec<String>,
}

impl ClusterState {
    /// serviceList: 404 for a namespace that does not exist or is not visible.
    pub fn service_list(&self, ns: &str) -> Result<ServiceList, ClusterError> {
        let n = self
            .namespace(ns)
            .ok_or_else(|| ClusterError::NotFound("namespace not found".into()))?;
        let services = n
            .services
            .iter()
            .map(|s| {
                let name = s.metadata.name.clone().unwrap_or_default();
                let selected: Vec<_> = n
                    .workloads
                    .iter()
                    .filter(|w| {
                        w.services.iter().any(|ws| ws.metadata.name.as_deref() == Some(&name))
                    })
                    .collect();
                ServiceListItem {
                    mesh_sidecar: !selected.is_empty() && selected.iter().all(|w| w.has_sidecar),
                    app_label: self.service_app(s).is_some(),
                    workloads: selected.iter().map(|w| w.name.clone()).collect(),
                    name,
                }
            })
            .collect();
        Ok(ServiceList { namespace: NamespaceRef { name: ns.to_string() }, services })
    }
}
