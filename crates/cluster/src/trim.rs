//! What the model never reads is dropped before an object is stored, by both sources:
//! `managedFields`, the `kubectl apply` annotation, HPA conditions. Pods, services and
//! workloads are read into compact records instead (`records.rs`), which skip
//! the same while parsing. On a big cluster these are most of each object's size (see the
//! `cluster` benchmark).
//!
//! What stays is what `model.rs`, `payload.rs`, the plugins' cluster data and `/status`
//! read; a field read later must be kept here too.

use k8s_openapi::{
    api::{autoscaling::v2::HorizontalPodAutoscaler, core::v1::Namespace},
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

impl Trim for Namespace {
    fn trim(&mut self) {
        trim_meta(&mut self.metadata);
        self.spec = None;
        self.status = None;
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
