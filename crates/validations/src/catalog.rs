//! The checks: key, message and severity of each (Kiali's v0.14 keys and texts for the
//! seed's kinds, so clients written against them keep working; Kiali v2's keys, texts and
//! KIA codes for the security, Sidecar and Gateway API kinds).

use crate::model::{Check, Severity};

/// A check's fixed part; [`Rule::at`] adds the path of one finding.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// Stable key, e.g. `virtualservices.route.weightsum`.
    pub key: &'static str,
    /// Message shown to the user.
    pub message: &'static str,
    /// Severity.
    pub severity: Severity,
    /// Kiali's KIA code (`None` for the seed's checks, whose answers carry no code).
    pub code: Option<&'static str>,
}

impl Rule {
    /// A finding of this rule at `path`.
    pub fn at(&self, path: impl Into<String>) -> Check {
        Check {
            message: self.message.to_string(),
            severity: self.severity,
            path: path.into(),
            code: self.code,
            key: self.key,
        }
    }
}

const fn rule(key: &'static str, message: &'static str, severity: Severity) -> Rule {
    Rule { key, message, severity, code: None }
}

/// A check of Kiali v2 with its code (keys, codes, messages and severities from Kiali
/// v2.0.0's `models/istio_validation.go`).
const fn kia(
    code: &'static str,
    key: &'static str,
    message: &'static str,
    severity: Severity,
) -> Rule {
    Rule { key, message, severity, code: Some(code) }
}

use Severity::{Error, Info, Warning};

/// DestinationRules sharing a host and subset.
pub const DR_MULTI_MATCH: Rule = rule(
    "destinationrules.multimatch",
    "More than one DestinationRules for the same host subset combination",
    Warning,
);
/// DestinationRule host with no workload, Service or ServiceEntry.
pub const DR_NO_WORKLOAD: Rule =
    rule("destinationrules.nodest.matchingworkload", "This host has no matching workloads", Error);
/// DestinationRule subset whose labels match no workload of the host.
pub const DR_SUBSET_LABELS: Rule = rule(
    "destinationrules.nodest.subsetlabels",
    "This subset's labels are not found from any matching host",
    Error,
);
/// Gateways sharing a port and host, across namespaces.
pub const GW_MULTI_MATCH: Rule = rule(
    "gateways.multimatch",
    "More than one Gateway for the same host port combination",
    Warning,
);
/// VirtualService naming a Gateway that does not exist.
pub const VS_NO_GATEWAY: Rule = rule(
    "virtualservices.nogateway",
    "VirtualService is pointing to a non-existent gateway",
    Error,
);
/// Route destination host that is no Service nor ServiceEntry host.
pub const VS_HOST_NOT_FOUND: Rule = rule(
    "virtualservices.nohost.hostnotfound",
    "DestinationWeight on route doesn't have a valid service (host not found)",
    Error,
);
/// VirtualService without http, tcp or tls routes.
pub const VS_INVALID_PROTOCOL: Rule = rule(
    "virtualservices.nohost.invalidprotocol",
    "VirtualService doesn't define any valid route protocol",
    Error,
);
/// Weight that is not an integer.
pub const VS_NUMERIC_WEIGHT: Rule =
    rule("virtualservices.route.numericweight", "Weight must be a number", Error);
/// Weight outside 0..=100.
pub const VS_WEIGHT_RANGE: Rule =
    rule("virtualservices.route.weightrange", "Weight should be between 0 and 100", Error);
/// Weights of one route not summing to 100.
pub const VS_WEIGHT_SUM: Rule =
    rule("virtualservices.route.weightsum", "Weight sum should be 100", Error);
/// Some destinations of a weighted route without weight.
pub const VS_ALL_WEIGHTS: Rule =
    rule("virtualservices.route.allweightspresent", "All routes should have weight", Warning);
/// Several VirtualServices (without gateways) for one host.
pub const VS_SINGLE_HOST: Rule =
    rule("virtualservices.singlehost", "More than one Virtual Service for same host", Warning);
/// Route entry without `destination`.
pub const VS_DESTINATION_MANDATORY: Rule = rule(
    "virtualservices.subsetpresent.destinationmandatory",
    "Destination field is mandatory",
    Error,
);
/// Route destination subset defined by no DestinationRule.
pub const VS_SUBSET_NOT_FOUND: Rule =
    rule("virtualservices.subsetpresent.subsetnotfound", "Subset not found", Warning);

/// KIA0004: a selector (`spec/selector/matchLabels`, a Sidecar's
/// `spec/workloadSelector/labels`) matches no workload of the object's namespace.
pub const SELECTOR_NO_WORKLOAD: Rule = kia(
    "KIA0004",
    "generic.selector.workloadnotfound",
    "No matching workload found for the selector in this namespace",
    Warning,
);
/// KIA0002: more than one selector-less PeerAuthentication (or Sidecar) in a namespace.
pub const MULTI_SELECTORLESS: Rule = kia(
    "KIA0002",
    "generic.multimatch.selectorless",
    "More than one selector-less object in the same namespace",
    Error,
);
/// KIA0003: more than one PeerAuthentication selecting the same workload.
pub const MULTI_SELECTOR: Rule = kia(
    "KIA0003",
    "generic.multimatch.selector",
    "More than one object applied to the same workload",
    Error,
);
/// KIA0101: an AuthorizationPolicy source namespace that does not exist.
pub const AP_NAMESPACE_NOT_FOUND: Rule = kia(
    "KIA0101",
    "authorizationpolicy.source.namespacenotfound",
    "Namespace not found for this rule",
    Warning,
);
/// KIA0104: an AuthorizationPolicy operation host that names no Service, ServiceEntry or
/// VirtualService host.
pub const AP_HOST_NOT_FOUND: Rule = kia(
    "KIA0104",
    "authorizationpolicy.nodest.matchingregistry",
    "This host has no matching entry in the service registry",
    Error,
);
/// KIA0505: namespace-wide mTLS DISABLE while a DestinationRule enables it.
pub const PA_DISABLE_DR_MISSING: Rule = kia(
    "KIA0505",
    "peerauthentications.mtls.disabledestinationrulemissing",
    "Destination Rule disabling namespace-wide mTLS is missing",
    Error,
);
/// KIA1004: a Sidecar egress host that names no Service or ServiceEntry host.
pub const SIDECAR_EGRESS_NOT_FOUND: Rule = kia(
    "KIA1004",
    "sidecar.egress.servicenotfound",
    "This host has no matching entry in the service registry",
    Warning,
);
/// KIA1401: a route's parent Gateway is missing or does not admit the route.
pub const ROUTE_NO_GATEWAY: Rule = kia(
    "KIA1401",
    "k8sroutes.nok8sgateway",
    "Route is pointing to a non-existent or inaccessible K8s gateway",
    Error,
);
/// KIA1402: a route's backend Service is missing or not granted.
pub const ROUTE_NO_SERVICE: Rule = kia(
    "KIA1402",
    "k8sroutes.nohost.namenotfound",
    "Reference doesn't have a valid service (Service name not found)",
    Error,
);
/// KIA1501: the same hostname, port and protocol on another Gateway API Gateway.
pub const K8SGW_MULTI_MATCH: Rule = kia(
    "KIA1501",
    "k8sgateways.multimatch.listener",
    "More than one K8s Gateway for the same host port combination",
    Warning,
);
/// KIA1503: listeners of one Gateway API Gateway sharing a name.
pub const K8SGW_UNIQUE_LISTENER: Rule = kia(
    "KIA1503",
    "k8sgateways.unique.listener",
    "Each listener must have a unique combination of Hostname, Port, and Protocol",
    Error,
);
/// KIA1601: a ReferenceGrant `from` namespace that does not exist.
pub const REFGRANT_NAMESPACE_NOT_FOUND: Rule = kia(
    "KIA1601",
    "k8sreferencegrants.from.namespacenotfound",
    "Namespace is not found or is not accessible",
    Error,
);

/// A reference (Service host, subset, Gateway) into a namespace the caller may not list:
/// the same answer whether or not the target exists there.
pub const UNVERIFIABLE: Rule = rule(
    "validation.unable.cross-namespace",
    "Unable to verify the validity: the reference points into a namespace you may not list",
    Info,
);

/// Every rule, for documentation and tests.
pub const ALL: [Rule; 27] = [
    DR_MULTI_MATCH,
    DR_NO_WORKLOAD,
    DR_SUBSET_LABELS,
    GW_MULTI_MATCH,
    VS_NO_GATEWAY,
    VS_HOST_NOT_FOUND,
    VS_INVALID_PROTOCOL,
    VS_NUMERIC_WEIGHT,
    VS_WEIGHT_RANGE,
    VS_WEIGHT_SUM,
    VS_ALL_WEIGHTS,
    VS_SINGLE_HOST,
    VS_DESTINATION_MANDATORY,
    VS_SUBSET_NOT_FOUND,
    SELECTOR_NO_WORKLOAD,
    MULTI_SELECTORLESS,
    MULTI_SELECTOR,
    AP_NAMESPACE_NOT_FOUND,
    AP_HOST_NOT_FOUND,
    PA_DISABLE_DR_MISSING,
    SIDECAR_EGRESS_NOT_FOUND,
    ROUTE_NO_GATEWAY,
    ROUTE_NO_SERVICE,
    K8SGW_MULTI_MATCH,
    K8SGW_UNIQUE_LISTENER,
    REFGRANT_NAMESPACE_NOT_FOUND,
    UNVERIFIABLE,
];
