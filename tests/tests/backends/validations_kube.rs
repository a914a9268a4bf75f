//! Validations through the `kube` source (the real client against the loopback API
//! server serving the demo manifests) answer exactly as through the `snapshot` source.

// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::{
    InProcess as Meshlens, demo_snapshot_service as demo_snapshot_server,
};
use std::path::PathBuf;

use integration_tests::{
    kube_api::{KubeApi, Options, read_fixtures},
    server::{cluster_only_config, workspace_root},
};
use serde_json::Value;

/// Every validation answer of the demo, by path.
fn answers(m: &Meshlens) -> Vec<(String, u16, Value)> {
    let mut paths = Vec::new();
    for ns in ["bookinfo", "istio-system", "ghost"] {
        paths.push(format!("/namespaces/{ns}/mesh_validations"));
        for svc in ["productpage", "reviews", "ratings", "details", "ghost"] {
            paths.push(format!("/namespaces/{ns}/services/{svc}/mesh_validations"));
        }
        for (t, o) in [
            ("virtualservices", "ratings"),
            ("virtualservices", "bookinfo"),
            ("destinationrules", "ratings"),
            ("gateways", "bookinfo-gateway"),
            ("serviceentries", "books-api"),
        ] {
            paths.push(format!("/namespaces/{ns}/mesh/{t}/{o}/mesh_validations"));
        }
    }
    paths
        .into_iter()
        .map(|p| {
            let r = m.get(&p);
            (p, r.status, r.json())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_and_snapshot_sources_give_the_same_validations() {
    let fixtures: Vec<PathBuf> = vec![workspace_root().join("config/demo")];
    let api = KubeApi::start(read_fixtures(&fixtures), Options::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let (kube, snapshot) = tokio::task::spawn_blocking(move || {
        let plugins = tempfile::tempdir().unwrap();
        let cfg = cluster_only_config(
            &format!(
                "source = \"kube\"\nkubeconfig = \"{}\"\nsync_timeout = \"20s\"",
                kubeconfig.display()
            ),
            plugins.path(),
        );
        let kube = Meshlens::start(&cfg, &[], vec![plugins, dir]).expect("meshlens starts on kube");
        let kube_answers = answers(&kube);
        (kube_answers, answers(&demo_snapshot_server()))
    })
    .await
    .unwrap();
    assert_eq!(kube.len(), snapshot.len());
    for (k, s) in kube.iter().zip(&snapshot) {
        assert_eq!(k, s);
    }
    // And the answers are not trivially equal: the broken VirtualService is there.
    let ns = kube.iter().find(|(p, _, _)| p == "/namespaces/bookinfo/mesh_validations").unwrap();
    assert_eq!(ns.2["bookinfo"]["virtualservice"]["ratings"]["valid"], false);
    drop(api);
}
