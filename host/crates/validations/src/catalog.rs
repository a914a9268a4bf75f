//! The checks: key, message and severity of each (Kiali's v0.14 keys and texts, so
//! clients written against them keep working).

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
}

impl Rule {
    /// A finding of this rule at `path`.
    pub fn at(&self, path: impl Into<String>) -> Check {
        Check {
            message: self.message.to_string(),
            severity: self.severity,
            path: path.into(),
            key: self.key,
        }
    }
}

const fn rule(key: &'static str, message: &'static str, severity: Severity) -> Rule {
    Rule { key, message, severity }
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

/// A reference (Service host, subset, Gateway) into a namespace the caller may not list:
/// the same answer whether or not the target exists there.
pub const UNVERIFIABLE: Rule = rule(
    "validation.unable.cross-namespace",
    "Unable to verify the validity: the reference points into a namespace you may not list",
    Info,
);

/// Every rule, for documentation and tests.
pub const ALL: [Rule; 15] = [
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
    UNVERIFIABLE,
];
