//! What the model never reads is dropped before an object is stored, by both sources:
//! `managedFields`, the `kubectl apply` annotation, pod specs beyond container names and
//! images, the pod spec of every workload template, and status conditions. On a big
//! cluster these are most of each object's size (see the `cluster` benchmark).
//!
//! What stays is what `model.rs`, `payload.rs`, the plugins' cluster data and `/status`
//! read; a field read later must be kept here too.

use k8s_openapi::{
    api::{
        apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet},
        autoscaling::v2::HorizontalPodAutoscaler,
        batch::v1::{CronJob, Job},
        core::v1::{
            Container, Namespace, Pod, PodSpec, PodStatus, PodTemplateSpec, ReplicationController,
            Service, ServicePort, ServiceSpec,
        },
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};

/// The annotation `kubectl apply` writes: a full copy of the applied manifest.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops the parts of an object the model never reads.
pub trait Trim {
    /// Trims in place.
    fn trim(&mut self);
}

/// Metadata of every kind: no managedFields, no last-applied copy.
pub fn trim_meta(m: &mut ObjectMeta) {
    m.managed_fields = None;
    if let Some(a) = &mut m.annotations {
        a.remove(LAST_APPLIED);
        if a.is_empty() {
            m.annotations = None;
        }
    }
}

/// A workload's pod template: its labels and annotations are shown, its pod spec is not.
fn trim_template(t: &mut PodTemplateSpec) {
    if let Some(m) = &mut t.metadata {
        trim_meta(m);
    }
    t.spec = None;
}

impl Trim for Namespace {
    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        self.spec = None;
        self.status = None;
    }
}

impl Trim for Pod {
    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        // Container images name the control plane's version in /status.
        self.spec = self.spec.take().map(|s| PodSpec {
            containers: s
                .containers
                .into_iter()
                .map(|c| Container { name: c.name, image: c.image, ..Default::default() })
                .collect(),
            ..Default::default()
        });
        self.status =
            self.status.take().map(|s| PodStatus { phase: s.phase, ..Default::default() });
    }
}

impl Trim for Service {
    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        self.spec = self.spec.take().map(|s| ServiceSpec {
            type_: s.type_,
            cluster_ip: s.cluster_ip,
            selector: s.selector,
            ports: s.ports.map(|ps| {
                ps.into_iter()
                    .map(|p| ServicePort {
                        name: p.name,
                        protocol: p.protocol,
                        port: p.port,
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        });
        self.status = None;
    }
}

impl Trim for Deployment {
    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        if let Some(s) = &mut self.spec {
            trim_template(&mut s.template);
            s.strategy = None;
        }
        if let Some(s) = &mut self.status {
            s.conditions = None;
        }
    }
}

impl Trim for ReplicaSet {
    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        if let Some(t) = self.spec.as_mut().and_then(|s| s.template.as_mut()) {
            trim_template(t);
        }
        if let Some(s) = &mut self.status {
            s.conditions = None;
        }
    }
}

impl Trim for ReplicationController {
    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        if let Some(t) = self.spec.as_mut().and_then(|s| s.template.as_mut()) {
            trim_template(t);
        }
        if let Some(s) = &mut self.status {
            s.conditions = None;
        }
    }
}

impl Trim for StatefulSet {
    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        if let Some(s) = &mut self.spec {
            trim_template(&mut s.template);
            s.volume_claim_templates = None;
        }
        if let Some(s) = &mut self.status {
            s.conditions = None;
        }
    }
}

impl Trim for DaemonSet {
    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        if let Some(s) = &mut self.spec {
            trim_template(&mut s.template);
        }
        if let Some(s) = &mut self.status {
            s.conditions = None;
        }
    }
}

impl Trim for Job {
    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        if let Some(s) = &mut self.spec {
            trim_template(&mut s.template);
        }
        if let Some(s) = &mut self.status {
            s.conditions = None;
        }
    }
}

impl Trim for CronJob {
    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        if let Some(t) = self.spec.as_mut().and_then(|s| s.job_template.spec.as_mut()) {
            trim_template(&mut t.template);
        }
    }
}

impl Trim for HorizontalPodAutoscaler {
    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        if let Some(s) = &mut self.status {
            s.conditions = None;
        }
    }
}

/// Mesh objects: the model reads their metadata and `spec` (Istio writes a `status` too).
impl Trim for kube::api::DynamicObject {
    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        let spec = self.data.get_mut("spec").map(serde_json::Value::take);
        self.data = serde_json::json!({ "spec": spec });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pods_keep_what_the_model_reads() {
        let mut pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "n", "labels": {"app": "a"},
                "annotations": {"sidecar.istio.io/status": "{}", LAST_APPLIED: "{\"big\": true}"},
                "managedFields": [{"manager": "kubectl"}],
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true}]},
            "spec": {"containers": [{"name": "main", "image": "istio/pilot:1.20.0", "env": [{"name": "X", "value": "1"}]}],
                "volumes": [{"name": "v", "emptyDir": {}}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "conditions": [{"type": "Ready", "status": "True"}]}
        }))
        .unwrap();
        pod.trim();
        let v = serde_json::to_value(&pod).unwrap();
        assert_eq!(
            v,
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "n", "labels": {"app": "a"},
                    "annotations": {"sidecar.istio.io/status": "{}"},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true}]},
                "spec": {"containers": [{"name": "main", "image": "istio/pilot:1.20.0"}]},
                "status": {"phase": "Running"}
            })
        );
    }

    #[test]
    fn templates_keep_labels_and_annotations_only() {
        let mut d: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "d", "annotations": {LAST_APPLIED: "{}"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "a"}},
                "template": {"metadata": {"labels": {"app": "a"}, "annotations": {"x": "y"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": {"availableReplicas": 2, "conditions": [{"type": "Available", "status": "True"}]}
        }))
        .unwrap();
        d.trim();
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["metadata"], json!({"name": "d"}));
        assert_eq!(
            v["spec"]["template"],
            json!({"metadata": {"labels": {"app": "a"}, "annotations": {"x": "y"}}})
        );
        assert_eq!(v["spec"]["replicas"], 2);
        assert_eq!(v["status"], json!({"availableReplicas": 2}));
    }
}
