//! Compact records for the kinds a big cluster has most of. A typed `k8s_openapi` Pod is
//! 2 KiB before any string, and each of its containers another 2 KiB, even when trimmed to
//! a name and an image; with thousands of pods that was most of a replica's memory (see the
//! `cluster` benchmark). These records hold what the model reads, are read straight from
//! the API's JSON (unread fields are skipped by the parser, never allocated) and are what
//! the `kube` watch caches and the model keep.

use std::{borrow::Cow, fmt, marker::PhantomData};

use k8s_openapi::{
    NamespaceResourceScope, Resource as _,
    api::core::v1::{Pod, Service},
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time},
};
use serde::{
    Deserialize, Deserializer,
    de::{IgnoredAny, SeqAccess, Visitor},
};

use crate::{
    labels::Labels,
    trim::{Trim, trim_meta},
};

/// The metadata fields the model, the watch caches and `kube`'s watcher read (not the uid:
/// nothing reads it, and it is 36 bytes on every object).
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeanMeta {
    name: Option<String>,
    namespace: Option<String>,
    resource_version: Option<String>,
    creation_timestamp: Option<Time>,
    #[serde(default)]
    labels: Labels,
    #[serde(default, deserialize_with = "crate::labels::annotations")]
    annotations: Labels,
    owner_references: Option<Vec<OwnerReference>>,
}

impl LeanMeta {
    /// The object's identity (what `kube` needs), its labels and its annotations.
    fn split(self) -> (ObjectMeta, Labels, Labels) {
        let meta = ObjectMeta {
            name: self.name,
            namespace: self.namespace,
            resource_version: self.resource_version,
            creation_timestamp: self.creation_timestamp,
            owner_references: self.owner_references,
            ..Default::default()
        };
        (meta, self.labels, self.annotations)
    }
}

/// A Pod: its metadata, container names and images (the control plane's version in
/// `/status`), and its phase.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(from = "PodWire")]
pub struct PodRecord {
    /// Name, namespace, owners, creation time, versions; labels and annotations are below.
    pub metadata: ObjectMeta,
    /// `metadata.labels`.
    pub labels: Labels,
    /// `metadata.annotations` without the `kubectl apply` copy.
    pub annotations: Labels,
    /// `spec.containers`.
    pub spec: Option<PodRecordSpec>,
    /// `status.phase`.
    pub status: Option<PodRecordStatus>,
}

#[derive(Deserialize)]
struct PodWire {
    #[serde(default)]
    metadata: LeanMeta,
    spec: Option<PodRecordSpec>,
    status: Option<PodRecordStatus>,
}

impl From<PodWire> for PodRecord {
    fn from(w: PodWire) -> PodRecord {
        let (metadata, labels, annotations) = w.metadata.split();
        PodRecord { metadata, labels, annotations, spec: w.spec, status: w.status }
    }
}

/// What a Pod's spec keeps.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct PodRecordSpec {
    /// Containers, in order.
    #[serde(default)]
    pub containers: Vec<ContainerRecord>,
}

/// One container: its name and image.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct ContainerRecord {
    /// Name.
    pub name: String,
    /// Image.
    pub image: Option<String>,
}

/// What a Pod's status keeps.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct PodRecordStatus {
    /// `Pending`, `Running`, ...
    pub phase: Option<String>,
}

/// Lets `kube` list and watch a kind into `$record`: the same requests as for `$kind`.
macro_rules! record_of {
    ([$($generic:ident)?] $record:ty, $kind:ty) => {
        impl<$($generic)?> kube::Resource for $record
        where
            $kind: k8s_openapi::Resource<Scope = NamespaceResourceScope>,
        {
            type DynamicType = ();
            type Scope = NamespaceResourceScope;

            fn kind(_: &()) -> Cow<'_, str> {
                Cow::Borrowed(<$kind>::KIND)
            }
            fn group(_: &()) -> Cow<'_, str> {
                Cow::Borrowed(<$kind>::GROUP)
            }
            fn version(_: &()) -> Cow<'_, str> {
                Cow::Borrowed(<$kind>::VERSION)
            }
            fn api_version(_: &()) -> Cow<'_, str> {
                Cow::Borrowed(<$kind>::API_VERSION)
            }
            fn plural(_: &()) -> Cow<'_, str> {
                Cow::Borrowed(<$kind>::URL_PATH_SEGMENT)
            }
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }

        impl<$($generic)?> Trim for $record {
            /// Already lean when read; a record built by hand is trimmed like any object.
            fn trim(&mut self) {
                trim_meta(&mut self.metadata);
            }
        }
    };
}

record_of!([] PodRecord, Pod);
record_of!([] ServiceRecord, Service);
// Each workload kind (`K`) is read into the one record type.
record_of!([K] WorkloadRecord<K>, K);

/// A Service: its metadata, type, cluster IP, selector and ports.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(from = "ServiceWire")]
pub struct ServiceRecord {
    /// Name, namespace, owners, creation time, versions; labels and annotations are below.
    pub metadata: ObjectMeta,
    /// `metadata.labels`.
    pub labels: Labels,
    /// `metadata.annotations` without the `kubectl apply` copy.
    pub annotations: Labels,
    /// What the spec keeps.
    pub spec: Option<ServiceRecordSpec>,
}

#[derive(Deserialize)]
struct ServiceWire {
    #[serde(default)]
    metadata: LeanMeta,
    spec: Option<ServiceRecordSpec>,
}

impl From<ServiceWire> for ServiceRecord {
    fn from(w: ServiceWire) -> ServiceRecord {
        let (metadata, labels, annotations) = w.metadata.split();
        ServiceRecord { metadata, labels, annotations, spec: w.spec }
    }
}

/// What a Service's spec keeps.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceRecordSpec {
    /// `ClusterIP`, `NodePort`, ...
    #[serde(rename = "type")]
    pub type_: Option<String>,
    /// `spec.clusterIP`.
    #[serde(rename = "clusterIP")]
    pub cluster_ip: Option<String>,
    /// `spec.selector` (empty when absent).
    #[serde(default)]
    pub selector: Labels,
    /// `spec.ports`.
    pub ports: Option<Vec<ServicePortRecord>>,
}

/// One Service port.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct ServicePortRecord {
    /// Name.
    pub name: Option<String>,
    /// `TCP`, `UDP`, `SCTP`.
    pub protocol: Option<String>,
    /// Port.
    pub port: i32,
}

/// A workload object (`K` names the kind: Deployment, ReplicaSet, ...): its metadata,
/// wanted replicas, its pod template's metadata and the status counts the model reads.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(bound = "", from = "WorkloadWire")]
pub struct WorkloadRecord<K> {
    /// Name, namespace, owners, creation time, versions; labels and annotations are below.
    pub metadata: ObjectMeta,
    /// `metadata.labels`.
    pub labels: Labels,
    /// `metadata.annotations` without the `kubectl apply` copy.
    pub annotations: Labels,
    /// What the spec keeps.
    pub spec: Option<WorkloadSpec>,
    /// What the status keeps.
    pub status: Option<WorkloadStatus>,
    kind: PhantomData<fn() -> K>,
}

#[derive(Deserialize)]
struct WorkloadWire {
    #[serde(default)]
    metadata: LeanMeta,
    spec: Option<WorkloadSpec>,
    status: Option<WorkloadStatus>,
}

impl<K> From<WorkloadWire> for WorkloadRecord<K> {
    fn from(w: WorkloadWire) -> WorkloadRecord<K> {
        let (metadata, labels, annotations) = w.metadata.split();
        WorkloadRecord {
            metadata,
            labels,
            annotations,
            spec: w.spec,
            status: w.status,
            kind: PhantomData,
        }
    }
}

/// A workload's spec: replicas and the pod template's metadata.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    /// `spec.replicas`.
    pub replicas: Option<i32>,
    /// `spec.template` (every kind but CronJob).
    pub template: Option<TemplateRecord>,
    /// `spec.jobTemplate` (CronJob; boxed, so other kinds do not pay for its size).
    pub job_template: Option<Box<JobTemplateRecord>>,
}

/// A pod template: its metadata only (the workload shows its labels and annotations).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct TemplateRecord {
    /// Its labels and annotations.
    pub metadata: Option<TemplateMeta>,
}

/// A pod template's metadata: what the workload shows (a full `ObjectMeta` is 360 bytes).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct TemplateMeta {
    /// Labels.
    #[serde(default)]
    pub labels: Labels,
    /// Annotations without the `kubectl apply` copy.
    #[serde(default, deserialize_with = "crate::labels::annotations")]
    pub annotations: Labels,
}

/// A CronJob's job template.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct JobTemplateRecord {
    /// Its job spec.
    pub spec: Option<JobSpecRecord>,
}

/// A job spec inside a CronJob.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct JobSpecRecord {
    /// Its pod template.
    pub template: Option<TemplateRecord>,
}

/// The status counts of every workload kind (each kind fills its own).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadStatus {
    /// Deployment, ReplicaSet, ReplicationController, StatefulSet.
    pub available_replicas: Option<i32>,
    /// Deployment.
    pub unavailable_replicas: Option<i32>,
    /// StatefulSet.
    pub ready_replicas: Option<i32>,
    /// DaemonSet.
    pub desired_number_scheduled: Option<i32>,
    /// DaemonSet.
    pub number_available: Option<i32>,
    /// DaemonSet.
    pub number_unavailable: Option<i32>,
    /// Job: the count of active pods; CronJob: the count of active jobs (a list there).
    #[serde(default, deserialize_with = "count_or_list")]
    pub active: Option<i32>,
    /// Job.
    pub succeeded: Option<i32>,
    /// Job.
    pub failed: Option<i32>,
}

impl<K> WorkloadRecord<K> {
    /// The pod template's metadata (a CronJob's through its job template).
    pub fn template_meta(&self) -> Option<&TemplateMeta> {
        let spec = self.spec.as_ref()?;
        let t = match &spec.template {
            Some(t) => t,
            None => spec.job_template.as_ref()?.spec.as_ref()?.template.as_ref()?,
        };
        t.metadata.as_ref()
    }
}

/// A number, or a list counted (Job's `status.active` is a count, CronJob's a list).
fn count_or_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<i32>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a count or a list")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(V)
        }
        fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Self::Value, E> {
            i32::try_from(n).map(Some).map_err(E::custom)
        }
        fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Self::Value, E> {
            i32::try_from(n).map(Some).map_err(E::custom)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
            let mut n = 0i32;
            while s.next_element::<IgnoredAny>()?.is_some() {
                n = n.saturating_add(1);
            }
            Ok(Some(n))
        }
    }
    d.deserialize_option(V)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trim::LAST_APPLIED;
    use k8s_openapi::api::{
        apps::v1::Deployment,
        batch::v1::{CronJob, Job},
    };
    use serde_json::json;

    #[test]
    fn a_served_pod_keeps_what_the_model_reads() {
        let pod: PodRecord = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "n", "uid": "u1", "resourceVersion": "7",
                "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"app": "a"},
                "annotations": {"sidecar.istio.io/status": "{}", LAST_APPLIED: "{\"big\": true}"},
                "managedFields": [{"manager": "kubectl"}],
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true}]},
            "spec": {"containers": [{"name": "main", "image": "istio/pilot:1.20.0", "env": [{"name": "X", "value": "1"}]}],
                "volumes": [{"name": "v", "emptyDir": {}}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "conditions": [{"type": "Ready", "status": "True"}]}
        }))
        .unwrap();
        let m = &pod.metadata;
        assert_eq!((m.name.as_deref(), m.namespace.as_deref()), (Some("p"), Some("n")));
        assert_eq!((m.uid.as_deref(), m.resource_version.as_deref()), (None, Some("7")));
        assert!(m.creation_timestamp.is_some());
        assert!(m.managed_fields.is_none() && m.labels.is_none() && m.annotations.is_none());
        assert_eq!(pod.labels.iter().collect::<Vec<_>>(), [("app", "a")]);
        assert_eq!(pod.annotations.iter().collect::<Vec<_>>(), [("sidecar.istio.io/status", "{}")]);
        assert_eq!(m.owner_references.as_ref().map(|o| o[0].name.as_str()), Some("rs"));
        assert_eq!(
            pod.spec.unwrap().containers,
            vec![ContainerRecord { name: "main".into(), image: Some("istio/pilot:1.20.0".into()) }]
        );
        assert_eq!(pod.status.unwrap().phase.as_deref(), Some("Running"));
    }

    #[test]
    fn only_the_apply_copy_means_no_annotations() {
        let pod: PodRecord = serde_json::from_value(
            json!({"metadata": {"name": "p", "annotations": {LAST_APPLIED: "{}"}}}),
        )
        .unwrap();
        assert!(pod.annotations.is_empty());
        let pod: PodRecord =
            serde_json::from_value(json!({"metadata": {"name": "p", "annotations": null}}))
                .unwrap();
        assert!(pod.annotations.is_empty());
    }

    #[test]
    fn workloads_keep_counts_and_template_metadata() {
        let d: WorkloadRecord<Deployment> = serde_json::from_value(json!({
            "metadata": {"name": "d", "annotations": {LAST_APPLIED: "{}"}, "managedFields": [{"manager": "m"}]},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "a"}},
                "template": {"metadata": {"labels": {"app": "a"}, "annotations": {"x": "y"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": {"availableReplicas": 2, "unavailableReplicas": 1, "conditions": [{"type": "Available", "status": "True"}]}
        }))
        .unwrap();
        assert_eq!(d.metadata, ObjectMeta { name: Some("d".into()), ..Default::default() });
        assert_eq!(d.spec.as_ref().and_then(|s| s.replicas), Some(2));
        let t = d.template_meta().unwrap();
        assert_eq!(t.labels.iter().collect::<Vec<_>>(), [("app", "a")]);
        assert_eq!(t.annotations.iter().collect::<Vec<_>>(), [("x", "y")]);
        assert!(d.annotations.is_empty());
        let st = d.status.unwrap();
        assert_eq!((st.available_replicas, st.unavailable_replicas), (Some(2), Some(1)));
    }

    #[test]
    fn active_is_a_count_for_jobs_and_a_list_for_cron_jobs() {
        let j: WorkloadRecord<Job> = serde_json::from_value(json!({
            "metadata": {"name": "j"}, "spec": {"template": {"metadata": {"labels": {"app": "j"}}}},
            "status": {"active": 1, "succeeded": 2, "failed": 3}
        }))
        .unwrap();
        let st = j.status.as_ref().unwrap();
        assert_eq!((st.active, st.succeeded, st.failed), (Some(1), Some(2), Some(3)));
        assert!(j.template_meta().is_some_and(|m| !m.labels.is_empty()));
        let c: WorkloadRecord<CronJob> = serde_json::from_value(json!({
            "metadata": {"name": "c"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"metadata": {"labels": {"app": "c"}}}}}},
            "status": {"active": [{"kind": "Job", "name": "c-1"}, {"kind": "Job", "name": "c-2"}]}
        }))
        .unwrap();
        assert_eq!(c.status.as_ref().and_then(|s| s.active), Some(2));
        assert!(c.template_meta().is_some_and(|m| !m.labels.is_empty()));
    }

    #[test]
    fn services_keep_type_ip_selector_and_ports() {
        let s: ServiceRecord = serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "n", "labels": {"app": "a"}},
            "spec": {"type": "NodePort", "clusterIP": "10.0.0.9", "clusterIPs": ["10.0.0.9"], "selector": {"app": "a"},
                "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080, "nodePort": 30080}],
                "sessionAffinity": "None"},
            "status": {"loadBalancer": {}}
        }))
        .unwrap();
        let spec = s.spec.unwrap();
        assert_eq!(spec.type_.as_deref(), Some("NodePort"));
        assert_eq!(spec.cluster_ip.as_deref(), Some("10.0.0.9"));
        assert_eq!(spec.selector.iter().collect::<Vec<_>>(), [("app", "a")]);
        assert_eq!(s.labels.get("app"), Some("a"));
        assert_eq!(
            spec.ports,
            Some(vec![ServicePortRecord {
                name: Some("http".into()),
                protocol: Some("TCP".into()),
                port: 80
            }])
        );
    }
}
