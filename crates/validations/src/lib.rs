//! Mesh config validations.
//!
//! The host gathers a [`ValidationInput`] (mesh objects, Services, workloads, the Gateways
//! of all namespaces, the identity domain) and calls one of [`validate_namespace`],
//! [`validate_object`] or [`validate_service`]. Each evaluation indexes its input once
//! (by host, by name, by app), so its cost grows linearly with the number of objects.
//!
//! Every object of the namespace gets a [`Validation`]: `valid` is false only when an
//! error-severity check fires, `checks` is `[]` when none does. The checks, with their
//! keys, messages and severities, are listed in [`catalog`].

#![forbid(unsafe_code)]

pub mod catalog;
mod checkers;
mod index;
mod model;
mod spec;

use std::collections::BTreeSet;

use plugin_api::mesh::{host_matches_service, parse_host};
use serde_json::Value;

pub use model::{
    Check, MeshObject, NamespaceInfo, NamespaceValidations, ObjectKind, ServiceInfo, Severity,
    TypedMeshValidations, Validation, ValidationInput, WorkloadInfo,
};

use checkers::Evaluation;
use index::Index;
use spec::{arr, route_destinations, str_at};

/// Why a validation request cannot be answered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ValidationError {
    /// The object type is not one of the known plural names.
    #[error("Object type not managed: {given}. Known types: {}", known.join(", "))]
    UnknownType {
        /// The type asked for.
        given: String,
        /// Every known plural type name.
        known: Vec<&'static str>,
    },
    /// The object or Service does not exist; names what was looked for (`virtualservice`,
    /// `service`), not its name, so the message never echoes request text.
    #[error("{0} not found")]
    NotFound(&'static str),
}

/// Validations of every config object of namespace `ns`: `{ns: {objectType: {name: v}}}`.
pub fn validate_namespace(ns: &str, input: &ValidationInput) -> NamespaceValidations {
    let index = Index::new(input);
    let mut out = NamespaceValidations::new();
    out.insert(ns.to_string(), Evaluation::run(ns, &index, None));
    out
}

/// Validations of one object, `plural_type` being its URL type (`virtualservices`).
pub fn validate_object(
    ns: &str,
    plural_type: &str,
    name: &str,
    input: &ValidationInput,
) -> Result<TypedMeshValidations, ValidationError> {
    let kind =
        ObjectKind::from_plural(plural_type).ok_or_else(|| ValidationError::UnknownType {
            given: plural_type.to_string(),
            known: ObjectKind::known_plurals(),
        })?;
    let index = Index::new(input);
    if !index.objects(kind, ns).iter().any(|o| o.name == name) {
        return Err(ValidationError::NotFound(kind.singular()));
    }
    Ok(Evaluation::run(ns, &index, Some((kind, name))))
}

/// Validations of the config objects of namespace `ns` that refer to Service `service`:
/// DestinationRules for its host, VirtualServices that serve it or route to it.
pub fn validate_service(
    ns: &str,
    service: &str,
    input: &ValidationInput,
) -> Result<TypedMeshValidations, ValidationError> {
    let index = Index::new(input);
    if index.service(ns, service).is_none() {
        return Err(ValidationError::NotFound("service"));
    }
    let domain = input.identity_domain.as_str();
    // A bare `*` host serves every service; it says nothing about this one in particular.
    let names = |host: &str, obj_ns: &str| {
        host != "*" && host_matches_service(host, obj_ns, service, ns, domain)
    };
    let refers = |o: &MeshObject| match o.kind {
        ObjectKind::DestinationRule => {
            str_at(&o.spec, "host").is_some_and(|h| names(h, &o.namespace))
        }
        ObjectKind::VirtualService => {
            arr(&o.spec, "hosts").iter().filter_map(Value::as_str).any(|h| names(h, &o.namespace))
                || route_destinations(&o.spec).any(|rd| {
                    rd.entry
                        .get("destination")
                        .and_then(|d| str_at(d, "host"))
                        .is_some_and(|h| names(h, &o.namespace))
                })
        }
        _ => false,
    };
    let mut all = Evaluation::run(ns, &index, None);
    for kind in [ObjectKind::DestinationRule, ObjectKind::VirtualService] {
        let keep: std::collections::HashSet<&str> =
            index.objects(kind, ns).iter().filter(|o| refers(o)).map(|o| o.name.as_str()).collect();
        if let Some(by_name) = all.get_mut(kind.singular()) {
            by_name.retain(|name, _| keep.contains(name.as_str()));
        }
    }
    all.retain(|kind, by_name| {
        !by_name.is_empty()
            && (kind == ObjectKind::DestinationRule.singular()
                || kind == ObjectKind::VirtualService.singular())
    });
    Ok(all)
}

/// The namespaces whose Services, workloads and DestinationRules the objects of `ns` may
/// refer to: `ns` itself and the namespaces named by DestinationRule hosts, route
/// destination hosts, AuthorizationPolicy operation hosts, Sidecar egress hosts and
/// Gateway API backendRefs. The host loads only these, so one request does not copy the whole
/// cluster.
pub fn referenced_namespaces(
    ns: &str,
    objects: &[MeshObject],
    identity_domain: &str,
) -> BTreeSet<String> {
    let mut out = BTreeSet::from([ns.to_string()]);
    let mut backend_ns: Vec<&str> = Vec::new();
    let mut add = |host: &str, obj_ns: &str| {
        let p = parse_host(host, obj_ns, identity_domain);
        if p.internal && p.namespace != "*" {
            out.insert(p.namespace);
        }
    };
    for o in objects.iter().filter(|o| o.namespace == ns) {
        match o.kind {
            ObjectKind::DestinationRule => {
                if let Some(h) = str_at(&o.spec, "host") {
                    add(h, &o.namespace);
                }
            }
            ObjectKind::VirtualService => {
                for rd in route_destinations(&o.spec) {
                    if let Some(h) = rd.entry.get("destination").and_then(|d| str_at(d, "host")) {
                        add(h, &o.namespace);
                    }
                }
            }
            ObjectKind::AuthorizationPolicy => {
                let ops = arr(&o.spec, "rules")
                    .iter()
                    .flat_map(|r| arr(r, "to"))
                    .filter_map(|t| t.get("operation"));
                for h in ops.flat_map(|op| arr(op, "hosts")).filter_map(Value::as_str) {
                    add(h, &o.namespace);
                }
            }
            ObjectKind::Sidecar => {
                let hosts = arr(&o.spec, "egress").iter().flat_map(|e| arr(e, "hosts"));
                for h in hosts.filter_map(Value::as_str).filter_map(|h| h.split_once('/')) {
                    add(h.1, &o.namespace);
                }
            }
            ObjectKind::K8sHTTPRoute | ObjectKind::K8sGRPCRoute => {
                let backends = arr(&o.spec, "rules").iter().flat_map(|r| arr(r, "backendRefs"));
                backend_ns.extend(backends.filter_map(|b| str_at(b, "namespace")));
            }
            _ => {}
        }
    }
    out.extend(backend_ns.into_iter().filter(|n| !n.is_empty()).map(str::to_string));
    out
}

/// The namespaces of the Gateways that the VirtualServices of `ns` name (`ns/name`,
/// `name.ns`, or `ns` itself for a bare name; `mesh` names none). With
/// [`referenced_namespaces`] and the namespaces holding Gateways, these are the
/// namespaces whose visibility to the caller decides [`ValidationInput::hidden_namespaces`].
pub fn gateway_namespaces(ns: &str, objects: &[MeshObject]) -> BTreeSet<String> {
    objects
        .iter()
        .filter(|o| o.namespace == ns && o.kind == ObjectKind::VirtualService)
        .flat_map(|o| arr(&o.spec, "gateways").iter().filter_map(Value::as_str))
        .filter(|g| *g != "mesh")
        .map(|g| checkers::virtual_service::gateway_ref(g, ns).0.to_string())
        .collect()
}
