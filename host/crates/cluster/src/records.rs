//! Compact records for the kinds a big cluster has most of. A typed `k8s_openapi` Pod is
//! 2 KiB before any string, and each of its containers another 2 KiB, even when trimmed to
//! a name and an image; with thousands of pods that was most of a replica's memory (see the
//! `cluster` benchmark). These records hold what the model reads, are read straight from
//! the API's JSON (unread fields are skipped by the parser, never allocated) and are what
//! the `kube` watch caches and the model keep.

use std::{borrow::Cow, collections::BTreeMap, fmt, marker::PhantomData};

use k8s_openapi::{
    NamespaceResourceScope, Resource as _,
    api::core::v1::{Pod, Service},
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time},
};
use serde::{
    Deserialize, Deserializer,
    de::{IgnoredAny, MapAccess, SeqAccess, Visitor},
};

use crate::trim::{LAST_APPLIED, Trim, trim_meta};

/// The metadata fields the model, the watch caches and `kube`'s watcher read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeanMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    creation_timestamp: Option<Time>,
    labels: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "annotations")]
    annotations: Option<BTreeMap<String, String>>,
    owner_references: Option<Vec<OwnerReference>>,
}

/// Annotations without the `kubectl apply` copy, whose text is skipped, not read.
fn annotations<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<BTreeMap<String, String>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map of annotations")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(V)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some(k) = m.next_key::<Cow<'de, str>>()? {
                if k == LAST_APPLIED {
                    m.next_value::<IgnoredAny>()?;
                } else {
                    out.insert(k.into_owned(), m.next_value()?);
                }
            }
            Ok((!out.is_empty()).then_some(out))
        }
    }
    d.deserialize_option(V)
}

/// `metadata` without `managedFields` and the `kubectl apply` annotation, never allocated.
pub fn lean_meta<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    let m = LeanMeta::deserialize(d)?;
    Ok(ObjectMeta {
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resource_version: m.resource_version,
        creation_timestamp: m.creation_timestamp,
        labels: m.labels,
        annotations: m.annotations,
        owner_references: m.owner_references,
        ..Default::default()
    })
}

/// A Pod: its metadata, container names and images (the control plane's version in
/// `/status`), and its phase.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct PodRecord {
    /// Metadata, trimmed.
    #[serde(default, deserialize_with = "lean_meta")]
    pub metadata: ObjectMeta,
    /// `spec.containers`.
    pub spec: Option<PodRecordSpec>,
    /// `status.phase`.
    pub status: Option<PodRecordStatus>,
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
    ($record:ty, $kind:ty) => {
        impl kube::Resource for $record {
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

        impl Trim for $record {
            /// Already lean when read; a record built by hand is trimmed like any object.
            fn trim(&mut self) {
                trim_meta(&mut self.metadata);
            }
        }
    };
}

record_of!(PodRecord, Pod);
record_of!(ServiceRecord, Service);

/// A Service: its metadata, type, cluster IP, selector and ports.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct ServiceRecord {
    /// Metadata, trimmed.
    #[serde(default, deserialize_with = "lean_meta")]
    pub metadata: ObjectMeta,
    /// What the spec keeps.
    pub spec: Option<ServiceRecordSpec>,
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
    /// `spec.selector`.
    pub selector: Option<BTreeMap<String, String>>,
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
#[serde(bound = "")]
pub struct WorkloadRecord<K> {
    /// Metadata, trimmed.
    #[serde(default, deserialize_with = "lean_meta")]
    pub metadata: ObjectMeta,
    /// What the spec keeps.
    pub spec: Option<WorkloadSpec>,
    /// What the status keeps.
    pub status: Option<WorkloadStatus>,
    #[serde(skip)]
    kind: PhantomData<fn() -> K>,
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
    pub labels: Option<BTreeMap<String, String>>,
    /// Annotations without the `kubectl apply` copy.
    #[serde(default, deserialize_with = "annotations")]
    pub annotations: Option<BTreeMap<String, String>>,
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

/// Lets `kube` list and watch a workload kind into records: the same requests as for `K`.
impl<K> kube::Resource for WorkloadRecord<K>
where
    K: k8s_openapi::Resource<Scope = NamespaceResourceScope>,
{
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(K::KIND)
    }
    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(K::GROUP)
    }
    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(K::VERSION)
    }
    fn api_version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(K::API_VERSION)
    }
    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(K::URL_PATH_SEGMENT)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl<K> Trim for WorkloadRecord<K> {
    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert_eq!((m.uid.as_deref(), m.resource_version.as_deref()), (Some("u1"), Some("7")));
        assert!(m.creation_timestamp.is_some());
        assert!(m.managed_fields.is_none());
        assert_eq!(
            m.annotations,
            Some(BTreeMap::from([("sidecar.istio.io/status".into(), "{}".into())]))
        );
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
        assert_eq!(pod.metadata.annotations, None);
        let pod: PodRecord =
            serde_json::from_value(json!({"metadata": {"name": "p", "annotations": null}}))
                .unwrap();
        assert_eq!(pod.metadata.annotations, None);
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
        assert_eq!(t.labels, Some(BTreeMap::from([("app".into(), "a".into())])));
        assert_eq!(t.annotations, Some(BTreeMap::from([("x".into(), "y".into())])));
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
        assert!(j.template_meta().is_some_and(|m| m.labels.is_some()));
        let c: WorkloadRecord<CronJob> = serde_json::from_value(json!({
            "metadata": {"name": "c"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"metadata": {"labels": {"app": "c"}}}}}},
            "status": {"active": [{"kind": "Job", "name": "c-1"}, {"kind": "Job", "name": "c-2"}]}
        }))
        .unwrap();
        assert_eq!(c.status.as_ref().and_then(|s| s.active), Some(2));
        assert!(c.template_meta().is_some_and(|m| m.labels.is_some()));
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
        assert_eq!(spec.selector, Some(BTreeMap::from([("app".into(), "a".into())])));
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
