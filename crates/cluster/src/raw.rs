//! The raw objects both sources produce: typed Kubernetes objects and dynamic mesh objects.

use std::{collections::BTreeMap, sync::Arc};

use k8s_openapi::{
    api::{
        apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet},
        autoscaling::{v1 as hpa1, v2 as hpa2},
        batch::v1::{CronJob, Job},
        core::v1::{Namespace, ReplicationController},
    },
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
};
use serde::Serialize;

use crate::{
    mesh::MeshObject,
    records::{PodRecord, ServiceRecord, WorkloadRecord},
};

/// Every object the model is built from.
#[derive(Clone, Debug, Default)]
pub struct RawObjects {
    /// Namespaces.
    pub namespaces: Vec<Arc<Namespace>>,
    /// Pods.
    pub pods: Vec<Arc<PodRecord>>,
    /// Services.
    pub services: Vec<Arc<ServiceRecord>>,
    /// Deployments.
    pub deployments: Vec<Arc<WorkloadRecord<Deployment>>>,
    /// ReplicaSets.
    pub replica_sets: Vec<Arc<WorkloadRecord<ReplicaSet>>>,
    /// ReplicationControllers.
    pub replication_controllers: Vec<Arc<WorkloadRecord<ReplicationController>>>,
    /// StatefulSets.
    pub stateful_sets: Vec<Arc<WorkloadRecord<StatefulSet>>>,
    /// DaemonSets.
    pub daemon_sets: Vec<Arc<WorkloadRecord<DaemonSet>>>,
    /// Jobs.
    pub jobs: Vec<Arc<WorkloadRecord<Job>>>,
    /// CronJobs.
    pub cron_jobs: Vec<Arc<WorkloadRecord<CronJob>>>,
    /// HorizontalPodAutoscalers, already reduced to the payload's shape.
    pub autoscalers: Vec<Autoscaler>,
    /// Mesh config objects.
    pub mesh: Vec<Arc<MeshObject>>,
}

impl RawObjects {
    /// Objects by kind (mesh kinds only when present), for the self-metrics.
    pub fn counts(&self) -> Vec<(&'static str, usize)> {
        let mut counts = vec![
            ("Namespace", self.namespaces.len()),
            ("Pod", self.pods.len()),
            ("Service", self.services.len()),
            ("Deployment", self.deployments.len()),
            ("ReplicaSet", self.replica_sets.len()),
            ("ReplicationController", self.replication_controllers.len()),
            ("StatefulSet", self.stateful_sets.len()),
            ("DaemonSet", self.daemon_sets.len()),
            ("Job", self.jobs.len()),
            ("CronJob", self.cron_jobs.len()),
            ("HorizontalPodAutoscaler", self.autoscalers.len()),
        ];
        let mut mesh: BTreeMap<&'static str, usize> = BTreeMap::new();
        for m in &self.mesh {
            *mesh.entry(m.kind.display_name()).or_default() += 1;
        }
        counts.extend(mesh);
        counts
    }
}

/// A HorizontalPodAutoscaler as the workload details show it; all fields empty or zero
/// when no HPA targets the workload.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Autoscaler {
    /// Name.
    pub name: String,
    /// Creation time, ISO 8601 UTC.
    pub created_at: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Last time it scaled, ISO 8601 UTC.
    pub last_scale_time: String,
    /// `status.observedGeneration`.
    pub observed_generation: i64,
    /// `spec.minReplicas` (default 1).
    pub min_replicas: i32,
    /// `spec.maxReplicas`.
    pub max_replicas: i32,
    /// `status.currentReplicas`.
    pub current_replicas: i32,
    /// `status.desiredReplicas`.
    pub desired_replicas: i32,
    /// Current average CPU utilization, percent.
    #[serde(rename = "currentCPUUtilizationPercentage")]
    pub current_cpu_utilization_percentage: i32,
    /// Target average CPU utilization, percent.
    #[serde(rename = "targetCPUUtilizationPercentage")]
    pub target_cpu_utilization_percentage: i32,
    /// Namespace (not in the payload).
    #[serde(skip)]
    pub namespace: String,
    /// `spec.scaleTargetRef.kind` (not in the payload).
    #[serde(skip)]
    pub target_kind: String,
    /// `spec.scaleTargetRef.name` (not in the payload).
    #[serde(skip)]
    pub target_name: String,
}

/// ISO 8601 UTC text of a Kubernetes time; empty when absent.
pub fn time_text(t: Option<&Time>) -> String {
    t.and_then(|t| serde_json::to_value(t).ok())
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn base(meta: &ObjectMeta) -> Autoscaler {
    Autoscaler {
        name: meta.name.clone().unwrap_or_default(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        created_at: time_text(meta.creation_timestamp.as_ref()),
        labels: meta.labels.clone().unwrap_or_default(),
        ..Default::default()
    }
}

impl Autoscaler {
    /// From an `autoscaling/v2` object.
    pub fn from_v2(h: &hpa2::HorizontalPodAutoscaler) -> Autoscaler {
        let mut a = base(&h.metadata);
        if let Some(spec) = &h.spec {
            a.min_replicas = spec.min_replicas.unwrap_or(1);
            a.max_replicas = spec.max_replicas;
            a.target_kind = spec.scale_target_ref.kind.clone();
            a.target_name = spec.scale_target_ref.name.clone();
            a.target_cpu_utilization_percentage = spec
                .metrics
                .iter()
                .flatten()
                .filter_map(|m| m.resource.as_ref())
                .find(|r| r.name == "cpu")
                .and_then(|r| r.target.average_utilization)
                .unwrap_or(0);
        }
        if let Some(st) = &h.status {
            a.last_scale_time = time_text(st.last_scale_time.as_ref());
            a.observed_generation = st.observed_generation.unwrap_or(0);
            a.current_replicas = st.current_replicas.unwrap_or(0);
            a.desired_replicas = st.desired_replicas;
            a.current_cpu_utilization_percentage = st
                .current_metrics
                .iter()
                .flatten()
                .filter_map(|m| m.resource.as_ref())
                .find(|r| r.name == "cpu")
                .and_then(|r| r.current.average_utilization)
                .unwrap_or(0);
        }
        a
    }

    /// From an `autoscaling/v1` object (snapshots written by hand or by older tools).
    pub fn from_v1(h: &hpa1::HorizontalPodAutoscaler) -> Autoscaler {
        let mut a = base(&h.metadata);
        if let Some(spec) = &h.spec {
            a.min_replicas = spec.min_replicas.unwrap_or(1);
            a.max_replicas = spec.max_replicas;
            a.target_kind = spec.scale_target_ref.kind.clone();
            a.target_name = spec.scale_target_ref.name.clone();
            a.target_cpu_utilization_percentage =
                spec.target_cpu_utilization_percentage.unwrap_or(0);
        }
        if let Some(st) = &h.status {
            a.last_scale_time = time_text(st.last_scale_time.as_ref());
            a.observed_generation = st.observed_generation.unwrap_or(0);
            a.current_replicas = st.current_replicas;
            a.desired_replicas = st.desired_replicas;
            a.current_cpu_utilization_percentage =
                st.current_cpu_utilization_percentage.unwrap_or(0);
        }
        a
    }
}
