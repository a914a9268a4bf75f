//! Mesh config objects: kept as dynamic JSON, with typed accessors for the fields the
//! appenders and the validations read.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

/// A mesh (custom resource) kind the model reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MeshKind {
    /// networking.istio.io DestinationRule.
    DestinationRule,
    /// networking.istio.io Gateway.
    Gateway,
    /// config.istio.io QuotaSpecBinding.
    QuotaSpecBinding,
    /// config.istio.io QuotaSpec.
    QuotaSpec,
    /// config.istio.io rule.
    Rule,
    /// networking.istio.io ServiceEntry.
    ServiceEntry,
    /// networking.istio.io VirtualService.
    VirtualService,
    /// monitoring.kiali.io MonitoringDashboard.
    MonitoringDashboard,
    /// security.istio.io AuthorizationPolicy.
    AuthorizationPolicy,
    /// security.istio.io PeerAuthentication.
    PeerAuthentication,
    /// security.istio.io RequestAuthentication.
    RequestAuthentication,
    /// networking.istio.io Sidecar.
    Sidecar,
    /// gateway.networking.k8s.io Gateway (the Gateway API's, not Istio's).
    K8sGateway,
    /// gateway.networking.k8s.io HTTPRoute.
    K8sHTTPRoute,
    /// gateway.networking.k8s.io GRPCRoute.
    K8sGRPCRoute,
    /// gateway.networking.k8s.io ReferenceGrant.
    K8sReferenceGrant,
}

/// The kinds of the mesh config list, in the list's field order: the seed's seven, then
/// the security, Sidecar and Gateway API kinds (Kiali v2.0.0's `models/istio_config.go`).
pub const CONFIG_LIST_KINDS: [MeshKind; 15] = [
    MeshKind::DestinationRule,
    MeshKind::Gateway,
    MeshKind::QuotaSpecBinding,
    MeshKind::QuotaSpec,
    MeshKind::Rule,
    MeshKind::ServiceEntry,
    MeshKind::VirtualService,
    MeshKind::AuthorizationPolicy,
    MeshKind::PeerAuthentication,
    MeshKind::RequestAuthentication,
    MeshKind::Sidecar,
    MeshKind::K8sGateway,
    MeshKind::K8sHTTPRoute,
    MeshKind::K8sGRPCRoute,
    MeshKind::K8sReferenceGrant,
];

/// The kinds added after the seed: a cluster without their CRDs gets a `/status` note.
pub const TODAYS_KINDS: [MeshKind; 8] = [
    MeshKind::AuthorizationPolicy,
    MeshKind::PeerAuthentication,
    MeshKind::RequestAuthentication,
    MeshKind::Sidecar,
    MeshKind::K8sGateway,
    MeshKind::K8sHTTPRoute,
    MeshKind::K8sGRPCRoute,
    MeshKind::K8sReferenceGrant,
];

/// Every mesh kind.
pub const ALL_MESH_KINDS: [MeshKind; 16] = [
    MeshKind::DestinationRule,
    MeshKind::Gateway,
    MeshKind::QuotaSpecBinding,
    MeshKind::QuotaSpec,
    MeshKind::Rule,
    MeshKind::ServiceEntry,
    MeshKind::VirtualService,
    MeshKind::MonitoringDashboard,
    MeshKind::AuthorizationPolicy,
    MeshKind::PeerAuthentication,
    MeshKind::RequestAuthentication,
    MeshKind::Sidecar,
    MeshKind::K8sGateway,
    MeshKind::K8sHTTPRoute,
    MeshKind::K8sGRPCRoute,
    MeshKind::K8sReferenceGrant,
];

impl MeshKind {
    /// The API group.
    pub fn group(self) -> &'static str {
        match self {
            MeshKind::DestinationRule
            | MeshKind::Gateway
            | MeshKind::ServiceEntry
            | MeshKind::VirtualService
            | MeshKind::Sidecar => "networking.istio.io",
            MeshKind::QuotaSpecBinding | MeshKind::QuotaSpec | MeshKind::Rule => "config.istio.io",
            MeshKind::MonitoringDashboard => "monitoring.kiali.io",
            MeshKind::AuthorizationPolicy
            | MeshKind::PeerAuthentication
            | MeshKind::RequestAuthentication => "security.istio.io",
            MeshKind::K8sGateway
            | MeshKind::K8sHTTPRoute
            | MeshKind::K8sGRPCRoute
            | MeshKind::K8sReferenceGrant => "gateway.networking.k8s.io",
        }
    }
    /// API versions to look for, preferred first (the "read at" version first for
    /// the kinds added after the seed; older served versions still work).
    pub fn versions(self) -> &'static [&'static str] {
        match self {
            MeshKind::K8sReferenceGrant => &["v1beta1", "v1alpha2"],
            MeshKind::K8sGRPCRoute => &["v1", "v1alpha2"],
            MeshKind::K8sGateway | MeshKind::K8sHTTPRoute => &["v1", "v1beta1"],
            MeshKind::Sidecar => &["v1", "v1beta1", "v1alpha3"],
            _ => match self.group() {
                "networking.istio.io" => &["v1beta1", "v1alpha3", "v1"],
                "security.istio.io" => &["v1", "v1beta1"],
                "config.istio.io" => &["v1alpha2"],
                _ => &["v1alpha1"],
            },
        }
    }
    /// The kind as written in manifests (Mixer's `rule` is lowercase).
    pub fn kind(self) -> &'static str {
        match self {
            MeshKind::DestinationRule => "DestinationRule",
            MeshKind::Gateway => "Gateway",
            MeshKind::QuotaSpecBinding => "QuotaSpecBinding",
            MeshKind::QuotaSpec => "QuotaSpec",
            MeshKind::Rule => "rule",
            MeshKind::ServiceEntry => "ServiceEntry",
            MeshKind::VirtualService => "VirtualService",
            MeshKind::MonitoringDashboard => "MonitoringDashboard",
            MeshKind::AuthorizationPolicy => "AuthorizationPolicy",
            MeshKind::PeerAuthentication => "PeerAuthentication",
            MeshKind::RequestAuthentication => "RequestAuthentication",
            MeshKind::Sidecar => "Sidecar",
            MeshKind::K8sGateway => "Gateway",
            MeshKind::K8sHTTPRoute => "HTTPRoute",
            MeshKind::K8sGRPCRoute => "GRPCRoute",
            MeshKind::K8sReferenceGrant => "ReferenceGrant",
        }
    }
    /// The kind as `/status`, self-metrics and logs name it: [`MeshKind::kind`], with the
    /// group for the Gateway API's Gateway (whose kind is Istio's Gateway's too).
    pub fn display_name(self) -> &'static str {
        match self {
            MeshKind::K8sGateway => "Gateway.gateway.networking.k8s.io",
            k => k.kind(),
        }
    }
    /// The Kubernetes resource name (`httproutes`), as discovery and RBAC name it.
    pub fn resource(self) -> &'static str {
        match self {
            MeshKind::K8sGateway => "gateways",
            MeshKind::K8sHTTPRoute => "httproutes",
            MeshKind::K8sGRPCRoute => "grpcroutes",
            MeshKind::K8sReferenceGrant => "referencegrants",
            k => k.plural(),
        }
    }
    /// The plural name of meshlens's API (the `objects` query value, the URL type of
    /// validations): the resource name, `k8s`-prefixed for the Gateway API (Kiali's
    /// `kubernetes/types.go`).
    pub fn plural(self) -> &'static str {
        match self {
            MeshKind::DestinationRule => "destinationrules",
            MeshKind::Gateway => "gateways",
            MeshKind::QuotaSpecBinding => "quotaspecbindings",
            MeshKind::QuotaSpec => "quotaspecs",
            MeshKind::Rule => "rules",
            MeshKind::ServiceEntry => "serviceentries",
            MeshKind::VirtualService => "virtualservices",
            MeshKind::MonitoringDashboard => "monitoringdashboards",
            MeshKind::AuthorizationPolicy => "authorizationpolicies",
            MeshKind::PeerAuthentication => "peerauthentications",
            MeshKind::RequestAuthentication => "requestauthentications",
            MeshKind::Sidecar => "sidecars",
            MeshKind::K8sGateway => "k8sgateways",
            MeshKind::K8sHTTPRoute => "k8shttproutes",
            MeshKind::K8sGRPCRoute => "k8sgrpcroutes",
            MeshKind::K8sReferenceGrant => "k8sreferencegrants",
        }
    }
    /// The singular lowercase type name used by validations (`virtualservice`, ...).
    pub fn object_type(self) -> &'static str {
        match self {
            MeshKind::Rule => "rule",
            MeshKind::AuthorizationPolicy => "authorizationpolicy",
            other => match other.plural() {
                "serviceentries" => "serviceentry",
                p => p.strip_suffix('s').unwrap_or(p),
            },
        }
    }
    /// The kind for a manifest's `apiVersion` group and `kind` (case-insensitive kind).
    pub fn from_group_kind(group: &str, kind: &str) -> Option<MeshKind> {
        ALL_MESH_KINDS
            .into_iter()
            .find(|k| k.group() == group && k.kind().eq_ignore_ascii_case(kind))
    }
    /// The kind for a plural name (`virtualservices`).
    pub fn from_plural(plural: &str) -> Option<MeshKind> {
        ALL_MESH_KINDS.into_iter().find(|k| k.plural() == plural)
    }
    /// The kind for the plugin contract's enum, if it is a mesh kind.
    pub fn from_cluster_kind(k: plugin_api::ClusterKind) -> Option<MeshKind> {
        use plugin_api::ClusterKind as C;
        match k {
            C::DestinationRules => Some(MeshKind::DestinationRule),
            C::VirtualServices => Some(MeshKind::VirtualService),
            C::ServiceEntries => Some(MeshKind::ServiceEntry),
            C::Gateways => Some(MeshKind::Gateway),
            C::MonitoringDashboards => Some(MeshKind::MonitoringDashboard),
            C::Workloads | C::Services | C::Routes => None,
        }
    }
}

/// One mesh config object.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshObject {
    /// Its kind.
    pub kind: MeshKind,
    /// Its metadata (managedFields removed).
    pub metadata: ObjectMeta,
    /// Its `spec` (`{}` when absent).
    pub spec: Value,
}

impl MeshObject {
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or("")
    }
    /// `metadata.namespace`.
    pub fn namespace(&self) -> &str {
        self.metadata.namespace.as_deref().unwrap_or("")
    }
    /// The typed view of the spec.
    pub fn view(&self) -> MeshSpec<'_> {
        MeshSpec(&self.spec)
    }
    /// `{metadata, spec}`, the JSON shape of the config list.
    pub fn to_json(&self) -> Value {
        serde_json::json!({ "metadata": self.metadata, "spec": self.spec })
    }
}

/// A destination of a route (`route[].destination` plus its weight).
#[derive(Clone, Debug, PartialEq)]
pub struct RouteDestination {
    /// `destination.host`.
    pub host: String,
    /// `destination.subset`.
    pub subset: Option<String>,
    /// `destination.port.number`.
    pub port: Option<u32>,
    /// `weight`, when written.
    pub weight: Option<i64>,
}

/// One route of a VirtualService (`http[i]`, `tcp[i]` or `tls[i]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    /// `http`, `tcp` or `tls`.
    pub protocol: &'static str,
    /// Index within that list (for validation paths such as `spec/http[1]`).
    pub index: usize,
    /// Its destinations in order.
    pub destinations: Vec<RouteDestination>,
}

/// A DestinationRule subset.
#[derive(Clone, Debug, PartialEq)]
pub struct Subset<'a> {
    /// `name`.
    pub name: &'a str,
    /// `labels`.
    pub labels: BTreeMap<String, String>,
    /// `trafficPolicy`.
    pub traffic_policy: Option<&'a Value>,
}

/// A port of a ServiceEntry or a Gateway server.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshPort {
    /// `number`.
    pub number: Option<u32>,
    /// `name`.
    pub name: Option<String>,
    /// `protocol`.
    pub protocol: Option<String>,
}

/// Typed accessors over a mesh object's `spec` JSON; works on
/// `plugin_api::ConfigObject::spec()` as well.
#[derive(Clone, Copy, Debug)]
pub struct MeshSpec<'a>(pub &'a Value);

fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

fn string_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter().filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string()))).collect()
        })
        .unwrap_or_default()
}

fn port_number(v: Option<&Value>) -> Option<u32> {
    v.and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok())
}

impl<'a> MeshSpec<'a> {
    /// `hosts` (VirtualService, Gateway server hosts are under `servers`, ServiceEntry), or
    /// the single `host` of a DestinationRule.
    pub fn hosts(&self) -> Vec<String> {
        if let Some(h) = self.0.get("host").and_then(Value::as_str) {
            return vec![h.to_string()];
        }
        strings(self.0.get("hosts"))
    }
    /// `gateways` of a VirtualService.
    pub fn gateways(&self) -> Vec<String> {
        strings(self.0.get("gateways"))
    }
    /// The top-level `trafficPolicy` of a DestinationRule.
    pub fn traffic_policy(&self) -> Option<&'a Value> {
        self.0.get("trafficPolicy")
    }
    /// `subsets` of a DestinationRule.
    pub fn subsets(&self) -> Vec<Subset<'a>> {
        self.0
            .get("subsets")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|s| Subset {
                        name: s.get("name").and_then(Value::as_str).unwrap_or(""),
                        labels: string_map(s.get("labels")),
                        traffic_policy: s.get("trafficPolicy"),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
    /// Whether a traffic policy (top-level or a subset's) sets a circuit breaker
    /// (`connectionPool` or `outlierDetection`).
    pub fn policy_has_circuit_breaker(policy: Option<&Value>) -> bool {
        policy.is_some_and(|p| {
            p.get("connectionPool").is_some() || p.get("outlierDetection").is_some()
        })
    }
    /// Routes of a VirtualService: `http`, then `tcp`, then `tls`.
    pub fn routes(&self) -> Vec<Route> {
        let mut out = Vec::new();
        for protocol in ["http", "tcp", "tls"] {
            let Some(list) = self.0.get(protocol).and_then(Value::as_array) else { continue };
            for (index, r) in list.iter().enumerate() {
                let destinations = r
                    .get("route")
                    .and_then(Value::as_array)
                    .map(|ds| {
                        ds.iter()
                            .map(|d| {
                                let dest = d.get("destination");
                                RouteDestination {
                                    host: dest
                                        .and_then(|x| x.get("host"))
                                        .and_then(Value::as_str)
                                        .unwrap_or("")
                                        .to_string(),
                                    subset: dest
                                        .and_then(|x| x.get("subset"))
                                        .and_then(Value::as_str)
                                        .map(str::to_string),
                                    port: port_number(
                                        dest.and_then(|x| x.get("port"))
                                            .and_then(|p| p.get("number")),
                                    ),
                                    weight: d.get("weight").and_then(Value::as_i64),
                                }
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                out.push(Route { protocol, index, destinations });
            }
        }
        out
    }
    /// `ports` of a ServiceEntry, or the ports of every server of a Gateway.
    pub fn ports(&self) -> Vec<MeshPort> {
        let one = |p: &Value| MeshPort {
            number: port_number(p.get("number")),
            name: p.get("name").and_then(Value::as_str).map(str::to_string),
            protocol: p.get("protocol").and_then(Value::as_str).map(str::to_string),
        };
        if let Some(servers) = self.0.get("servers").and_then(Value::as_array) {
            return servers.iter().filter_map(|s| s.get("port")).map(one).collect();
        }
        self.0
            .get("ports")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(one).collect())
            .unwrap_or_default()
    }
    /// Hosts of every server of a Gateway.
    pub fn server_hosts(&self) -> Vec<String> {
        self.0
            .get("servers")
            .and_then(Value::as_array)
            .map(|a| a.iter().flat_map(|s| strings(s.get("hosts"))).collect())
            .unwrap_or_default()
    }
    /// `selector` of a Gateway.
    pub fn selector(&self) -> BTreeMap<String, String> {
        string_map(self.0.get("selector"))
    }
    /// `location` of a ServiceEntry (`MESH_EXTERNAL`, `MESH_INTERNAL`).
    pub fn location(&self) -> Option<&'a str> {
        self.0.get("location").and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn virtual_service_routes_and_weights() {
        let spec = json!({"hosts": ["reviews"], "http": [{"route": [
            {"destination": {"host": "reviews", "subset": "v1"}, "weight": 50},
            {"destination": {"host": "reviews", "subset": "v2", "port": {"number": 9080}}, "weight": 50}]}],
            "tcp": [{"route": [{"destination": {"host": "mongodb"}}]}]});
        let v = MeshSpec(&spec);
        assert_eq!(v.hosts(), vec!["reviews"]);
        let routes = v.routes();
        assert_eq!(routes.len(), 2);
        assert_eq!(routes[0].destinations[1].port, Some(9080));
        assert_eq!(routes[0].destinations.iter().filter_map(|d| d.weight).sum::<i64>(), 100);
        assert_eq!(routes[1].protocol, "tcp");
        assert_eq!(routes[1].destinations[0].weight, None);
    }

    #[test]
    fn destination_rule_subsets_and_breakers() {
        let spec = json!({"host": "ratings", "trafficPolicy": {"outlierDetection": {}},
            "subsets": [{"name": "v1", "labels": {"version": "v1"}}, {"name": "v2", "labels": {"version": "v2"},
            "trafficPolicy": {"tls": {}}}]});
        let v = MeshSpec(&spec);
        assert_eq!(v.hosts(), vec!["ratings"]);
        assert!(MeshSpec::policy_has_circuit_breaker(v.traffic_policy()));
        let subsets = v.subsets();
        assert_eq!(subsets[1].labels.get("version").map(String::as_str), Some("v2"));
        assert!(!MeshSpec::policy_has_circuit_breaker(subsets[1].traffic_policy));
    }

    #[test]
    fn kinds_round_trip() {
        for k in ALL_MESH_KINDS {
            assert_eq!(MeshKind::from_plural(k.plural()), Some(k));
            assert_eq!(MeshKind::from_group_kind(k.group(), k.kind()), Some(k));
        }
        assert_eq!(MeshKind::ServiceEntry.object_type(), "serviceentry");
        assert_eq!(MeshKind::VirtualService.object_type(), "virtualservice");
        assert_eq!(MeshKind::from_group_kind("config.istio.io", "Rule"), Some(MeshKind::Rule));
        assert_eq!(MeshKind::AuthorizationPolicy.object_type(), "authorizationpolicy");
        assert_eq!(MeshKind::K8sHTTPRoute.object_type(), "k8shttproute");
        assert_eq!(MeshKind::K8sReferenceGrant.resource(), "referencegrants");
        // Two kinds named Gateway: the group tells them apart.
        assert_eq!(
            MeshKind::from_group_kind("gateway.networking.k8s.io", "Gateway"),
            Some(MeshKind::K8sGateway)
        );
        assert_eq!(
            MeshKind::from_group_kind("networking.istio.io", "Gateway"),
            Some(MeshKind::Gateway)
        );
    }
}
