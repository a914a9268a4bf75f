//! The snapshot source on files as users write or dump them: folders, multi-document YAML,
//! `kind: List`, and bad documents reported with file and document index.

use meshlens_cluster::{Cluster, ClusterConfig, ClusterError, SourceKind};

async fn start(paths: Vec<std::path::PathBuf>) -> Result<Cluster, ClusterError> {
    Cluster::start(ClusterConfig {
        source: SourceKind::Snapshot,
        snapshot: paths,
        ..Default::default()
    })
    .await
}

const GOOD: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: cart-v1, namespace: shop}
spec:
  selector: {matchLabels: {app: cart}}
  template:
    metadata: {labels: {app: cart, version: v1}}
    spec: {containers: [{name: c, image: i}]}
";

const BAD: &str = "\
apiVersion: v1
kind: Service
metadata: {name: cart, namespace: shop, labels: {app: cart}}
spec: {selector: {app: cart}, ports: [{port: 80}]}
---
kind: Pod
metadata: {name: [oops
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
---
apiVersion: v1
kind: Pod
metadata: {namespace: shop}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: cart-pod, namespace: shop, labels: {app: cart, version: v1}}
  spec: {containers: [{name: c, image: i}]}
- apiVersion: v1
  kind: Secret
  metadata: {name: token, namespace: shop}
";

#[tokio::test]
async fn bad_documents_are_reported_with_file_and_index_and_the_rest_loads() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("more")).unwrap();
    std::fs::write(dir.path().join("a-good.yaml"), GOOD).unwrap();
    std::fs::write(dir.path().join("more").join("b-mixed.yml"), BAD).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a manifest, not read").unwrap();
    let c = start(vec![dir.path().to_path_buf()]).await.unwrap();
    let w = c.warnings();
    assert_eq!(w.len(), 4, "{w:#?}");
    let file = dir.path().join("more").join("b-mixed.yml").display().to_string();
    assert!(w[0].starts_with(&format!("{file}: document 2: invalid YAML")), "{w:#?}");
    assert!(w[1].starts_with(&format!("{file}: document 3: unknown kind ConfigMap")), "{w:#?}");
    assert!(w[2].starts_with(&format!("{file}: document 4: Pod without metadata.name")), "{w:#?}");
    assert!(
        w[3].starts_with(&format!("{file}: document 5, item 2: unknown kind Secret")),
        "{w:#?}"
    );

    let s = c.state().await.unwrap();
    let wl = serde_json::to_value(s.workload_details("shop", "cart-v1").unwrap()).unwrap();
    // The pod without an owner is a workload of its own; the Deployment has no pod.
    assert_eq!(wl["pods"], serde_json::json!([]));
    assert_eq!(wl["services"][0]["name"], "cart");
    let names: Vec<String> =
        s.namespace("shop").unwrap().workloads.iter().map(|w| w.name.clone()).collect();
    assert_eq!(names, vec!["cart-pod", "cart-v1"]);
    let apps = serde_json::to_value(s.app_details("shop", "cart").unwrap()).unwrap();
    assert_eq!(apps["serviceNames"], serde_json::json!(["cart"]));
}

#[tokio::test]
async fn a_missing_snapshot_path_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    match start(vec![dir.path().join("absent")]).await {
        Err(ClusterError::BadConfig(m)) => assert!(m.contains("absent"), "{m}"),
        other => panic!("expected BadConfig, got {other:?}"),
    }
}
