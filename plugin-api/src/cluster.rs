//! Cluster data the host reads for components that declare they need it.

use abi_stable::{
    StableAbi,
    std_types::{RString, RVec},
};

use crate::types::Label;

/// A kind of cluster data a component can declare as an input.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClusterKind {
    /// Workloads of the requested namespaces ([`WorkloadInfo`]).
    Workloads,
    /// Services of the requested namespaces ([`ServiceInfo`]).
    Services,
    /// ServiceEntries of every visible namespace.
    ServiceEntries,
    /// DestinationRules of the requested namespaces.
    DestinationRules,
    /// VirtualServices of the requested namespaces.
    VirtualServices,
    /// Gateways of every visible namespace.
    Gateways,
    /// MonitoringDashboard resources (dashboard providers).
    MonitoringDashboards,
    /// Gateway API HTTPRoutes and GRPCRoutes of every visible namespace (their backends may
    /// be in other namespaces); kinds `HTTPRoute` and `GRPCRoute`.
    Routes,
}

/// A workload as appenders see it.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Default)]
pub struct WorkloadInfo {
    /// The cluster it runs in (its name as the telemetry spells it).
    pub cluster: RString,
    /// Namespace.
    pub namespace: RString,
    /// Workload name.
    pub name: RString,
    /// Kind, e.g. `Deployment`.
    pub kind: RString,
    /// Pod template labels.
    pub labels: RVec<Label>,
    /// Number of pods that exist now.
    pub pod_count: u32,
    /// Every pod carries the sidecar (and there is at least one pod).
    pub has_sidecar: bool,
    /// Desired replicas (0: scaled to zero).
    pub replicas: i32,
    /// Replicas available now.
    pub available_replicas: i32,
}

/// A Kubernetes Service as appenders see it.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Default)]
pub struct ServiceInfo {
    /// The cluster it is defined in.
    pub cluster: RString,
    /// Namespace.
    pub namespace: RString,
    /// Service name.
    pub name: RString,
    /// The Service object's own labels.
    pub labels: RVec<Label>,
}

/// A mesh config object (or other custom resource), kept as JSON.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Default)]
pub struct ConfigObject {
    /// The cluster it is defined in.
    pub cluster: RString,
    /// Kind, e.g. `DestinationRule`.
    pub kind: RString,
    /// Namespace.
    pub namespace: RString,
    /// Name.
    pub name: RString,
    /// Labels of the object.
    pub labels: RVec<Label>,
    /// The object's `spec` as JSON text (`{}` when absent).
    pub spec_json: RString,
}

impl ConfigObject {
    /// Parses `spec_json`; `Value::Null` when it is not valid JSON.
    pub fn spec(&self) -> serde_json::Value {
        serde_json::from_str(self.spec_json.as_str()).unwrap_or(serde_json::Value::Null)
    }
}

/// Cluster data handed to a component, filled for the kinds it declared.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Default)]
pub struct ClusterData {
    /// Workloads (declared [`ClusterKind::Workloads`]).
    pub workloads: RVec<WorkloadInfo>,
    /// Services (declared [`ClusterKind::Services`]).
    pub services: RVec<ServiceInfo>,
    /// Config objects of every declared mesh kind.
    pub objects: RVec<ConfigObject>,
}
