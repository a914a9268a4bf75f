//! Conversions to the plugin contract's cluster data.

use std::collections::HashSet;

use abi_stable::std_types::{RString, RVec};
use plugin_api::{ClusterData, ClusterKind, ConfigObject, Label, ServiceInfo, WorkloadInfo};

use crate::{
    mesh::{MeshKind, MeshObject},
    model::{ClusterState, Workload},
};

fn labels<'a>(it: impl Iterator<Item = (&'a str, &'a str)>) -> RVec<Label> {
    it.map(|(k, v)| Label::new(k, v)).collect()
}

fn map_labels(m: &std::collections::BTreeMap<String, String>) -> RVec<Label> {
    labels(m.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// A workload as appenders see it (of no named cluster).
pub fn workload_info(w: &Workload) -> WorkloadInfo {
    workload_info_in("", w)
}

/// A workload of cluster `cluster` as appenders see it.
pub fn workload_info_in(cluster: &str, w: &Workload) -> WorkloadInfo {
    WorkloadInfo {
        cluster: RString::from(cluster),
        namespace: RString::from(w.namespace.as_str()),
        name: RString::from(w.name.as_str()),
        kind: RString::from(w.kind.as_str()),
        labels: labels(w.labels.iter()),
        pod_count: u32::try_from(w.pods.len()).unwrap_or(u32::MAX),
        has_sidecar: w.has_sidecar,
        replicas: w.replicas,
        available_replicas: w.available_replicas,
    }
}

/// A mesh object as plugins see it (of no named cluster).
pub fn config_object(m: &MeshObject) -> ConfigObject {
    config_object_in("", m)
}

/// A mesh object of cluster `cluster` as plugins see it.
pub fn config_object_in(cluster: &str, m: &MeshObject) -> ConfigObject {
    ConfigObject {
        cluster: RString::from(cluster),
        kind: RString::from(m.kind.kind()),
        namespace: RString::from(m.namespace()),
        name: RString::from(m.name()),
        labels: m.metadata.labels.as_ref().map(map_labels).unwrap_or_default(),
        spec_json: RString::from(m.spec.to_string()),
    }
}

impl ClusterState {
    /// The data plugins declared: ServiceEntries, Gateways and routes of every visible namespace,
    /// everything else of `namespaces` (unknown or hidden namespaces give nothing).
    pub fn cluster_data(&self, kinds: &[ClusterKind], namespaces: &[String]) -> ClusterData {
        self.cluster_data_in("", kinds, namespaces)
    }

    /// [`ClusterState::cluster_data`] of this cluster, named `cluster` (every item's
    /// `cluster` field).
    pub fn cluster_data_in(
        &self,
        cluster: &str,
        kinds: &[ClusterKind],
        namespaces: &[String],
    ) -> ClusterData {
        let mut data = ClusterData::default();
        // In request order, each once; a set, not a scan of those kept (1,000 namespaces
        // made that half a million comparisons per appender).
        let mut once: HashSet<&str> = HashSet::with_capacity(namespaces.len());
        let unique_ns: Vec<&String> =
            namespaces.iter().filter(|n| once.insert(n.as_str())).collect();
        let visible = || unique_ns.iter().filter_map(|n| self.namespace(n));
        let mut seen = Vec::new();
        for &k in kinds {
            // A kind declared twice is delivered once.
            if seen.contains(&k) {
                continue;
            }
            seen.push(k);
            match k {
                ClusterKind::Workloads => {
                    data.workloads
                        .extend(visible().flat_map(|n| {
                            n.workloads.iter().map(|w| workload_info_in(cluster, w))
                        }));
                }
                ClusterKind::Services => {
                    data.services.extend(visible().flat_map(|n| {
                        n.services.iter().map(|s| ServiceInfo {
                            cluster: RString::from(cluster),
                            namespace: RString::from(n.name.as_str()),
                            name: RString::from(s.metadata.name.as_deref().unwrap_or("")),
                            labels: labels(s.labels.iter()),
                        })
                    }));
                }
                ClusterKind::ServiceEntries | ClusterKind::Gateways => {
                    if let Some(mk) = MeshKind::from_cluster_kind(k) {
                        data.objects.extend(
                            self.mesh_objects_everywhere(mk).map(|m| config_object_in(cluster, m)),
                        );
                    }
                }
                ClusterKind::Routes => {
                    for mk in [MeshKind::K8sHTTPRoute, MeshKind::K8sGRPCRoute] {
                        data.objects.extend(
                            self.mesh_objects_everywhere(mk).map(|m| config_object_in(cluster, m)),
                        );
                    }
                }
                other => {
                    if let Some(mk) = MeshKind::from_cluster_kind(other) {
                        data.objects.extend(visible().flat_map(|n| {
                            n.mesh
                                .iter()
                                .filter(move |m| m.kind == mk)
                                .map(|m| config_object_in(cluster, m))
                        }));
                    }
                }
            }
        }
        data
    }
}
