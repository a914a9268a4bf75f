//! The three validation operations through the real binary on the demo mesh (snapshot
//! source): the broken VirtualService, shapes, and the 400/404 bodies.

// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::demo_snapshot_service as demo_snapshot_server;
use integration_tests::server::Response;
use serde_json::json;

fn error_body(r: &Response, status: u16) -> String {
    assert_eq!(r.status, status, "{}", r.text());
    let body = r.json();
    assert_eq!(body["code"], status);
    assert_eq!(body.as_object().map(|o| o.len()), Some(2), "{body}");
    body["message"].as_str().expect("message").to_string()
}

#[test]
fn namespace_validations_report_the_broken_virtual_service() {
    let m = demo_snapshot_server();
    for prefix in ["", "/api"] {
        let r = m.get(&format!("{prefix}/namespaces/bookinfo/mesh_validations"));
        assert_eq!(r.status, 200, "{}", r.text());
        let body = r.json();
        let ns = &body["bookinfo"];
        assert_eq!(
            ns["virtualservice"]["ratings"],
            json!({"name": "ratings", "objectType": "virtualservice", "valid": false,
                   "checks": [{"message": "Weight sum should be 100", "severity": "error", "path": "spec/http[0]/route"}]})
        );
        // Everything else of the demo's config is fine, and every object has an entry.
        let mut entries = Vec::new();
        for (kind, objects) in ns.as_object().expect("typed map") {
            for (name, v) in objects.as_object().expect("by name") {
                assert_eq!(v["objectType"], kind.as_str());
                assert_eq!(v["name"], name.as_str());
                if !(kind == "virtualservice" && name == "ratings") {
                    assert_eq!(v["valid"], true, "{kind} {name}: {v}");
                    assert_eq!(v["checks"], json!([]), "{kind} {name}");
                }
                entries.push(format!("{kind}/{name}"));
            }
        }
        assert_eq!(
            entries,
            [
                "destinationrule/ratings",
                "destinationrule/reviews",
                "gateway/bookinfo-gateway",
                "serviceentry/books-api",
                "virtualservice/bookinfo",
                "virtualservice/ratings",
                "virtualservice/reviews"
            ]
        );
    }
}

#[test]
fn object_and_service_validations_and_their_errors() {
    let m = demo_snapshot_server();
    let r = m.get("/api/namespaces/bookinfo/mesh/virtualservices/ratings/mesh_validations");
    assert_eq!(r.status, 200);
    let body = r.json();
    assert_eq!(body.as_object().map(|o| o.len()), Some(1));
    assert_eq!(body["virtualservice"]["ratings"]["checks"][0]["path"], "spec/http[0]/route");

    let r = m.get("/namespaces/bookinfo/mesh/destinationrules/reviews/mesh_validations");
    assert_eq!(
        r.json(),
        json!({"destinationrule": {"reviews": {"name": "reviews", "objectType": "destinationrule", "valid": true, "checks": []}}})
    );

    let r = m.get("/namespaces/bookinfo/services/ratings/mesh_validations");
    assert_eq!(r.status, 200);
    let body = r.json();
    let kinds: Vec<(&String, Vec<&String>)> = body
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k, v.as_object().unwrap().keys().collect()))
        .collect();
    assert_eq!(
        format!("{kinds:?}"),
        r#"[("destinationrule", ["ratings"]), ("virtualservice", ["ratings"])]"#
    );

    let msg = error_body(&m.get("/namespaces/bookinfo/mesh/widgets/x/mesh_validations"), 400);
    for known in [
        "destinationrules",
        "virtualservices",
        "gateways",
        "serviceentries",
        "rules",
        "quotaspecs",
        "quotaspecbindings",
    ] {
        assert!(msg.contains(known), "{msg}");
    }
    error_body(&m.get("/namespaces/bookinfo/mesh/virtualservices/ghost/mesh_validations"), 404);
    error_body(&m.get("/namespaces/bookinfo/mesh/gateways/ratings/mesh_validations"), 404);
    error_body(&m.get("/namespaces/ghost/mesh/virtualservices/ratings/mesh_validations"), 404);
    error_body(&m.get("/namespaces/ghost/mesh_validations"), 404);
    // Hidden by cluster.exclude_namespaces: as good as absent.
    error_body(&m.get("/namespaces/kube-system/mesh_validations"), 404);
    error_body(&m.get("/api/namespaces/bookinfo/services/ghost/mesh_validations"), 404);
    error_body(&m.get("/namespaces/ghost/services/ratings/mesh_validations"), 404);
}

/// A VirtualService of `bookinfo` routing to `{service}.payments` through gateway
/// `payments/{gateway}`, with subset v1, and a DestinationRule for the same host.
fn reference_into_payments(name: &str, service: &str, gateway: &str) -> Vec<serde_json::Value> {
    let host = format!("{service}.payments.svc.cluster.local");
    vec![
        json!({"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
               "metadata": {"name": name, "namespace": "bookinfo"},
               "spec": {"hosts": [format!("{name}.example.com")], "gateways": [format!("payments/{gateway}")],
                        "http": [{"route": [{"destination": {"host": host, "subset": "v1"}}]}]}}),
        json!({"apiVersion": "networking.istio.io/v1", "kind": "DestinationRule",
               "metadata": {"name": name, "namespace": "bookinfo"},
               "spec": {"host": host, "subsets": [{"name": "v1", "labels": {"version": "v1"}}]}}),
    ]
}

/// Through the real binary (`token` strategy, the loopback API server's RBAC): alice may
/// list only `bookinfo`. Two VirtualServices and DestinationRules of bookinfo point into
/// `payments`, one at a Service, DestinationRule and Gateway that exist there, one at ones
/// that do not. alice gets the same `info` checks for both, so her validations do not tell
/// her what `payments` holds; an admin sees the difference. (alice got no finding for the
/// existing targets and errors for the missing ones.)
#[test]
fn validations_do_not_reveal_what_a_hidden_namespace_holds() {
    use integration_tests::{
        inprocess::InProcess,
        kube_api::{KubeApi, Options, read_fixtures},
        kube_reviews::Reviews,
        server::{plugin_dir, workspace_root},
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let reviews = Reviews::new();
    reviews.user("alice", "alice-token", &["bookinfo"]).admin("admin", "admin-token");
    let mut objects = read_fixtures(&[workspace_root().join("config/demo")]);
    objects
        .push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "payments"}}));
    objects.push(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "ledger", "namespace": "payments", "labels": {"app": "ledger"}},
        "spec": {"selector": {"app": "ledger"}, "ports": [{"port": 80, "name": "http"}]}}));
    objects.push(json!({"apiVersion": "networking.istio.io/v1", "kind": "DestinationRule",
        "metadata": {"name": "ledger", "namespace": "payments"},
        "spec": {"host": "ledger", "subsets": [{"name": "v1", "labels": {"version": "v1"}}]}}));
    objects.push(json!({"apiVersion": "networking.istio.io/v1", "kind": "Gateway",
        "metadata": {"name": "edge", "namespace": "payments"},
        "spec": {"selector": {"istio": "ingressgateway"},
                 "servers": [{"port": {"number": 80, "name": "http", "protocol": "HTTP"}, "hosts": ["*"]}]}}));
    objects.extend(reference_into_payments("existing", "ledger", "edge"));
    objects.extend(reference_into_payments("missing", "ghost", "nowhere"));
    let api = rt.block_on(KubeApi::start(
        objects,
        Options { reviews: Some(reviews.clone()), ..Default::default() },
    ));
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = api.write_kubeconfig(dir.path());
    let plugins = plugin_dir(&[]);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"token\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"kube\"\nkubeconfig = {kubeconfig:?}\nsync_timeout = \"20s\"\n",
        plugins.path()
    );
    let m = InProcess::start(&cfg, &[], vec![plugins, dir]).expect("meshlens starts");
    let validations = |token: &str| {
        let auth = format!("Bearer {token}");
        let mut last = None;
        for _ in 0..100 {
            let r = m
                .get_with("/api/namespaces/bookinfo/mesh_validations", &[("Authorization", &auth)]);
            if r.status == 200 {
                return r.json();
            }
            last = Some(r.text());
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("validations never answered: {last:?}")
    };
    let alice = validations("alice-token");
    let book = &alice["bookinfo"];
    for kind in ["virtualservice", "destinationrule"] {
        assert_eq!(
            book[kind]["existing"]["checks"], book[kind]["missing"]["checks"],
            "{kind}: alice's answer tells what payments holds: {book}"
        );
        let checks = book[kind]["existing"]["checks"].as_array().expect("checks").clone();
        assert!(!checks.is_empty(), "{kind}: {book}");
        assert!(checks.iter().all(|c| c["severity"] == "info"), "{kind}: {checks:?}");
        assert_eq!(book[kind]["existing"]["valid"], true);
    }
    let paths: Vec<&str> = book["virtualservice"]["existing"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "spec/http[0]/route[0]/destination/host",
            "spec/gateways[0]",
            "spec/http[0]/route[0]/destination"
        ]
    );
    // Someone who may list payments sees what is there and what is not.
    let admin = validations("admin-token");
    let book = &admin["bookinfo"];
    assert_eq!(book["virtualservice"]["missing"]["valid"], false, "{book}");
    assert_ne!(
        book["virtualservice"]["existing"]["checks"],
        book["virtualservice"]["missing"]["checks"]
    );
    drop(api);
}
