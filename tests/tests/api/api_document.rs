//! The Swagger document cannot drift from the answers: every JSON answer any test gets is
//! validated against the document's schema for its operation and status
//! (`integration_tests::api_schema`, called by the shared request helper). This file proves
//! the check bites, checks it reads the document the binary serves, and walks every
//! operation once on the demo (simulated traffic, bundled plugins) so each schema meets a
//! real answer.

use integration_tests::api_schema::{operation_path, violations};
use integration_tests::inprocess::InProcess;
use integration_tests::server::{BUNDLED, plugin_dir, workspace_root};
use serde_json::{Value, json};

/// The demo's configuration with this build's plugins, served in this process (the
/// document served is the one compiled into the service, as in the binary).
fn demo() -> InProcess {
    let plugins = plugin_dir(BUNDLED);
    let config =
        std::fs::read_to_string(workspace_root().join("config/demo.toml")).expect("demo.toml");
    // The binary runs from the workspace root; this process does not (relative paths).
    let topology = workspace_root().join("config/demo/topology.toml");
    let config = config
        .replace("port = 20001", "port = 0")
        .replace("\"config/demo/topology.toml\"", &format!("{:?}", topology.display().to_string()));
    let dirs = vec![plugins.path().display().to_string()];
    InProcess::configured(&config, move |c| c.plugins.dirs = dirs, vec![plugins])
        .expect("the demo starts")
}

#[test]
fn the_checked_document_is_the_served_one() {
    let m = demo();
    let served = m.get("/api/swagger.json").json();
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(workspace_root().join("host/swagger.json")).expect("read"),
    )
    .expect("JSON");
    assert_eq!(served, file);
}

#[test]
fn an_answer_with_a_field_more_or_less_than_the_document_is_refused() {
    let m = demo();
    let status = m.get("/api/status").json();
    assert_eq!(violations("/api/status", 200, &status), Vec::<String>::new());

    // A field the response type gained without the document.
    let mut more = status.clone();
    more["buildHost"] = json!("x");
    let v = violations("/api/status", 200, &more);
    assert!(v.iter().any(|e| e.contains("buildHost")), "{v:?}");

    // A field the document promises that the answer lost.
    let mut less = status.clone();
    less.as_object_mut().unwrap().remove("warningMessages");
    let v = violations("/api/status", 200, &less);
    assert!(v.iter().any(|e| e.contains("warningMessages")), "{v:?}");

    // A nested one: a graph node without its type, and an edge field of the wrong type.
    let graph = m.get("/api/namespaces/graph?namespaces=bookinfo&graphType=versionedApp").json();
    let path = "/api/namespaces/graph";
    assert_eq!(violations(path, 200, &graph), Vec::<String>::new());
    let mut g = graph.clone();
    g["elements"]["nodes"][0]["data"].as_object_mut().unwrap().remove("nodeType");
    let v = violations(path, 200, &g);
    assert!(v.iter().any(|e| e.contains("nodeType") && e.contains("/elements/nodes/0")), "{v:?}");
    let mut g = graph.clone();
    g["elements"]["edges"][0]["data"]["isMTLS"] = json!("yes");
    assert!(!violations(path, 200, &g).is_empty());

    // Error answers are `{code, message}` and nothing else.
    let err = m.get("/api/namespaces/bookinfo/health?rateInterval=soon");
    assert_eq!(err.status, 400);
    let mut body = err.json();
    assert_eq!(violations("/api/namespaces/bookinfo/health", 400, &body), Vec::<String>::new());
    body["detail"] = json!("x");
    assert!(!violations("/api/namespaces/bookinfo/health", 400, &body).is_empty());
}

#[test]
fn every_operation_answers_as_documented_on_the_demo() {
    let m = demo();
    let doc: Value = m.get("/api/swagger.json").json();
    let ns = "bookinfo";
    let details = m.get("/api/namespaces/bookinfo/apps/reviews").json();
    let template = details["runtimes"]
        .as_array()
        .and_then(|r| r.iter().flat_map(|r| r["dashboardRefs"].as_array()).flatten().next())
        .and_then(|d| d["template"].as_str())
        .unwrap_or("envoy")
        .to_string();
    let concrete = [
        "/api/".to_string(),
        "/api/status".into(),
        "/api/config".into(),
        "/api/healthz".into(),
        "/api/ready".into(),
        "/api/token".into(),
        "/api/grafana".into(),
        "/api/jaeger".into(),
        "/api/swagger.json".into(),
        "/api/namespaces".into(),
        format!("/api/namespaces/{ns}/apps"),
        format!("/api/namespaces/{ns}/apps/reviews"),
        format!("/api/namespaces/{ns}/workloads"),
        format!("/api/namespaces/{ns}/workloads/reviews-v1"),
        format!("/api/namespaces/{ns}/mesh"),
        format!("/api/namespaces/{ns}/mesh/destinationrules/reviews/mesh_validations"),
        format!("/api/namespaces/{ns}/mesh_validations"),
        format!("/api/namespaces/{ns}/services/reviews/mesh_validations"),
        format!("/api/namespaces/{ns}/apps/reviews/health"),
        format!("/api/namespaces/{ns}/services/reviews/health"),
        format!("/api/namespaces/{ns}/workloads/reviews-v1/health"),
        format!("/api/namespaces/{ns}/health"),
        format!("/api/namespaces/{ns}/health?type=service"),
        format!("/api/namespaces/{ns}/health?type=workload"),
        format!("/api/namespaces/{ns}/metrics?quantiles[]=0.5&byLabels[]=destination_app"),
        "/api/namespaces/graph?namespaces=bookinfo&graphType=versionedApp&groupBy=app".into(),
        "/api/namespaces/graph?namespaces=bookinfo,istio-system&graphType=service".into(),
        format!("/api/namespaces/{ns}/applications/reviews/graph"),
        format!("/api/namespaces/{ns}/applications/reviews/versions/v2/graph"),
        format!("/api/namespaces/{ns}/services/reviews/graph"),
        format!("/api/namespaces/{ns}/workloads/reviews-v1/graph?graphType=workload"),
        format!("/api/namespaces/{ns}/apps/reviews/customdashboard/{template}"),
        format!("/api/namespaces/{ns}/apps/reviews/dashboard"),
        format!("/api/namespaces/{ns}/services"),
        format!("/api/namespaces/{ns}/workloads/reviews-v1/dashboard?direction=inbound"),
        format!("/api/namespaces/{ns}/services/reviews/dashboard"),
    ];
    let mut seen = std::collections::BTreeSet::new();
    for path in &concrete {
        // The request helper validates the body against the document.
        let r = m.get(path);
        let op = operation_path(path).unwrap_or_else(|| panic!("{path} is not documented"));
        // The demo has no token review (anonymous): GetToken answers its documented error.
        if op != "/token" {
            assert!(matches!(r.status, 200 | 204), "{path}: {} {}", r.status, r.text());
        }
        seen.insert(op);
    }
    let documented: std::collections::BTreeSet<&str> =
        doc["paths"].as_object().expect("paths").keys().map(String::as_str).collect();
    assert_eq!(seen, documented, "every documented operation is walked");
}
