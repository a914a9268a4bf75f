//! Input (mesh objects, Services, workloads) and output (validations) of the checkers.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kinds of mesh config objects that get validation entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    /// `networking.istio.io` DestinationRule.
    DestinationRule,
    /// `networking.istio.io` VirtualService.
    VirtualService,
    /// `networking.istio.io` Gateway.
    Gateway,
    /// `networking.istio.io` ServiceEntry.
    ServiceEntry,
    /// `config.istio.io` rule.
    Rule,
    /// `config.istio.io` QuotaSpec.
    QuotaSpec,
    /// `config.istio.io` QuotaSpecBinding.
    QuotaSpecBinding,
    /// `security.istio.io` AuthorizationPolicy.
    AuthorizationPolicy,
    /// `security.istio.io` PeerAuthentication.
    PeerAuthentication,
    /// `security.istio.io` RequestAuthentication.
    RequestAuthentication,
    /// `networking.istio.io` Sidecar.
    Sidecar,
    /// `gateway.networking.k8s.io` Gateway (the Gateway API's).
    K8sGateway,
    /// `gateway.networking.k8s.io` HTTPRoute.
    K8sHTTPRoute,
    /// `gateway.networking.k8s.io` GRPCRoute.
    K8sGRPCRoute,
    /// `gateway.networking.k8s.io` ReferenceGrant.
    K8sReferenceGrant,
}

impl ObjectKind {
    /// Every kind, in the order the known plural names are listed in errors.
    pub const ALL: [ObjectKind; 15] = [
        ObjectKind::DestinationRule,
        ObjectKind::VirtualService,
        ObjectKind::Gateway,
        ObjectKind::ServiceEntry,
        ObjectKind::Rule,
        ObjectKind::QuotaSpec,
        ObjectKind::QuotaSpecBinding,
        ObjectKind::AuthorizationPolicy,
        ObjectKind::PeerAuthentication,
        ObjectKind::RequestAuthentication,
        ObjectKind::Sidecar,
        ObjectKind::K8sGateway,
        ObjectKind::K8sHTTPRoute,
        ObjectKind::K8sGRPCRoute,
        ObjectKind::K8sReferenceGrant,
    ];

    /// The singular name used as `objectType` in results (`virtualservice`).
    pub fn singular(self) -> &'static str {
        match self {
            ObjectKind::DestinationRule => "destinationrule",
            ObjectKind::VirtualService => "virtualservice",
            ObjectKind::Gateway => "gateway",
            ObjectKind::ServiceEntry => "serviceentry",
            ObjectKind::Rule => "rule",
            ObjectKind::QuotaSpec => "quotaspec",
            ObjectKind::QuotaSpecBinding => "quotaspecbinding",
            ObjectKind::AuthorizationPolicy => "authorizationpolicy",
            ObjectKind::PeerAuthentication => "peerauthentication",
            ObjectKind::RequestAuthentication => "requestauthentication",
            ObjectKind::Sidecar => "sidecar",
            ObjectKind::K8sGateway => "k8sgateway",
            ObjectKind::K8sHTTPRoute => "k8shttproute",
            ObjectKind::K8sGRPCRoute => "k8sgrpcroute",
            ObjectKind::K8sReferenceGrant => "k8sreferencegrant",
        }
    }

    /// The plural name used in URLs and in the config list (`virtualservices`).
    pub fn plural(self) -> &'static str {
        match self {
            ObjectKind::DestinationRule => "destinationrules",
            ObjectKind::VirtualService => "virtualservices",
            ObjectKind::Gateway => "gateways",
            ObjectKind::ServiceEntry => "serviceentries",
            ObjectKind::Rule => "rules",
            ObjectKind::QuotaSpec => "quotaspecs",
            ObjectKind::QuotaSpecBinding => "quotaspecbindings",
            ObjectKind::AuthorizationPolicy => "authorizationpolicies",
            ObjectKind::PeerAuthentication => "peerauthentications",
            ObjectKind::RequestAuthentication => "requestauthentications",
            ObjectKind::Sidecar => "sidecars",
            ObjectKind::K8sGateway => "k8sgateways",
            ObjectKind::K8sHTTPRoute => "k8shttproutes",
            ObjectKind::K8sGRPCRoute => "k8sgrpcroutes",
            ObjectKind::K8sReferenceGrant => "k8sreferencegrants",
        }
    }

    /// The Kubernetes `kind` of the resource (`VirtualService`).
    pub fn k8s_kind(self) -> &'static str {
        match self {
            ObjectKind::DestinationRule => "DestinationRule",
            ObjectKind::VirtualService => "VirtualService",
            ObjectKind::Gateway => "Gateway",
            ObjectKind::ServiceEntry => "ServiceEntry",
            ObjectKind::Rule => "rule",
            ObjectKind::QuotaSpec => "QuotaSpec",
            ObjectKind::QuotaSpecBinding => "QuotaSpecBinding",
            ObjectKind::AuthorizationPolicy => "AuthorizationPolicy",
            ObjectKind::PeerAuthentication => "PeerAuthentication",
            ObjectKind::RequestAuthentication => "RequestAuthentication",
            ObjectKind::Sidecar => "Sidecar",
            ObjectKind::K8sGateway => "Gateway",
            ObjectKind::K8sHTTPRoute => "HTTPRoute",
            ObjectKind::K8sGRPCRoute => "GRPCRoute",
            ObjectKind::K8sReferenceGrant => "ReferenceGrant",
        }
    }

    /// Parses a plural URL name (`virtualservices`).
    pub fn from_plural(name: &str) -> Option<ObjectKind> {
        Self::ALL.into_iter().find(|k| k.plural() == name)
    }

    /// Parses a Kubernetes `kind` (`VirtualService`), case-insensitively; `Gateway` is
    /// Istio's (the Gateway API's has the same kind, in another group).
    pub fn from_k8s_kind(kind: &str) -> Option<ObjectKind> {
        Self::ALL.into_iter().find(|k| k.k8s_kind().eq_ignore_ascii_case(kind))
    }

    /// The plural names of every kind, for error messages.
    pub fn known_plurals() -> Vec<&'static str> {
        Self::ALL.iter().map(|k| k.plural()).collect()
    }
}

/// One mesh config object: its kind, place, and `spec` as written.
#[derive(Clone, Debug)]
pub struct MeshObject {
    /// Kind of the object.
    pub kind: ObjectKind,
    /// Namespace of the object.
    pub namespace: String,
    /// Name of the object.
    pub name: String,
    /// The object's `spec`, unchanged.
    pub spec: Value,
}

/// A namespace that exists, with its labels (Gateway API `allowedRoutes` selectors).
#[derive(Clone, Debug, Default)]
pub struct NamespaceInfo {
    /// Name.
    pub name: String,
    /// Labels of the Namespace object.
    pub labels: BTreeMap<String, String>,
}

/// A Kubernetes Service.
#[derive(Clone, Debug, Default)]
pub struct ServiceInfo {
    /// Namespace of the Service.
    pub namespace: String,
    /// Name of the Service.
    pub name: String,
    /// Labels of the Service object.
    pub labels: BTreeMap<String, String>,
    /// The Service's pod selector (empty when it has none).
    pub selector: BTreeMap<String, String>,
}

/// A workload (Deployment and the like): the labels of its pod template.
#[derive(Clone, Debug, Default)]
pub struct WorkloadInfo {
    /// Namespace of the workload.
    pub namespace: String,
    /// Name of the workload.
    pub name: String,
    /// Pod template labels.
    pub labels: BTreeMap<String, String>,
}

/// Everything one evaluation reads.
///
/// `objects` holds the mesh objects of the namespace being validated (objects of other
/// namespaces may be present: they are used as context and never reported); `gateways`
/// the Gateways of ALL namespaces (the gateway checks compare across namespaces);
/// `services` and `workloads` those of every namespace a host may point to. `gateways`
/// also holds the Gateway API Gateways of all namespaces, and `namespaces` every namespace
/// that exists (the checks of AuthorizationPolicy sources, routes and ReferenceGrants read
/// it).
#[derive(Clone, Debug)]
pub struct ValidationInput {
    /// Mesh config objects.
    pub objects: Vec<MeshObject>,
    /// Kubernetes Services.
    pub services: Vec<ServiceInfo>,
    /// Workloads.
    pub workloads: Vec<WorkloadInfo>,
    /// Gateways (Istio's and the Gateway API's) of all namespaces (may repeat gateways
    /// found in `objects`).
    pub gateways: Vec<MeshObject>,
    /// Every namespace that exists.
    pub namespaces: Vec<NamespaceInfo>,
    /// The cluster's identity domain, e.g. `svc.cluster.local`.
    pub identity_domain: String,
    /// The workload label naming the app (default `app`).
    pub app_label: String,
    /// Namespaces the caller may not list. What they hold is never looked at: a reference
    /// into one gets the same `info` check whether or not its target exists, so a
    /// validation cannot tell a caller what is there.
    pub hidden_namespaces: std::collections::BTreeSet<String>,
}

impl Default for ValidationInput {
    fn default() -> Self {
        ValidationInput {
            objects: Vec::new(),
            services: Vec::new(),
            workloads: Vec::new(),
            gateways: Vec::new(),
            namespaces: Vec::new(),
            identity_domain: "svc.cluster.local".into(),
            app_label: "app".into(),
            hidden_namespaces: std::collections::BTreeSet::new(),
        }
    }
}

/// How bad a finding is: only errors make an object invalid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The object does not work as written.
    Error,
    /// Probably a mistake; the object stays valid.
    Warning,
    /// Worth knowing, not a problem (e.g. a reference that could not be verified).
    Info,
}

/// One finding on an object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// Human-readable message.
    pub message: String,
    /// Severity.
    pub severity: Severity,
    /// Location of the offending element, e.g. `spec/http[1]/route[0]/destination/host`.
    pub path: String,
    /// Kiali's KIA code (`KIA0004`) on the checks of the kinds added after the seed; the
    /// seed's checks have none and their JSON has no `code` field, as before.
    #[serde(skip_serializing_if = "Option::is_none", skip_deserializing)]
    pub code: Option<&'static str>,
    /// The check's key (`virtualservices.route.weightsum`); not part of the JSON payload.
    #[serde(skip)]
    pub key: &'static str,
}

/// The validation of one object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validation {
    /// Object name.
    pub name: String,
    /// Singular object type (`virtualservice`).
    #[serde(rename = "objectType")]
    pub object_type: String,
    /// False when an error-severity check fired.
    pub valid: bool,
    /// Findings, `[]` when none.
    pub checks: Vec<Check>,
}

impl Validation {
    /// A clean validation (`valid: true`, no checks).
    pub fn clean(kind: ObjectKind, name: &str) -> Self {
        Validation {
            name: name.to_string(),
            object_type: kind.singular().to_string(),
            valid: true,
            checks: Vec::new(),
        }
    }

    /// Adds one finding: an error makes the object invalid.
    pub fn push(&mut self, check: Check) {
        self.valid &= check.severity != Severity::Error;
        self.checks.push(check);
    }

    /// Merges the findings of another checker on the same object: checks concatenated,
    /// valid = AND.
    pub fn merge(&mut self, other: Validation) {
        self.valid &= other.valid;
        self.checks.extend(other.checks);
    }
}

/// `{objectType: {name: validation}}`.
pub type TypedMeshValidations = BTreeMap<String, BTreeMap<String, Validation>>;

/// `{namespace: TypedMeshValidations}`.
pub type NamespaceValidations = BTreeMap<String, TypedMeshValidations>;
