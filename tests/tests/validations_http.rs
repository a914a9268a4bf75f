//! The three validation operations through the real binary on the demo mesh (snapshot
//! source): the broken VirtualService, shapes, and the 400/404 bodies.

use integration_tests::server::{Response, demo_snapshot_server};
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
