//! The cluster operations over HTTP through the real binary: the demo snapshot, and the
//! `kube` source against the loopback API server.

// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::InProcess as Meshlens;
use integration_tests::{
    kube_api::{KubeApi, Options, read_fixtures},
    server::Response,
};
use serde_json::{Value, json};

const DEMO: &str = "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n";

fn start(config: &str) -> Meshlens {
    Meshlens::start(config, &[], vec![]).unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"))
}

fn ok(r: Response) -> Value {
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn err(r: Response, code: u16) -> Value {
    assert_eq!(r.status, code, "{}", r.text());
    let b = r.json();
    assert_eq!(b["code"], code);
    b
}

#[test]
fn demo_cluster_operations_over_http() {
    let m = start(DEMO);
    let ns = ok(m.get("/api/namespaces"));
    assert_eq!(
        ns,
        json!([{"name": "bookinfo", "creationTimestamp": "2026-01-01T00:00:00Z", "isAmbient": false, "cluster": "Kubernetes"},
                          {"name": "istio-system", "creationTimestamp": "2026-01-01T00:00:00Z", "isAmbient": false, "cluster": "Kubernetes"}])
    );

    let apps = ok(m.get("/api/namespaces/bookinfo/apps"));
    assert_eq!(apps["namespace"], json!({"name": "bookinfo"}));
    assert!(
        apps["applications"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "details", "meshSidecar": false, "isAmbient": false, "cluster": "Kubernetes"}))
    );
    assert_eq!(ok(m.get("/api/namespaces/nowhere/apps"))["applications"], json!([]));

    let pp = ok(m.get("/api/namespaces/bookinfo/apps/productpage"));
    assert_eq!(pp["workloads"], json!([{"workloadName": "productpage-v1", "meshSidecar": true}]));
    err(m.get("/api/namespaces/bookinfo/apps/nope"), 404);

    // The spec's paths without /api answer as well.
    let wl = ok(m.get("/namespaces/bookinfo/workloads"));
    assert_eq!(wl["workloads"].as_array().unwrap().len(), 9);
    err(m.get("/namespaces/kube-system/workloads"), 404);
    let d = ok(m.get("/namespaces/bookinfo/workloads/productpage-v1"));
    assert_eq!(d["autoscaler"]["targetCPUUtilizationPercentage"], 80);
    assert_eq!(d["pods"][0]["phase"], "Running");
    err(m.get("/namespaces/bookinfo/workloads/nope"), 404);

    let mesh = ok(m.get("/namespaces/bookinfo/mesh"));
    for k in [
        "destinationRules",
        "gateways",
        "quotaSpecBindings",
        "quotaSpecs",
        "rules",
        "serviceEntries",
        "virtualServices",
    ] {
        assert!(mesh[k].is_array(), "{k} missing: {mesh}");
    }
    assert_eq!(mesh["virtualServices"].as_array().unwrap().len(), 3);
    let only = ok(m.get("/namespaces/bookinfo/mesh?objects=destinationrules"));
    assert_eq!(
        (
            only["destinationRules"].as_array().unwrap().len(),
            only["virtualServices"].as_array().unwrap().len()
        ),
        (2, 0)
    );
    let bad = err(m.get("/namespaces/bookinfo/mesh?objects=widgets"), 400);
    assert!(bad["message"].as_str().unwrap().contains("serviceentries"), "{bad}");
    err(m.get("/namespaces/nowhere/mesh"), 404);

    let status = ok(m.get("/api/status"));
    let k8s = status["externalServices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "Kubernetes")
        .cloned();
    assert_eq!(k8s.map(|s| s["version"].clone()), Some(json!("snapshot")));
}

#[test]
fn kube_source_over_http() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let api = rt.block_on(KubeApi::start(
        read_fixtures(&[root.join("../config/demo"), root.join("fixtures/cluster")]),
        Options::default(),
    ));
    let dir = tempfile::tempdir().unwrap();
    let kc = api.write_kubeconfig(dir.path());
    let config = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[cluster]\nsource = \"kube\"\nkubeconfig = {:?}\nsync_timeout = \"20s\"\n",
        kc.display().to_string()
    );
    let m = start(&config);
    let names: Vec<String> = ok(m.get("/api/namespaces"))
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, vec!["bookinfo", "extras", "istio-system"]);
    let wl = ok(m.get("/api/namespaces/extras/workloads/db"));
    assert_eq!(wl["autoscaler"]["name"], "db");
    let status = ok(m.get("/api/status"));
    let k8s = status["externalServices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "Kubernetes")
        .cloned();
    assert_eq!(k8s.map(|s| s["version"].clone()), Some(json!("v1.33.2")));
    drop(m);
    drop(api);
}
