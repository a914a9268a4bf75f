//! RBAC for the loopback Kubernetes API server (opt in with `Options::rbac`): one bearer
//! token bound to one ClusterRole, enforced as a real API server does. Requests without
//! that token get 401; resource requests the role does not allow get 403 with the API's
//! own `Forbidden` status. Discovery (`/api`, `/apis/...` without a resource) and
//! `/version` stay open, as the default `system:discovery` binding keeps them.
//!
//! [`deploy_role`] reads `deploy/kubernetes/clusterrole.yaml`, so tests run against the role
//! the manifests install.

use std::{collections::HashMap, sync::Mutex};

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use serde_json::json;
use warp::http::StatusCode;

use crate::kube_api::{RESOURCES, ResourceDef};

/// The service account the deploy manifests create (what 403 messages name).
pub const SUBJECT: &str = "system:serviceaccount:istio-system:meshlens";

/// Mixer's `config.istio.io` kinds, which the cluster source reads when a cluster serves them.
const MIXER: &[ResourceDef] = &[
    ResourceDef {
        group: "config.istio.io",
        versions: &["v1alpha2"],
        kind: "QuotaSpec",
        plural: "quotaspecs",
        namespaced: true,
    },
    ResourceDef {
        group: "config.istio.io",
        versions: &["v1alpha2"],
        kind: "QuotaSpecBinding",
        plural: "quotaspecbindings",
        namespaced: true,
    },
    ResourceDef {
        group: "config.istio.io",
        versions: &["v1alpha2"],
        kind: "rule",
        plural: "rules",
        namespaced: true,
    },
];

/// [`RESOURCES`] plus Mixer's kinds: a cluster with every kind meshlens can read.
pub fn with_mixer() -> &'static [ResourceDef] {
    static ALL: std::sync::OnceLock<Vec<ResourceDef>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| RESOURCES.iter().chain(MIXER).cloned().collect())
}

/// The ClusterRole of `deploy/kubernetes/clusterrole.yaml`.
pub fn deploy_role() -> ClusterRole {
    role_file("deploy/kubernetes/clusterrole.yaml")
}

/// The ClusterRole the `token-auth` component adds (`deploy/kubernetes/components/token-auth`).
pub fn token_auth_role() -> ClusterRole {
    role_file("deploy/kubernetes/components/token-auth/clusterrole.yaml")
}

fn role_file(relative: &str) -> ClusterRole {
    let path = crate::server::workspace_root().join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One role bound to one token.
#[derive(Debug)]
pub struct Rbac {
    token: String,
    rules: Mutex<Vec<PolicyRule>>,
    denied: Mutex<Vec<String>>,
}

/// What a request asks for, in RBAC's terms.
struct Attributes<'a> {
    verb: &'static str,
    group: &'a str,
    resource: &'a str,
    name: Option<&'a str>,
}

fn allows(rule: &PolicyRule, a: &Attributes<'_>) -> bool {
    let has = |list: Option<&Vec<String>>, want: &str| {
        list.is_some_and(|l| l.iter().any(|x| x == "*" || x == want))
    };
    has(Some(&rule.verbs), a.verb)
        && has(rule.api_groups.as_ref(), a.group)
        && has(rule.resources.as_ref(), a.resource)
        && rule
            .resource_names
            .as_ref()
            .is_none_or(|n| n.is_empty() || a.name.is_some_and(|x| n.iter().any(|y| y == x)))
}

/// Splits a resource path; `None` for discovery and other non-resource paths.
fn attributes<'a>(
    method: &str,
    path: &'a str,
    q: &HashMap<String, String>,
) -> Option<Attributes<'a>> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    let (group, rest) = match segs.as_slice() {
        ["api", _, rest @ ..] if !rest.is_empty() => ("", rest),
        ["apis", g, _, rest @ ..] if !rest.is_empty() => (*g, rest),
        _ => return None,
    };
    let (resource, name) = match rest {
        ["namespaces", n] if group.is_empty() => ("namespaces", Some(*n)),
        ["namespaces", _, p] | [p] => (*p, None),
        ["namespaces", _, p, n, ..] | [p, n, ..] => (*p, Some(*n)),
        _ => return None,
    };
    let watch = q.get("watch").is_some_and(|w| w == "true" || w == "1");
    let verb = match (method, name) {
        ("GET", _) if watch => "watch",
        ("GET", Some(_)) => "get",
        ("GET", None) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", _) => "delete",
        _ => "unknown",
    };
    Some(Attributes { verb, group, resource, name })
}

fn status_reply(code: StatusCode, reason: &str, message: &str) -> warp::reply::Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16()});
    let mut r = warp::reply::Response::new(body.to_string().into());
    *r.status_mut() = code;
    r.headers_mut()
        .insert("content-type", warp::http::HeaderValue::from_static("application/json"));
    r
}

impl Rbac {
    /// `role` for requests that carry `Authorization: Bearer <token>`.
    pub fn new(role: &ClusterRole, token: &str) -> Rbac {
        Rbac {
            token: token.to_string(),
            rules: Mutex::new(role.rules.clone().unwrap_or_default()),
            denied: Mutex::new(Vec::new()),
        }
    }

    /// Replaces the role's rules (and forgets earlier refusals).
    pub fn set_rules(&self, rules: Vec<PolicyRule>) {
        self.rules.lock().map(|mut r| *r = rules).ok();
        self.denied.lock().map(|mut d| d.clear()).ok();
    }

    /// The answer for a request the role does not allow, or `None` to serve it.
    pub fn deny(
        &self,
        method: &str,
        path: &str,
        q: &HashMap<String, String>,
        authorization: Option<&str>,
    ) -> Option<warp::reply::Response> {
        if authorization.and_then(|a| a.strip_prefix("Bearer ")) != Some(self.token.as_str()) {
            return Some(status_reply(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized"));
        }
        let a = attributes(method, path, q)?;
        if self.rules.lock().is_ok_and(|rules| rules.iter().any(|r| allows(r, &a))) {
            return None;
        }
        let what = if a.group.is_empty() {
            a.resource.to_string()
        } else {
            format!("{}.{}", a.resource, a.group)
        };
        let message = format!(
            "{what} is forbidden: User \"{SUBJECT}\" cannot {} resource \"{}\" in API group \"{}\" at the cluster scope",
            a.verb, a.resource, a.group
        );
        self.denied.lock().map(|mut d| d.push(format!("{} {what}", a.verb))).ok();
        Some(status_reply(StatusCode::FORBIDDEN, "Forbidden", &message))
    }

    /// Every `verb resource[.group]` refused so far.
    pub fn denied(&self) -> Vec<String> {
        self.denied.lock().map(|d| d.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(rules: serde_json::Value) -> ClusterRole {
        serde_json::from_value(json!({"metadata": {"name": "r"}, "rules": rules})).unwrap()
    }

    #[test]
    fn verbs_groups_and_resources_must_all_match() {
        let rbac = Rbac::new(
            &role(json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}])),
            "t",
        );
        let q = HashMap::new();
        let watch: HashMap<String, String> = [("watch".to_string(), "true".to_string())].into();
        let auth = Some("Bearer t");
        assert!(rbac.deny("GET", "/api/v1/pods", &q, auth).is_none());
        assert!(rbac.deny("GET", "/api/v1/namespaces/a/pods", &q, auth).is_none());
        assert_eq!(
            rbac.deny("GET", "/api/v1/pods", &watch, auth).map(|r| r.status()),
            Some(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            rbac.deny("GET", "/api/v1/namespaces/a/pods/p", &q, auth).map(|r| r.status()),
            Some(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            rbac.deny("GET", "/apis/apps/v1/pods", &q, auth).map(|r| r.status()),
            Some(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            rbac.deny("GET", "/api/v1/services", &q, auth).map(|r| r.status()),
            Some(StatusCode::FORBIDDEN)
        );
        assert_eq!(
            rbac.deny("GET", "/api/v1/pods", &q, Some("Bearer other")).map(|r| r.status()),
            Some(StatusCode::UNAUTHORIZED)
        );
        // Discovery is open to every authenticated user.
        assert!(rbac.deny("GET", "/apis/apps/v1", &q, auth).is_none());
        assert!(rbac.deny("GET", "/version", &q, auth).is_none());
        assert_eq!(
            rbac.denied(),
            vec!["watch pods", "get pods", "list pods.apps", "list services"]
        );
    }

    #[test]
    fn the_deploy_roles_parse() {
        assert!(!deploy_role().rules.unwrap_or_default().is_empty());
        assert!(!token_auth_role().rules.unwrap_or_default().is_empty());
    }
}
