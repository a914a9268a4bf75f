//! Host-name rules of the mesh, shared by the host's validations and by appenders.

/// A mesh host reduced to (service, namespace); `*` stands for any.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParsedHost {
    /// Service name, or `*`.
    pub service: String,
    /// Namespace, or `*`.
    pub namespace: String,
    /// False for hosts outside the cluster's domain (e.g. `www.example.com`).
    pub internal: bool,
}

/// Parses a host written in an object of namespace `object_ns`.
///
/// `reviews` → reviews/object_ns; `reviews.ns2` → reviews/ns2; `reviews.ns2.svc` and
/// `reviews.ns2.<domain>` → reviews/ns2; `*` → */*; `*.ns2.svc.<...>` → */ns2; anything else
/// is an external host.
pub fn parse_host(host: &str, object_ns: &str, identity_domain: &str) -> ParsedHost {
    let host = host.trim();
    if host == "*" {
        return ParsedHost { service: "*".into(), namespace: "*".into(), internal: true };
    }
    let parts: Vec<&str> = host.split('.').collect();
    let internal = |svc: &str, ns: &str| ParsedHost {
        service: svc.into(),
        namespace: ns.into(),
        internal: true,
    };
    match parts.as_slice() {
        [svc] => internal(svc, object_ns),
        [svc, ns] => internal(svc, ns),
        [svc, ns, "svc"] => internal(svc, ns),
        [svc, ns, rest @ ..] if rest.join(".") == identity_domain => internal(svc, ns),
        _ => ParsedHost { service: host.into(), namespace: String::new(), internal: false },
    }
}

/// Whether `host`, written in an object of namespace `object_ns`, names the Service
/// `service` of namespace `service_ns` (short name, name.namespace, name.namespace.svc,
/// the FQDN with `identity_domain`, or `*` wildcards).
pub fn host_matches_service(
    host: &str,
    object_ns: &str,
    service: &str,
    service_ns: &str,
    identity_domain: &str,
) -> bool {
    let host = host.trim();
    if let Some(suffix) = host.strip_prefix("*.") {
        let fqdn = format!("{service}.{service_ns}.{identity_domain}");
        return fqdn.ends_with(&format!(".{suffix}"));
    }
    let p = parse_host(host, object_ns, identity_domain);
    p.internal
        && (p.service == "*" || p.service == service)
        && (p.namespace == "*" || p.namespace == service_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "svc.cluster.local";

    #[test]
    fn host_forms_match_their_service() {
        for h in [
            "reviews",
            "reviews.bookinfo",
            "reviews.bookinfo.svc",
            "reviews.bookinfo.svc.cluster.local",
            "*",
            "*.bookinfo.svc.cluster.local",
            "*.cluster.local",
        ] {
            assert!(host_matches_service(h, "bookinfo", "reviews", "bookinfo", D), "{h}");
        }
    }

    #[test]
    fn other_names_and_namespaces_do_not_match() {
        assert!(!host_matches_service("reviews", "other", "reviews", "bookinfo", D));
        assert!(!host_matches_service("ratings", "bookinfo", "reviews", "bookinfo", D));
        assert!(!host_matches_service(
            "reviews.other.svc.cluster.local",
            "bookinfo",
            "reviews",
            "bookinfo",
            D
        ));
        assert!(!host_matches_service("www.example.com", "bookinfo", "www", "bookinfo", D));
        assert!(!host_matches_service(
            "*.other.svc.cluster.local",
            "bookinfo",
            "reviews",
            "bookinfo",
            D
        ));
    }

    #[test]
    fn external_hosts_are_not_internal() {
        let p = parse_host("api.example.com", "ns", D);
        assert!(!p.internal);
        assert_eq!(p.service, "api.example.com");
    }
}
