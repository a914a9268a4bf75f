//! meshlens as `deploy/kubernetes/` runs it: the ConfigMap's config (only the URLs and the
//! plugin folder replaced), the Secret's values in the Deployment's variables, in-cluster
//! Kubernetes access (service account token over HTTPS, no kubeconfig), and the loopback
//! API server enforcing the manifests' ClusterRole.
//!
//! - With that role every operation answers as meshlens on a snapshot of the same objects
//!   does, and `/status` warns of nothing.
//! - Removing any one resource, or any one verb, from the role breaks something a user
//!   sees: an answer, a `/status` warning, or a logged warning naming the refusal.
//! - Two replicas with the Secret's key accept each other's tokens.
//! - The Deployment's probe paths and scrape path answer, without credentials.
//! - With the `token-auth` component (its role added, its Deployment patch applied), a
//!   user's own token logs in and sees the namespaces RBAC gives them; without either of
//!   its rules, it does not.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use integration_tests::{
    fixtures::read_fixtures,
    in_cluster::InCluster,
    kube_api::{KubeApi, Options},
    kube_reviews::Reviews,
    prometheus::{PromServer, fixture},
    rbac::{Rbac, deploy_role, token_auth_role, with_mixer},
    server::{BUNDLED, Meshlens, basic_auth, plugin_dir, workspace_root},
};
use k8s_openapi::api::{
    apps::v1::Deployment,
    rbac::v1::{ClusterRole, PolicyRule},
};
use serde_json::{Value, json};

const TOKEN: &str = "service-account-token-of-meshlens";
const ARGS: &[&str] = &["--end", "1700000000", "--minutes", "30"];
/// What `openssl rand -hex 32` gives, as the README's install steps put in the Secret.
const SIGNING_KEY: &str = "5f0c6a3e9b1d4c7a8e2f6b0d3c9a7e1f4b8d2c6a0e3f7b9d1c5a8e2f6b0d4c7a";
const PASSWORD: &str = "4d9e2b7c1a6f3e8d";

/// Mixer's kinds, which the role covers for clusters that still serve them.
fn mixer_objects() -> Vec<Value> {
    // Complete metadata, as the API server would fill it in, so both sources show the same.
    let meta = |name: &str| {
        json!({"name": name, "namespace": "bookinfo", "resourceVersion": "900", "uid": format!("uid-mixer-{name}"),
               "creationTimestamp": "2026-01-01T00:00:00Z"})
    };
    vec![
        json!({"apiVersion": "config.istio.io/v1alpha2", "kind": "QuotaSpec", "metadata": meta("request-count"),
               "spec": {"rules": [{"quotas": [{"charge": 1, "quota": "requestcount"}]}]}}),
        json!({"apiVersion": "config.istio.io/v1alpha2", "kind": "QuotaSpecBinding", "metadata": meta("request-count"),
               "spec": {"quotaSpecs": [{"name": "request-count"}], "services": [{"name": "productpage"}]}}),
        json!({"apiVersion": "config.istio.io/v1alpha2", "kind": "rule", "metadata": meta("quota"),
               "spec": {"actions": [{"handler": "handler.memquota", "instances": ["requestcount.quota"]}]}}),
    ]
}

struct Cluster {
    api: KubeApi,
    rbac: Arc<Rbac>,
    pod: InCluster,
    prom: PromServer,
    /// The fixture files plus Mixer's objects, for the snapshot run.
    snapshot: Vec<std::path::PathBuf>,
    _mixer: tempfile::TempDir,
}

async fn cluster() -> Cluster {
    cluster_with(&deploy_role(), None).await
}

/// The cluster with the API server enforcing `role`, and answering reviews from `reviews`.
async fn cluster_with(role: &ClusterRole, reviews: Option<Arc<Reviews>>) -> Cluster {
    let root = workspace_root();
    let paths = vec![
        root.join("config/demo"),
        root.join("tests/fixtures/cluster"),
        root.join("tests/fixtures/config-kinds"),
    ];
    let mut objects = read_fixtures(&paths);
    objects.extend(mixer_objects());
    let rbac = Arc::new(Rbac::new(role, TOKEN));
    let opts = Options {
        resources: with_mixer(),
        rbac: Some(rbac.clone()),
        reviews,
        ..Default::default()
    };
    let api = KubeApi::start(objects, opts).await;
    let pod = InCluster::start(&api, TOKEN).await;
    let mixer = tempfile::tempdir().expect("temp dir");
    let file = mixer.path().join("mixer.json");
    std::fs::write(
        &file,
        json!({"apiVersion": "v1", "kind": "List", "items": mixer_objects()}).to_string(),
    )
    .expect("write");
    let mut snapshot = paths;
    snapshot.push(file);
    Cluster { api, rbac, pod, prom: PromServer::start(&fixture(ARGS)), snapshot, _mixer: mixer }
}

/// The ConfigMap's config with the Prometheus URL and the plugin folder replaced.
fn deploy_config(prom: &PromServer, plugins: &std::path::Path) -> String {
    let text = std::fs::read_to_string(workspace_root().join("deploy/kubernetes/meshlens.toml"))
        .expect("meshlens.toml");
    assert!(
        text.contains("\"http://prometheus.istio-system:9090\"")
            && text.contains("\"/usr/lib/meshlens/plugins\"")
    );
    text.replace("http://prometheus.istio-system:9090", &prom.url())
        .replace("/usr/lib/meshlens/plugins", &plugins.display().to_string())
}

impl Cluster {
    /// meshlens as the Deployment starts it, listening on 127.0.0.1:0 instead of 0.0.0.0:20001.
    fn replica(&self, signing_key: &str, extra_env: &[(&str, &str)]) -> Meshlens {
        let plugins = plugin_dir(BUNDLED);
        let cfg = deploy_config(&self.prom, plugins.path());
        let mut env: Vec<(String, String)> = self.pod.env();
        env.push(("MESHLENS_SERVER__ADDRESS".into(), "127.0.0.1".into()));
        env.push(("MESHLENS_SERVER__PORT".into(), "0".into()));
        // The probe port too: two replicas run side by side here.
        env.push(("MESHLENS_SERVER__METRICS__PORT".into(), "0".into()));
        env.push(("MESHLENS_AUTH__SIGNING_KEY".into(), signing_key.into()));
        env.push(("MESHLENS_AUTH__PASSWORD".into(), PASSWORD.into()));
        env.extend(extra_env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Meshlens::start(&cfg, &env, vec![plugins])
            .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"))
    }

    /// The same config on a snapshot of the same objects: what every answer should be.
    fn snapshot_replica(&self) -> Meshlens {
        let plugins = plugin_dir(BUNDLED);
        let list: Vec<String> =
            self.snapshot.iter().map(|p| format!("{:?}", p.display().to_string())).collect();
        let cfg = deploy_config(&self.prom, plugins.path()).replace(
            "source = \"kube\"",
            &format!("source = \"snapshot\"\nsnapshot = [{}]", list.join(", ")),
        );
        let env = [
            ("MESHLENS_SERVER__ADDRESS", "127.0.0.1"),
            ("MESHLENS_SERVER__PORT", "0"),
            ("MESHLENS_SERVER__METRICS__PORT", "0"),
            ("MESHLENS_AUTH__SIGNING_KEY", SIGNING_KEY),
            ("MESHLENS_AUTH__PASSWORD", PASSWORD),
        ];
        Meshlens::start(&cfg, &env, vec![plugins])
            .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"))
    }
}

fn get(m: &Meshlens, path: &str) -> (u16, Value) {
    let r = m.get_with(path, &[("Authorization", &basic_auth("admin", PASSWORD))]);
    let body = serde_json::from_slice(&r.body).unwrap_or_else(|_| json!(r.text()));
    (r.status, body)
}

fn names(v: &Value, list: &str, field: &str) -> Vec<String> {
    v[list]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x[field].as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Every operation that reads the cluster, for every namespace, app, workload and service
/// the reference run knows, plus a namespace that does not exist.
fn operations(reference: &Meshlens) -> Vec<String> {
    let (_, nss) = get(reference, "/api/namespaces");
    let mut ns: Vec<String> = nss
        .as_array()
        .expect("namespace list")
        .iter()
        .filter_map(|n| n["name"].as_str().map(str::to_string))
        .collect();
    let graph_ns = ns.join(",");
    ns.push("missing".into());
    let end = fixture(ARGS).end();
    let mut out = vec!["/api/namespaces".to_string()];
    for g in ["versionedApp", "workload", "service"] {
        out.push(format!("/api/namespaces/graph?namespaces={graph_ns}&graphType={g}&queryTime={end}&duration=600s"));
    }
    for n in &ns {
        for op in ["apps", "workloads", "mesh", "mesh_validations", "health"] {
            out.push(format!("/api/namespaces/{n}/{op}"));
        }
        let (_, apps) = get(reference, &format!("/api/namespaces/{n}/apps"));
        for a in names(&apps, "applications", "name") {
            out.push(format!("/api/namespaces/{n}/apps/{a}"));
            out.push(format!("/api/namespaces/{n}/apps/{a}/health"));
            out.push(format!(
                "/api/namespaces/{n}/applications/{a}/graph?queryTime={end}&duration=600s"
            ));
            let (_, details) = get(reference, &format!("/api/namespaces/{n}/apps/{a}"));
            for s in
                details["serviceNames"].as_array().into_iter().flatten().filter_map(Value::as_str)
            {
                out.push(format!("/api/namespaces/{n}/services/{s}/health"));
                out.push(format!("/api/namespaces/{n}/services/{s}/mesh_validations"));
            }
        }
        let (_, wls) = get(reference, &format!("/api/namespaces/{n}/workloads"));
        for w in names(&wls, "workloads", "name") {
            out.push(format!("/api/namespaces/{n}/workloads/{w}"));
            out.push(format!("/api/namespaces/{n}/workloads/{w}/health"));
        }
    }
    out
}

/// The first operation whose answer differs from `want`, if any.
fn first_difference(m: &Meshlens, want: &BTreeMap<String, (u16, Value)>) -> Option<String> {
    want.iter().find_map(|(path, expected)| {
        let got = get(m, path);
        (&got != expected).then(|| {
            format!("{path}: {} {}", got.0, got.1.to_string().chars().take(300).collect::<String>())
        })
    })
}

fn warnings(m: &Meshlens) -> Vec<String> {
    let (status, body) = get(m, "/api/status");
    assert_eq!(status, 200);
    body["warningMessages"]
        .as_array()
        .expect("warningMessages")
        .iter()
        .map(|w| w.to_string())
        .collect()
}

/// Waits (bounded) until the API server has refused something meshlens asked for.
async fn refused(rbac: &Rbac) -> Vec<String> {
    for _ in 0..100 {
        let d = rbac.denied();
        if !d.is_empty() {
            return d;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Vec::new()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_deploy_role_every_operation_answers_and_any_narrower_role_breaks_something() {
    let c = cluster().await;
    let reference = c.snapshot_replica();
    let ops = operations(&reference);
    let want: BTreeMap<String, (u16, Value)> =
        ops.iter().map(|p| (p.clone(), get(&reference, p))).collect();
    assert!(want.len() > 60, "{} operations", want.len());
    let failed: Vec<&String> = want
        .iter()
        .filter(|(p, (s, _))| *s != 200 && !p.contains("/missing/"))
        .map(|(p, _)| p)
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
    let (_, mesh) = &want["/api/namespaces/bookinfo/mesh"];
    assert_eq!(
        mesh["quotaSpecs"].as_array().map(Vec::len),
        Some(1),
        "the Mixer objects are part of the answers"
    );
    // So are the security, Sidecar and Gateway API kinds, each of which the role must cover.
    let (_, shop) = &want["/api/namespaces/shop/mesh"];
    for list in [
        "authorizationPolicies",
        "peerAuthentications",
        "requestAuthentications",
        "sidecars",
        "k8sGateways",
        "k8sHTTPRoutes",
        "k8sGRPCRoutes",
    ] {
        assert!(shop[list].as_array().is_some_and(|a| !a.is_empty()), "{list}: {shop}");
    }
    let (_, backends) = &want["/api/namespaces/backends/mesh"];
    assert!(backends["k8sReferenceGrants"].as_array().is_some_and(|a| !a.is_empty()));
    let (_, graph) = &want[&ops[1]];
    assert!(graph["elements"]["nodes"].as_array().is_some_and(|n| n.len() > 5), "{graph}");

    // The full role: the same answers, nothing refused, nothing to warn about.
    let m = c.replica(SIGNING_KEY, &[]);
    assert_eq!(first_difference(&m, &want), None);
    assert_eq!(warnings(&m), Vec::<String>::new());
    assert_eq!(c.rbac.denied(), Vec::<String>::new());
    let refusal = |l: &String| l.contains("forbidden") || l.contains("no access");
    let refused_lines: Vec<String> = m
        .logs
        .lock()
        .map(|l| l.iter().filter(|l| refusal(l)).cloned().collect())
        .unwrap_or_default();
    assert_eq!(refused_lines, Vec::<String>::new());
    drop(m);

    // Every narrower role: each resource taken out of its rule, and each verb out of every rule.
    let rules = deploy_role().rules.unwrap_or_default();
    let mut narrower: Vec<(String, Vec<PolicyRule>)> = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        for r in rule.resources.iter().flatten() {
            let mut rs = rules.clone();
            rs[i].resources.as_mut().expect("resources").retain(|x| x != r);
            narrower.push((format!("without {r} ({:?})", rule.api_groups), rs));
        }
    }
    let verbs: std::collections::BTreeSet<String> =
        rules.iter().flat_map(|r| r.verbs.clone()).collect();
    for v in &verbs {
        let rs = rules
            .iter()
            .cloned()
            .map(|mut r| {
                r.verbs.retain(|x| x != v);
                r
            })
            .collect();
        narrower.push((format!("without verb {v}"), rs));
    }
    assert_eq!(narrower.len(), 29, "27 resources and 2 verbs");
    for (what, rs) in narrower {
        c.rbac.set_rules(rs);
        let m = c.replica(SIGNING_KEY, &[("MESHLENS_CLUSTER__SYNC_TIMEOUT", "3s")]);
        let denied = refused(&c.rbac).await;
        assert!(!denied.is_empty(), "{what}: meshlens never asked for what the role lacks");
        let broken = first_difference(&m, &want)
            .or_else(|| warnings(&m).first().cloned())
            .or_else(|| m.logs.lock().ok()?.iter().find(|l| l.contains("forbidden")).cloned());
        assert!(broken.is_some(), "{what}: nothing a user sees changed (refused: {denied:?})");
    }
    drop(c.api);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_with_the_secret_key_accept_each_others_tokens() {
    let c = cluster().await;
    let a = c.replica(SIGNING_KEY, &[]);
    let b = c.replica(SIGNING_KEY, &[]);
    let other = c.replica("a-different-key-of-at-least-32-bytes-0000", &[]);
    let (status, body) = get(&a, "/api/token");
    assert_eq!(status, 200, "{body}");
    let token = body["token"].as_str().expect("token").to_string();
    let bearer = format!("Bearer {token}");
    for (m, want) in [(&a, 200), (&b, 200), (&other, 401)] {
        let r = m.get_with("/api/namespaces", &[("Authorization", &bearer)]);
        assert_eq!(r.status, want, "{}", r.text());
        if want == 401 {
            assert_eq!(r.json()["code"], 401);
        } else {
            assert!(r.json().as_array().is_some_and(|n| n.iter().any(|n| n["name"] == "bookinfo")));
        }
    }
}

fn yaml(relative: &str) -> Value {
    let path = workspace_root().join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deployments_probes_and_scrape_path_answer_without_credentials() {
    let d: Deployment = serde_json::from_value(yaml("deploy/kubernetes/deployment.yaml"))
        .expect("deployment.yaml is a Deployment");
    let tmpl = d.spec.as_ref().map(|s| &s.template).expect("template");
    let c = &tmpl.spec.as_ref().expect("pod spec").containers[0];
    let cluster = cluster().await;
    // The ConfigMap's config: its port is the container port the probes name (see
    // deploy_manifests.rs); here the process listens on an OS-picked one instead.
    let m = cluster.replica(SIGNING_KEY, &[]);
    let mut probes = Vec::new();
    for (what, probe) in [("liveness", &c.liveness_probe), ("readiness", &c.readiness_probe)] {
        let http = probe.as_ref().and_then(|p| p.http_get.as_ref()).expect("httpGet probe");
        assert!(http.scheme.as_deref().is_none_or(|s| s == "HTTP"), "{what}: plain HTTP");
        assert_eq!(http.http_headers, None, "{what}: the kubelet sends no credentials");
        probes.push((what, http.path.clone().expect("probe path")));
    }
    let ann = tmpl.metadata.as_ref().and_then(|m| m.annotations.clone()).unwrap_or_default();
    probes.push(("scrape", ann.get("prometheus.io/path").cloned().expect("scrape path")));
    for (what, path) in &probes {
        // Readiness follows the cluster sync: bounded wait for it.
        let mut r = m.get(path);
        for _ in 0..100 {
            if r.status == 200 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            r = m.get(path);
        }
        assert_eq!(r.status, 200, "{what} {path}: {}", r.text());
    }
    assert!(m.get(&probes[2].1).text().contains("meshlens_build_info{"));
    // The probes answer because they are public, not because nothing is checked.
    let r = m.get("/api/namespaces");
    assert_eq!(r.status, 401, "{}", r.text());
}

/// The variables the `token-auth` component's Deployment patch adds.
fn token_auth_env() -> Vec<(String, String)> {
    let patch = yaml("deploy/kubernetes/components/token-auth/deployment-patch.yaml");
    let env = patch.pointer("/spec/template/spec/containers/0/env").expect("env in the patch");
    env.as_array()
        .expect("env list")
        .iter()
        .map(|e| {
            let field = |k: &str| e[k].as_str().expect("name and literal value").to_string();
            (field("name"), field("value"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_auth_component_grants_exactly_the_reviews_the_token_strategy_sends() {
    const ALICE: &str = "token-of-alice";
    let reviews = Reviews::new();
    reviews.user("alice", ALICE, &["bookinfo"]);
    let base = deploy_role().rules.unwrap_or_default();
    let extra = token_auth_role().rules.unwrap_or_default();
    let mut role = deploy_role();
    role.rules = Some(base.iter().chain(&extra).cloned().collect());
    let c = cluster_with(&role, Some(reviews.clone())).await;
    let env = token_auth_env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let visible = |m: &Meshlens, token: &str| {
        let r = m.get_with("/api/namespaces", &[("Authorization", &format!("Bearer {token}"))]);
        let names: Vec<String> = r
            .json()
            .as_array()
            .map(|a| a.iter().filter_map(|n| n["name"].as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        (r.status, names)
    };

    let m = c.replica(SIGNING_KEY, &env);
    let (_, status) = get(&m, "/api/status");
    assert_eq!(status["status"]["authStrategy"], "token", "{status}");
    assert_eq!(visible(&m, ALICE), (200, vec!["bookinfo".to_string()]));
    assert_eq!(visible(&m, "not-a-known-token").0, 401);
    assert!(reviews.token_reviews() > 0 && reviews.access_reviews() > 0);
    assert_eq!(c.rbac.denied(), Vec::<String>::new());
    drop(m);

    // Each rule of the component taken out, then the base role alone: the login breaks.
    let mut narrower: Vec<Vec<PolicyRule>> = (0..extra.len())
        .map(|i| {
            let mut rs = extra.clone();
            rs.remove(i);
            base.iter().chain(&rs).cloned().collect()
        })
        .collect();
    narrower.push(base.clone());
    for rules in narrower {
        c.rbac.set_rules(rules.clone());
        let m = c.replica(SIGNING_KEY, &env);
        let (status, names) = visible(&m, ALICE);
        assert_ne!(status, 200, "{names:?} with {} rules", rules.len());
        let denied = c.rbac.denied();
        assert!(
            denied.iter().any(|d| d.starts_with("create ") && d.contains("reviews.")),
            "{denied:?}"
        );
    }
}
