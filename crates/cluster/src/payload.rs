//! The JSON payloads of the cluster operations, in the spec's field names.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::{
    ClusterError,
    mesh::{CONFIG_LIST_KINDS, MeshKind},
    model::{ClusterState, Workload, pod_has_sidecar},
    raw::{Autoscaler, time_text},
};

/// `{name}` of a namespace.
#[derive(Clone, Debug, PartialEq, Serialize, Default)]
pub struct NamespaceRef {
    /// The namespace's name.
    pub name: String,
}

/// An entry of the namespace list.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceInfo {
    /// Name.
    pub name: String,
    /// Creation time, ISO 8601 UTC (empty when the namespace is only implied by objects).
    pub creation_timestamp: String,
    /// Labelled `istio.io/dataplane-mode=ambient`.
    pub is_ambient: bool,
}

/// appList payload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AppList {
    /// The namespace.
    pub namespace: NamespaceRef,
    /// Its apps by name.
    pub applications: Vec<AppListItem>,
}

/// One app of [`AppList`].
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppListItem {
    /// App name.
    pub name: String,
    /// At least one workload, and all have the sidecar.
    pub mesh_sidecar: bool,
}

/// appDetails payload.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppDetails {
    /// App name.
    pub name: String,
    /// The namespace.
    pub namespace: NamespaceRef,
    /// Runtimes and their dashboards (filled by the dashboards part; `[]` here).
    pub runtimes: Vec<Runtime>,
    /// Services of the app, by name.
    pub service_names: Vec<String>,
    /// Workloads of the app, by name.
    pub workloads: Vec<AppWorkload>,
}

/// A runtime of an app and its dashboards.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Runtime {
    /// Runtime name.
    pub name: String,
    /// Its dashboards.
    pub dashboard_refs: Vec<DashboardRef>,
}

/// A reference to a dashboard template.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DashboardRef {
    /// Template name.
    pub template: String,
    /// Dashboard title.
    pub title: String,
}

/// A workload of [`AppDetails`].
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppWorkload {
    /// Workload name.
    pub workload_name: String,
    /// Whether it has the sidecar.
    pub mesh_sidecar: bool,
}

/// workloadList payload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadList {
    /// The namespace.
    pub namespace: NamespaceRef,
    /// Its workloads by name.
    pub workloads: Vec<WorkloadListItem>,
}

/// One workload of [`WorkloadList`].
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadListItem {
    /// Name.
    pub name: String,
    /// Kind (`Deployment`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// It carries the app label.
    pub app_label: bool,
    /// It carries the version label.
    pub version_label: bool,
    /// It has the sidecar.
    pub mesh_sidecar: bool,
    /// ztunnel captures its pods, or it is a waypoint.
    pub is_ambient: bool,
    /// It is a waypoint proxy.
    pub is_waypoint: bool,
}

/// Workload details payload.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadDetails {
    /// Name.
    pub name: String,
    /// Kind (`Deployment`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// Creation time, ISO 8601 UTC.
    pub created_at: String,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// Pod template labels.
    pub labels: BTreeMap<String, String>,
    /// Pod template annotations.
    pub template_annotations: BTreeMap<String, String>,
    /// Wanted replicas.
    pub replicas: i32,
    /// Available replicas.
    pub available_replicas: i32,
    /// Unavailable replicas.
    pub unavailable_replicas: i32,
    /// The HPA that targets it, or one with empty and zero fields.
    pub autoscaler: Autoscaler,
    /// Its pods.
    pub pods: Vec<PodInfo>,
    /// The services that select it.
    pub services: Vec<ServiceRef>,
    /// ztunnel captures its pods, or it is a waypoint.
    pub is_ambient: bool,
    /// It is a waypoint proxy.
    pub is_waypoint: bool,
}

/// A pod of [`WorkloadDetails`].
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodInfo {
    /// Name.
    pub name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Creation time, ISO 8601 UTC.
    pub created_at: String,
    /// It carries the sidecar status annotation.
    pub mesh_sidecar: bool,
    /// `status.phase` (empty when unknown).
    pub phase: String,
}

/// A service of [`WorkloadDetails`].
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceRef {
    /// Name.
    pub name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Creation time, ISO 8601 UTC.
    pub created_at: String,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// `spec.type` (`ClusterIP`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// `spec.clusterIP`.
    pub ip: String,
    /// `spec.ports`.
    pub ports: Vec<ServicePortInfo>,
}

/// A port of [`ServiceRef`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServicePortInfo {
    /// Port name.
    pub name: String,
    /// Protocol (`TCP`, ...).
    pub protocol: String,
    /// Port number.
    pub port: i32,
}

/// meshConfigList payload: each list holds `{metadata, spec}` objects.
#[derive(Clone, Debug, PartialEq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct MeshConfigList {
    /// The namespace.
    pub namespace: NamespaceRef,
    /// DestinationRules.
    pub destination_rules: Vec<Value>,
    /// Gateways.
    pub gateways: Vec<Value>,
    /// QuotaSpecBindings.
    pub quota_spec_bindings: Vec<Value>,
    /// QuotaSpecs.
    pub quota_specs: Vec<Value>,
    /// Mixer rules.
    pub rules: Vec<Value>,
    /// ServiceEntries.
    pub service_entries: Vec<Value>,
    /// VirtualServices.
    pub virtual_services: Vec<Value>,
    /// AuthorizationPolicies.
    pub authorization_policies: Vec<Value>,
    /// PeerAuthentications.
    pub peer_authentications: Vec<Value>,
    /// RequestAuthentications.
    pub request_authentications: Vec<Value>,
    /// Sidecars.
    pub sidecars: Vec<Value>,
    /// Gateway API Gateways (never in `gateways`, which are Istio's).
    #[serde(rename = "k8sGateways")]
    pub k8s_gateways: Vec<Value>,
    /// Gateway API HTTPRoutes.
    #[serde(rename = "k8sHTTPRoutes")]
    pub k8s_http_routes: Vec<Value>,
    /// Gateway API GRPCRoutes.
    #[serde(rename = "k8sGRPCRoutes")]
    pub k8s_grpc_routes: Vec<Value>,
    /// Gateway API ReferenceGrants.
    #[serde(rename = "k8sReferenceGrants")]
    pub k8s_reference_grants: Vec<Value>,
}

fn pod_info(p: &crate::records::PodRecord, state: &ClusterState) -> PodInfo {
    PodInfo {
        name: p.metadata.name.clone().unwrap_or_default(),
        labels: p.labels.to_map(),
        created_at: time_text(p.metadata.creation_timestamp.as_ref()),
        mesh_sidecar: pod_has_sidecar(p, state.settings()),
        phase: p.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default(),
    }
}

/// The short form of a Service used by workload details.
pub fn service_ref(s: &crate::records::ServiceRecord) -> ServiceRef {
    let spec = s.spec.as_ref();
    ServiceRef {
        name: s.metadata.name.clone().unwrap_or_default(),
        labels: s.labels.to_map(),
        created_at: time_text(s.metadata.creation_timestamp.as_ref()),
        resource_version: s.metadata.resource_version.clone().unwrap_or_default(),
        kind: spec.and_then(|s| s.type_.clone()).unwrap_or_else(|| "ClusterIP".into()),
        ip: spec.and_then(|s| s.cluster_ip.clone()).unwrap_or_default(),
        ports: spec
            .and_then(|s| s.ports.as_ref())
            .map(|ps| {
                ps.iter()
                    .map(|p| ServicePortInfo {
                        name: p.name.clone().unwrap_or_default(),
                        protocol: p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                        port: p.port,
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The kinds named by the `objects` query value (comma-separated plural names); every
/// kind when absent or empty.
pub fn parse_objects(objects: Option<&str>) -> Result<Vec<MeshKind>, ClusterError> {
    let names: Vec<&str> =
        objects.unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    if names.is_empty() {
        return Ok(CONFIG_LIST_KINDS.to_vec());
    }
    names
        .into_iter()
        .map(|n| {
            MeshKind::from_plural(n).filter(|k| CONFIG_LIST_KINDS.contains(k)).ok_or_else(|| {
                let known: Vec<&str> = CONFIG_LIST_KINDS.iter().map(|k| k.plural()).collect();
                ClusterError::InvalidInput(format!(
                    "unknown object type in objects; known types: {}",
                    known.join(", ")
                ))
            })
        })
        .collect()
}

impl ClusterState {
    /// `GET /api/namespaces`.
    pub fn namespace_list(&self) -> Vec<NamespaceInfo> {
        self.namespaces()
            .map(|n| NamespaceInfo {
                name: n.name.clone(),
                creation_timestamp: n.created_at.clone(),
                is_ambient: n.is_ambient,
            })
            .collect()
    }

    fn require_ns(&self, ns: &str) -> Result<(), ClusterError> {
        match self.namespace(ns) {
            Some(_) => Ok(()),
            None => Err(ClusterError::NotFound("namespace not found".into())),
        }
    }

    /// appList: an unknown namespace has no apps.
    pub fn app_list(&self, ns: &str) -> AppList {
        AppList {
            namespace: NamespaceRef { name: ns.to_string() },
            applications: self
                .apps(ns)
                .iter()
                .map(|a| AppListItem { name: a.name.clone(), mesh_sidecar: a.has_sidecar() })
                .collect(),
        }
    }

    /// appDetails: 404 when neither a workload nor a service carries the app label.
    pub fn app_details(&self, ns: &str, app: &str) -> Result<AppDetails, ClusterError> {
        self.require_ns(ns)?;
        let apps = self.apps(ns);
        let a = apps
            .iter()
            .find(|a| a.name == app)
            .ok_or_else(|| ClusterError::NotFound("app not found in the namespace".into()))?;
        Ok(AppDetails {
            name: a.name.clone(),
            namespace: NamespaceRef { name: ns.to_string() },
            runtimes: Vec::new(),
            service_names: a
                .services
                .iter()
                .map(|s| s.metadata.name.clone().unwrap_or_default())
                .collect(),
            workloads: a
                .workloads
                .iter()
                .map(|w| AppWorkload { workload_name: w.name.clone(), mesh_sidecar: w.has_sidecar })
                .collect(),
        })
    }

    /// workloadList.
    pub fn workload_list(&self, ns: &str) -> Result<WorkloadList, ClusterError> {
        self.require_ns(ns)?;
        let s = self.settings();
        let workloads = self
            .namespace(ns)
            .map(|n| {
                n.workloads
                    .iter()
                    .map(|w| WorkloadListItem {
                        name: w.name.clone(),
                        kind: w.kind.as_str().to_string(),
                        app_label: w.labels.contains_key(&s.app_label),
                        version_label: w.labels.contains_key(&s.version_label),
                        mesh_sidecar: w.has_sidecar,
                        is_ambient: w.is_ambient,
                        is_waypoint: w.is_waypoint,
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(WorkloadList { namespace: NamespaceRef { name: ns.to_string() }, workloads })
    }

    /// Workload details.
    pub fn workload_details(&self, ns: &str, name: &str) -> Result<WorkloadDetails, ClusterError> {
        self.require_ns(ns)?;
        let w: &Workload = self
            .workload(ns, name)
            .ok_or_else(|| ClusterError::NotFound("workload not found in the namespace".into()))?;
        Ok(WorkloadDetails {
            name: w.name.clone(),
            kind: w.kind.as_str().to_string(),
            created_at: w.created_at.clone(),
            resource_version: w.resource_version.clone(),
            labels: w.labels.to_map(),
            template_annotations: w.template_annotations.to_map(),
            replicas: w.replicas,
            available_replicas: w.available_replicas,
            unavailable_replicas: w.unavailable_replicas,
            autoscaler: w.autoscaler.clone().unwrap_or_default(),
            pods: w.pods.iter().map(|p| pod_info(p, self)).collect(),
            services: w.services.iter().map(|s| service_ref(s)).collect(),
            is_ambient: w.is_ambient,
            is_waypoint: w.is_waypoint,
        })
    }

    /// meshConfigList; `objects` limits which lists are filled.
    pub fn mesh_config_list(
        &self,
        ns: &str,
        objects: Option<&str>,
    ) -> Result<MeshConfigList, ClusterError> {
        let kinds = parse_objects(objects)?;
        self.require_ns(ns)?;
        let mut out = MeshConfigList {
            namespace: NamespaceRef { name: ns.to_string() },
            ..Default::default()
        };
        for k in kinds {
            let items: Vec<Value> = self.mesh_objects(k, ns).map(|m| m.to_json()).collect();
            let slot = match k {
                MeshKind::DestinationRule => &mut out.destination_rules,
                MeshKind::Gateway => &mut out.gateways,
                MeshKind::QuotaSpecBinding => &mut out.quota_spec_bindings,
                MeshKind::QuotaSpec => &mut out.quota_specs,
                MeshKind::Rule => &mut out.rules,
                MeshKind::ServiceEntry => &mut out.service_entries,
                MeshKind::VirtualService => &mut out.virtual_services,
                MeshKind::AuthorizationPolicy => &mut out.authorization_policies,
                MeshKind::PeerAuthentication => &mut out.peer_authentications,
                MeshKind::RequestAuthentication => &mut out.request_authentications,
                MeshKind::Sidecar => &mut out.sidecars,
                MeshKind::K8sGateway => &mut out.k8s_gateways,
                MeshKind::K8sHTTPRoute => &mut out.k8s_http_routes,
                MeshKind::K8sGRPCRoute => &mut out.k8s_grpc_routes,
                MeshKind::K8sReferenceGrant => &mut out.k8s_reference_grants,
                MeshKind::MonitoringDashboard => continue,
            };
            *slot = items;
        }
        Ok(out)
    }
}
