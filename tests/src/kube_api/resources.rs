//! The kinds the loopback server serves and its discovery documents (`/api`, `/apis/...`).

use serde_json::{Value, json};

/// A resource the server serves.
#[derive(Clone, Debug)]
pub struct ResourceDef {
    /// API group (`""` for core).
    pub group: &'static str,
    /// Versions served, preferred first.
    pub versions: &'static [&'static str],
    /// Kind.
    pub kind: &'static str,
    /// Plural name.
    pub plural: &'static str,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
}

/// The resources served. `config.istio.io` is missing on purpose: a cluster without those CRDs.
pub const RESOURCES: &[ResourceDef] = &[
    ResourceDef {
        group: "",
        versions: &["v1"],
        kind: "Namespace",
        plural: "namespaces",
        namespaced: false,
    },
    ResourceDef { group: "", versions: &["v1"], kind: "Pod", plural: "pods", namespaced: true },
    ResourceDef {
        group: "",
        versions: &["v1"],
        kind: "Service",
        plural: "services",
        namespaced: true,
    },
    ResourceDef {
        group: "",
        versions: &["v1"],
        kind: "ReplicationController",
        plural: "replicationcontrollers",
        namespaced: true,
    },
    ResourceDef {
        group: "apps",
        versions: &["v1"],
        kind: "Deployment",
        plural: "deployments",
        namespaced: true,
    },
    ResourceDef {
        group: "apps",
        versions: &["v1"],
        kind: "ReplicaSet",
        plural: "replicasets",
        namespaced: true,
    },
    ResourceDef {
        group: "apps",
        versions: &["v1"],
        kind: "StatefulSet",
        plural: "statefulsets",
        namespaced: true,
    },
    ResourceDef {
        group: "apps",
        versions: &["v1"],
        kind: "DaemonSet",
        plural: "daemonsets",
        namespaced: true,
    },
    ResourceDef {
        group: "batch",
        versions: &["v1"],
        kind: "Job",
        plural: "jobs",
        namespaced: true,
    },
    ResourceDef {
        group: "batch",
        versions: &["v1"],
        kind: "CronJob",
        plural: "cronjobs",
        namespaced: true,
    },
    ResourceDef {
        group: "autoscaling",
        versions: &["v2"],
        kind: "HorizontalPodAutoscaler",
        plural: "horizontalpodautoscalers",
        namespaced: true,
    },
    ResourceDef {
        group: "networking.istio.io",
        versions: &["v1beta1", "v1alpha3"],
        kind: "VirtualService",
        plural: "virtualservices",
        namespaced: true,
    },
    ResourceDef {
        group: "networking.istio.io",
        versions: &["v1beta1", "v1alpha3"],
        kind: "DestinationRule",
        plural: "destinationrules",
        namespaced: true,
    },
    ResourceDef {
        group: "networking.istio.io",
        versions: &["v1beta1", "v1alpha3"],
        kind: "Gateway",
        plural: "gateways",
        namespaced: true,
    },
    ResourceDef {
        group: "networking.istio.io",
        versions: &["v1beta1", "v1alpha3"],
        kind: "ServiceEntry",
        plural: "serviceentries",
        namespaced: true,
    },
    ResourceDef {
        group: "monitoring.kiali.io",
        versions: &["v1alpha1"],
        kind: "MonitoringDashboard",
        plural: "monitoringdashboards",
        namespaced: true,
    },
    // The kinds added after the seed (see [`without_todays_kinds`] for a cluster without them).
    ResourceDef {
        group: "networking.istio.io",
        versions: &["v1", "v1beta1"],
        kind: "Sidecar",
        plural: "sidecars",
        namespaced: true,
    },
    ResourceDef {
        group: "security.istio.io",
        versions: &["v1", "v1beta1"],
        kind: "AuthorizationPolicy",
        plural: "authorizationpolicies",
        namespaced: true,
    },
    ResourceDef {
        group: "security.istio.io",
        versions: &["v1", "v1beta1"],
        kind: "PeerAuthentication",
        plural: "peerauthentications",
        namespaced: true,
    },
    ResourceDef {
        group: "security.istio.io",
        versions: &["v1", "v1beta1"],
        kind: "RequestAuthentication",
        plural: "requestauthentications",
        namespaced: true,
    },
    ResourceDef {
        group: "gateway.networking.k8s.io",
        versions: &["v1", "v1beta1"],
        kind: "Gateway",
        plural: "gateways",
        namespaced: true,
    },
    ResourceDef {
        group: "gateway.networking.k8s.io",
        versions: &["v1", "v1beta1"],
        kind: "HTTPRoute",
        plural: "httproutes",
        namespaced: true,
    },
    ResourceDef {
        group: "gateway.networking.k8s.io",
        versions: &["v1"],
        kind: "GRPCRoute",
        plural: "grpcroutes",
        namespaced: true,
    },
    ResourceDef {
        group: "gateway.networking.k8s.io",
        versions: &["v1beta1"],
        kind: "ReferenceGrant",
        plural: "referencegrants",
        namespaced: true,
    },
];

/// Whether a resource is one of the kinds added after the seed (security, Sidecar, Gateway API).
fn todays(d: &ResourceDef) -> bool {
    matches!(d.group, "security.istio.io" | "gateway.networking.k8s.io") || d.plural == "sidecars"
}

/// [`RESOURCES`] without the security, Sidecar and Gateway API kinds: a cluster without
/// those CRDs (an older Istio, no Gateway API).
pub fn without_todays_kinds() -> &'static [ResourceDef] {
    static SEED: std::sync::OnceLock<Vec<ResourceDef>> = std::sync::OnceLock::new();
    SEED.get_or_init(|| RESOURCES.iter().filter(|d| !todays(d)).cloned().collect())
}

pub(super) fn def_by_kind(
    defs: &'static [ResourceDef],
    group: &str,
    kind: &str,
) -> Option<&'static ResourceDef> {
    defs.iter().find(|d| d.group == group && d.kind == kind)
}

pub(super) fn def_by_plural(
    defs: &'static [ResourceDef],
    group: &str,
    version: &str,
    plural: &str,
) -> Option<&'static ResourceDef> {
    defs.iter().find(|d| d.group == group && d.plural == plural && d.versions.contains(&version))
}

pub(super) fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() { version.to_string() } else { format!("{group}/{version}") }
}

pub(super) fn resource_list(defs: &[ResourceDef], group: &str, version: &str) -> Value {
    let resources: Vec<Value> = defs
        .iter()
        .filter(|d| d.group == group && d.versions.contains(&version))
        .map(|d| {
            json!({"name": d.plural, "singularName": d.kind.to_lowercase(), "namespaced": d.namespaced, "kind": d.kind,
                   "verbs": ["get", "list", "watch"], "shortNames": short_names(d.plural)})
        })
        .collect();
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": api_version(group, version), "resources": resources})
}

/// What kubectl users type (`deploy`, `po`, ...).
fn short_names(plural: &str) -> Vec<&'static str> {
    match plural {
        "namespaces" => vec!["ns"],
        "pods" => vec!["po"],
        "services" => vec!["svc"],
        "replicationcontrollers" => vec!["rc"],
        "deployments" => vec!["deploy"],
        "replicasets" => vec!["rs"],
        "statefulsets" => vec!["sts"],
        "daemonsets" => vec!["ds"],
        "cronjobs" => vec!["cj"],
        "horizontalpodautoscalers" => vec!["hpa"],
        "virtualservices" => vec!["vs"],
        "destinationrules" => vec!["dr"],
        "gateways" => vec!["gw"],
        "serviceentries" => vec!["se"],
        "authorizationpolicies" => vec!["ap"],
        "peerauthentications" => vec!["pa"],
        "requestauthentications" => vec!["ra"],
        _ => vec![],
    }
}

pub(super) fn groups(defs: &[ResourceDef]) -> Vec<Value> {
    let mut names: Vec<&str> = Vec::new();
    for g in defs.iter().map(|d| d.group).filter(|g| !g.is_empty()) {
        if !names.contains(&g) {
            names.push(g);
        }
    }
    names
        .into_iter()
        .map(|g| {
            let mut versions: Vec<&str> = Vec::new();
            for v in defs.iter().filter(|d| d.group == g).flat_map(|d| d.versions.iter().copied()) {
                if !versions.contains(&v) {
                    versions.push(v);
                }
            }
            let vs: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
                .collect();
            json!({"name": g, "versions": vs, "preferredVersion": vs[0]})
        })
        .collect()
}
