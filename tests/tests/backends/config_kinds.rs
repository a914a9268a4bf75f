//! The security, Sidecar and Gateway API kinds end to end: meshConfigList and every check
//! of `tests/fixtures/config-kinds` (a breaking object and a valid look-alike per check)
//! through the `kube` source (loopback API server) and the `snapshot` source, objects
//! applied and deleted at run time, and a cluster without the CRDs.

// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::InProcess as Meshlens;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use integration_tests::{
    kube_api::{KubeApi, Options, read_fixtures, without_todays_kinds},
    server::{cluster_only_config, workspace_root},
};
use serde_json::{Value, json};

const NAMESPACES: [&str; 3] = ["shop", "edge", "backends"];

fn fixture_dir() -> PathBuf {
    workspace_root().join("tests/fixtures/config-kinds")
}

fn snapshot_server() -> Meshlens {
    let plugins = tempfile::tempdir().expect("temp dir");
    let cluster = format!("source = \"snapshot\"\nsnapshot = [\"{}\"]", fixture_dir().display());
    let cfg = cluster_only_config(&cluster, plugins.path());
    Meshlens::start(&cfg, &[], vec![plugins]).expect("meshlens starts on the snapshot")
}

fn kube_server(api: &KubeApi) -> Meshlens {
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = api.write_kubeconfig(dir.path());
    let plugins = tempfile::tempdir().expect("temp dir");
    let cluster = format!(
        "source = \"kube\"\nkubeconfig = \"{}\"\nsync_timeout = \"20s\"",
        kubeconfig.display()
    );
    let cfg = cluster_only_config(&cluster, plugins.path());
    Meshlens::start(&cfg, &[], vec![plugins, dir]).expect("meshlens starts on kube")
}

/// The eight lists meshConfigList gained, with their `objects=` names.
const LISTS: [(&str, &str); 8] = [
    ("authorizationPolicies", "authorizationpolicies"),
    ("peerAuthentications", "peerauthentications"),
    ("requestAuthentications", "requestauthentications"),
    ("sidecars", "sidecars"),
    ("k8sGateways", "k8sgateways"),
    ("k8sHTTPRoutes", "k8shttproutes"),
    ("k8sGRPCRoutes", "k8sgrpcroutes"),
    ("k8sReferenceGrants", "k8sreferencegrants"),
];

/// Every answer the tests compare between the sources.
fn answers(m: &Meshlens) -> Vec<(String, u16, Value)> {
    let mut paths = Vec::new();
    for ns in NAMESPACES {
        paths.push(format!("/namespaces/{ns}/mesh"));
        paths.push(format!("/namespaces/{ns}/mesh_validations"));
    }
    paths.push("/namespaces/shop/mesh?objects=k8sgateways,virtualservices".into());
    paths.push("/namespaces/shop/mesh/k8shttproutes/route-broken/mesh_validations".into());
    paths.push("/namespaces/edge/mesh/k8sgateways/edge-dup/mesh_validations".into());
    paths
        .into_iter()
        .map(|p| {
            let r = m.get(&p);
            (p, r.status, r.json())
        })
        .collect()
}

/// `{ns/objectType/name: [(code, path)]}` of every object with a check, from namespaceValidations.
fn findings(m: &Meshlens) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out = BTreeMap::new();
    for ns in NAMESPACES {
        let r = m.get(&format!("/namespaces/{ns}/mesh_validations"));
        assert_eq!(r.status, 200, "{}", r.text());
        let body = r.json();
        for (kind, objects) in body[ns].as_object().expect("typed map") {
            for (name, v) in objects.as_object().expect("by name") {
                let checks = v["checks"].as_array().expect("checks");
                let error = checks.iter().any(|c| c["severity"] == "error");
                assert_eq!(v["valid"], !error, "{ns} {kind} {name}: valid iff no error: {v}");
                if checks.is_empty() {
                    continue;
                }
                let found: Vec<(String, String)> = checks
                    .iter()
                    .map(|c| {
                        let code = c["code"].as_str().unwrap_or("(none)").to_string();
                        (code, c["path"].as_str().unwrap_or("").to_string())
                    })
                    .collect();
                out.insert(format!("{ns}/{kind}/{name}"), found);
            }
        }
    }
    out
}

fn expected() -> BTreeMap<String, Vec<(String, String)>> {
    let rows: &[(&str, &[(&str, &str)])] = &[
        (
            "shop/authorizationpolicy/ap-broken",
            &[
                ("KIA0004", "spec/selector/matchLabels"),
                ("KIA0101", "spec/rules[0]/from[0]/source/namespaces[1]"),
                ("KIA0104", "spec/rules[0]/to[0]/operation/hosts[1]"),
            ],
        ),
        (
            "shop/peerauthentication/pa-off",
            &[("KIA0505", "spec/mtls"), ("KIA0002", "spec/selector")],
        ),
        ("shop/peerauthentication/pa-default", &[("KIA0002", "spec/selector")]),
        ("shop/peerauthentication/pa-cart", &[("KIA0003", "spec/selector")]),
        ("shop/peerauthentication/pa-v1", &[("KIA0003", "spec/selector")]),
        ("backends/peerauthentication/pa-typo", &[("KIA0004", "spec/selector/matchLabels")]),
        ("shop/requestauthentication/ra-broken", &[("KIA0004", "spec/selector/matchLabels")]),
        (
            "shop/sidecar/sc-broken",
            &[("KIA0004", "spec/workloadSelector/labels"), ("KIA1004", "spec/egress[0]/hosts[1]")],
        ),
        ("backends/sidecar/sc-default-a", &[("KIA0002", "spec/workloadSelector")]),
        ("backends/sidecar/sc-default-b", &[("KIA0002", "spec/workloadSelector")]),
        ("edge/k8sgateway/edge-open", &[("KIA1501", "spec/listeners[0]/hostname")]),
        ("shop/k8sgateway/shop-gw", &[("KIA1501", "spec/listeners[0]/hostname")]),
        (
            "edge/k8sgateway/edge-dup",
            &[("KIA1503", "spec/listeners[0]/name"), ("KIA1503", "spec/listeners[2]/name")],
        ),
        (
            "shop/k8shttproute/route-broken",
            &[
                ("KIA1401", "spec/parentRefs[0]/name/missing"),
                ("KIA1401", "spec/parentRefs[1]/name/edge-private"),
                ("KIA1402", "spec/rules[0]/backendRefs[0]/name"),
                ("KIA1402", "spec/rules[0]/backendRefs[1]/name"),
            ],
        ),
        (
            "shop/k8sgrpcroute/grpc-broken",
            &[
                ("KIA1401", "spec/parentRefs[0]/name/edge-private"),
                ("KIA1402", "spec/rules[0]/backendRefs[0]/name"),
            ],
        ),
        ("backends/k8sreferencegrant/rg-broken", &[("KIA1601", "spec/from[0]/namespace")]),
    ];
    rows.iter()
        .map(|(k, v)| {
            (k.to_string(), v.iter().map(|(c, p)| (c.to_string(), p.to_string())).collect())
        })
        .collect()
}

/// Waits (bounded) until `f` holds for the answer at `path`.
fn wait_for(m: &Meshlens, path: &str, f: impl Fn(u16, &Value) -> bool) -> (u16, Value) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = m.get(path);
        let body = r.json();
        if f(r.status, &body) || Instant::now() > deadline {
            return (r.status, body);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_check_fires_on_its_breaking_object_only_through_both_sources() {
    let api = KubeApi::start(read_fixtures(&[fixture_dir()]), Options::default()).await;
    let (kube, kube_findings, snapshot, snapshot_findings, status) =
        tokio::task::spawn_blocking(move || {
            let kube = kube_server(&api);
            let snapshot = snapshot_server();
            let status = kube.get("/api/status").json();
            let out = (answers(&kube), findings(&kube), answers(&snapshot), findings(&snapshot));
            drop(api);
            (out.0, out.1, out.2, out.3, status)
        })
        .await
        .expect("test thread");
    // Each breaking object gets exactly its checks; every look-alike (and every other
    // object) gets none, through either source.
    assert_eq!(snapshot_findings, expected());
    assert_eq!(kube_findings, expected());
    assert_eq!(kube.len(), snapshot.len());
    for (k, s) in kube.iter().zip(&snapshot) {
        assert_eq!(k, s);
    }
    // The cluster serves every kind: nothing to note. This config loads no metrics backend,
    // so the only warnings are about that backend.
    let warnings = status["warningMessages"].as_array().expect("warnings");
    assert!(warnings.iter().all(|w| !w.to_string().contains("CRD")), "{status}");
    assert!(warnings.iter().all(|w| w.to_string().contains("metrics backend")), "{status}");

    let by_path: BTreeMap<&str, &Value> = kube.iter().map(|(p, _, v)| (p.as_str(), v)).collect();
    // meshConfigList: the eight lists, items as served ({metadata, spec}).
    let shop = by_path["/namespaces/shop/mesh"];
    let names = |v: &Value, list: &str| -> Vec<String> {
        v[list]
            .as_array()
            .expect(list)
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(names(shop, "authorizationPolicies"), ["ap-broken", "ap-fine"]);
    assert_eq!(names(shop, "peerAuthentications"), ["pa-cart", "pa-default", "pa-off", "pa-v1"]);
    assert_eq!(names(shop, "requestAuthentications"), ["ra-broken", "ra-fine"]);
    assert_eq!(names(shop, "sidecars"), ["sc-broken", "sc-fine"]);
    assert_eq!(names(shop, "k8sGateways"), ["shop-gw", "shop-internal"]);
    assert_eq!(names(shop, "k8sHTTPRoutes"), ["route-broken", "route-fine"]);
    assert_eq!(names(shop, "k8sGRPCRoutes"), ["grpc-broken", "grpc-fine"]);
    assert_eq!(
        names(by_path["/namespaces/backends/mesh"], "k8sReferenceGrants"),
        ["rg-broken", "rg-grpc"]
    );
    // A Gateway API Gateway is never an Istio gateway.
    assert_eq!(shop["gateways"], json!([]));
    assert_eq!(shop["k8sGateways"][0]["spec"]["listeners"][0]["hostname"], "shop.example.com");
    assert_eq!(shop["k8sGateways"][0]["metadata"]["namespace"], "shop");
    let only = by_path["/namespaces/shop/mesh?objects=k8sgateways,virtualservices"];
    assert_eq!(names(only, "k8sGateways"), ["shop-gw", "shop-internal"]);
    assert_eq!(names(only, "virtualServices"), ["web-vs"]);
    assert_eq!(only["k8sHTTPRoutes"], json!([]));
    let ns_validations = by_path["/namespaces/shop/mesh_validations"];
    assert!(ns_validations["shop"].get("gateway").is_none(), "{ns_validations}");

    // objectValidations: the object alone, checks with message, severity, path and code.
    assert_eq!(
        by_path["/namespaces/edge/mesh/k8sgateways/edge-dup/mesh_validations"],
        &json!({"k8sgateway": {"edge-dup": {"name": "edge-dup", "objectType": "k8sgateway", "valid": false, "checks": [
            {"message": "Each listener must have a unique combination of Hostname, Port, and Protocol", "severity": "error", "path": "spec/listeners[0]/name", "code": "KIA1503"},
            {"message": "Each listener must have a unique combination of Hostname, Port, and Protocol", "severity": "error", "path": "spec/listeners[2]/name", "code": "KIA1503"}]}}})
    );
    let route = by_path["/namespaces/shop/mesh/k8shttproutes/route-broken/mesh_validations"];
    assert_eq!(route["k8shttproute"]["route-broken"]["checks"].as_array().map(Vec::len), Some(4));
}

#[test]
fn object_types_errors_and_missing_objects() {
    let m = snapshot_server();
    for (_, plural) in LISTS {
        let r = m.get(&format!("/namespaces/shop/mesh/{plural}/ghost/mesh_validations"));
        assert_eq!(r.status, 404, "{plural}: {}", r.text());
        assert_eq!(r.json()["code"], 404);
    }
    let r = m.get("/namespaces/shop/mesh/widgets/x/mesh_validations");
    assert_eq!(r.status, 400);
    let msg = r.json()["message"].as_str().unwrap_or("").to_string();
    for (_, plural) in LISTS {
        assert!(msg.contains(plural), "{msg}");
    }
    // The Gateway API Gateway is no Istio `gateways` object, and the other way round.
    assert_eq!(m.get("/namespaces/shop/mesh/gateways/shop-gw/mesh_validations").status, 404);
    assert_eq!(m.get("/namespaces/shop/mesh/k8sgateways/shop-gw/mesh_validations").status, 200);
    let r = m.get("/namespaces/shop/mesh?objects=k8sgateways,widgets");
    assert_eq!(r.status, 400, "{}", r.text());
    let msg = r.json()["message"].as_str().unwrap_or("").to_string();
    assert!(msg.contains("k8sreferencegrants") && msg.contains("virtualservices"), "{msg}");
    // `objects=` with only new names fills only them.
    let only = m.get("/namespaces/backends/mesh?objects=sidecars,k8sreferencegrants").json();
    assert_eq!(only["sidecars"].as_array().map(Vec::len), Some(2));
    assert_eq!(only["k8sReferenceGrants"].as_array().map(Vec::len), Some(2));
    assert_eq!(only["peerAuthentications"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_applied_and_deleted_at_run_time_are_listed_and_validated() {
    let api = std::sync::Arc::new(
        KubeApi::start(read_fixtures(&[fixture_dir()]), Options::default()).await,
    );
    let a2 = api.clone();
    tokio::task::spawn_blocking(move || {
        let m = kube_server(&a2);
        let ap = "/namespaces/edge/mesh/authorizationpolicies/late/mesh_validations";
        assert_eq!(m.get(ap).status, 404);
        a2.apply(json!({"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
            "metadata": {"name": "late", "namespace": "edge"},
            "spec": {"selector": {"matchLabels": {"app": "ekko"}}}}));
        let (status, body) = wait_for(&m, ap, |s, _| s == 200);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["authorizationpolicy"]["late"]["checks"][0]["code"], "KIA0004");
        // Fixed in place: the finding goes.
        a2.apply(json!({"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
            "metadata": {"name": "late", "namespace": "edge"},
            "spec": {"selector": {"matchLabels": {"app": "echo"}}}}));
        let (_, body) = wait_for(&m, ap, |_, b| b["authorizationpolicy"]["late"]["checks"] == json!([]));
        assert_eq!(body["authorizationpolicy"]["late"]["checks"], json!([]), "{body}");
        // A route to a Gateway that appears later: KIA1401 until it exists.
        a2.apply(json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "late-route", "namespace": "edge"},
            "spec": {"parentRefs": [{"name": "late-gw"}], "rules": [{"backendRefs": [{"name": "echo", "port": 80}]}]}}));
        let route = "/namespaces/edge/mesh/k8shttproutes/late-route/mesh_validations";
        let (_, body) = wait_for(&m, route, |s, _| s == 200);
        assert_eq!(body["k8shttproute"]["late-route"]["checks"][0]["code"], "KIA1401", "{body}");
        a2.apply(json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": "late-gw", "namespace": "edge"},
            "spec": {"gatewayClassName": "istio", "listeners": [{"name": "http", "port": 6000, "protocol": "HTTP"}]}}));
        let (_, body) = wait_for(&m, route, |_, b| b["k8shttproute"]["late-route"]["valid"] == true);
        assert_eq!(body["k8shttproute"]["late-route"]["checks"], json!([]), "{body}");
        // Deleted: gone from the list and a 404.
        assert!(a2.delete("security.istio.io/v1", "AuthorizationPolicy", "edge", "late"));
        assert!(a2.delete("gateway.networking.k8s.io/v1", "Gateway", "edge", "late-gw"));
        let (status, _) = wait_for(&m, ap, |s, _| s == 404);
        assert_eq!(status, 404);
        let (_, list) = wait_for(&m, "/namespaces/edge/mesh", |_, b| {
            b["k8sGateways"].as_array().is_some_and(|a| a.iter().all(|g| g["metadata"]["name"] != "late-gw"))
        });
        assert!(list["authorizationPolicies"].as_array().is_some_and(|a| a.is_empty()), "{list}");
        let (_, body) = wait_for(&m, route, |_, b| b["k8shttproute"]["late-route"]["valid"] == false);
        assert_eq!(body["k8shttproute"]["late-route"]["checks"][0]["code"], "KIA1401", "{body}");
    })
    .await
    .expect("test thread");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_without_the_crds_gives_empty_lists_and_a_status_note() {
    let served = without_todays_kinds();
    // What such a cluster can hold: the fixture's Namespaces, workloads, Services and
    // Istio networking objects other than Sidecars.
    let objects: Vec<Value> = read_fixtures(&[fixture_dir()])
        .into_iter()
        .filter(|o| {
            let group = o["apiVersion"].as_str().unwrap_or("").rsplit_once('/').map_or("", |g| g.0);
            served.iter().any(|d| d.group == group && d.kind == o["kind"])
        })
        .collect();
    assert!(objects.iter().any(|o| o["kind"] == "VirtualService"));
    let api = KubeApi::start(objects, Options { resources: served, ..Default::default() }).await;
    tokio::task::spawn_blocking(move || {
        let m = kube_server(&api);
        let r = m.get("/namespaces/shop/mesh");
        assert_eq!(r.status, 200, "{}", r.text());
        let body = r.json();
        for (list, _) in LISTS {
            assert_eq!(body[list], json!([]), "{list}");
        }
        assert_eq!(body["virtualServices"].as_array().map(Vec::len), Some(1));
        let r = m.get("/namespaces/shop/mesh_validations");
        assert_eq!(r.status, 200, "{}", r.text());
        let kinds: Vec<String> =
            r.json()["shop"].as_object().expect("map").keys().cloned().collect();
        assert_eq!(kinds, ["destinationrule", "virtualservice"]);
        assert_eq!(m.get("/namespaces/shop/mesh/k8sgateways/shop-gw/mesh_validations").status, 404);
        let status = m.get("/api/status").json();
        let notes: Vec<&str> = status["warningMessages"]
            .as_array()
            .expect("warnings")
            .iter()
            .filter_map(Value::as_str)
            .filter(|w| !w.contains("metrics backend"))
            .collect();
        assert_eq!(notes.len(), 1, "{notes:?}");
        for kind in [
            "AuthorizationPolicy",
            "PeerAuthentication",
            "RequestAuthentication",
            "Sidecar",
            "Gateway.gateway.networking.k8s.io",
            "HTTPRoute",
            "GRPCRoute",
            "ReferenceGrant",
        ] {
            assert!(notes[0].contains(kind), "{kind}: {notes:?}");
        }
        assert!(notes[0].contains("CRD not installed"), "{notes:?}");
        drop(api);
    })
    .await
    .expect("test thread");
}
