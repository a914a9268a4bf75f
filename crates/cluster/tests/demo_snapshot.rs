//! The bundled demo manifests through the snapshot source: the contract of config/demo/README.md.

use std::path::PathBuf;

use meshlens_cluster::{Cluster, ClusterConfig, ClusterError, SourceKind};
use serde_json::{Value, json};

fn demo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config/demo")
}

async fn demo() -> Cluster {
    let cfg = ClusterConfig {
        source: SourceKind::Snapshot,
        snapshot: vec![demo_dir()],
        ..Default::default()
    };
    Cluster::start(cfg).await.unwrap()
}

fn j<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap()
}

#[tokio::test]
async fn demo_loads_without_warnings_and_hides_kube_system() {
    let c = demo().await;
    assert_eq!(c.warnings(), Vec::<String>::new());
    assert_eq!(c.version(), "snapshot");
    let s = c.state().await.unwrap();
    let names: Vec<String> = s.namespace_list().into_iter().map(|n| n.name).collect();
    assert_eq!(names, vec!["bookinfo", "istio-system"]);
    assert!(matches!(s.workload_list("kube-system"), Err(ClusterError::NotFound(_))));
    assert_eq!(j(&s.app_list("kube-system"))["applications"], json!([]));
}

#[tokio::test]
async fn demo_apps_and_sidecars() {
    let s = demo().await.state().await.unwrap();
    let apps = j(&s.app_list("bookinfo"));
    let got: Vec<(String, bool)> = apps["applications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["name"].as_str().unwrap().to_string(), a["meshSidecar"].as_bool().unwrap()))
        .collect();
    let want: Vec<(String, bool)> = [
        ("details", false),
        ("mongodb", true),
        ("notifications", true),
        ("productpage", true),
        // ratings-v2 is scaled to zero: with no pod it cannot show a sidecar.
        ("ratings", false),
        ("reviews", true),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b))
    .collect();
    assert_eq!(got, want);
    let reviews = j(&s.app_details("bookinfo", "reviews").unwrap());
    assert_eq!(reviews["serviceNames"], json!(["reviews"]));
    assert_eq!(reviews["runtimes"], json!([]));
    let wl: Vec<&str> = reviews["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["workloadName"].as_str().unwrap())
        .collect();
    assert_eq!(wl, vec!["reviews-v1", "reviews-v2", "reviews-v3"]);
    assert!(matches!(s.app_details("bookinfo", "nope"), Err(ClusterError::NotFound(_))));
    assert!(matches!(s.app_details("nope", "reviews"), Err(ClusterError::NotFound(_))));
    assert_eq!(j(&s.app_list("nope")), json!({"namespace": {"name": "nope"}, "applications": []}));
}

#[tokio::test]
async fn demo_workloads() {
    let s = demo().await.state().await.unwrap();
    let list = j(&s.workload_list("bookinfo").unwrap());
    let items = list["workloads"].as_array().unwrap();
    assert_eq!(items.len(), 9);
    let details = items.iter().find(|w| w["name"] == "details-v1").unwrap();
    assert_eq!(
        details,
        &json!({"name": "details-v1", "type": "Deployment", "appLabel": true, "versionLabel": true, "meshSidecar": false, "isAmbient": false, "isWaypoint": false})
    );

    let pp = j(&s.workload_details("bookinfo", "productpage-v1").unwrap());
    assert_eq!(pp["createdAt"], "2026-01-01T00:00:00Z");
    assert_eq!(pp["replicas"], 1);
    assert_eq!(pp["availableReplicas"], 1);
    assert_eq!(pp["labels"], json!({"app": "productpage", "version": "v1"}));
    let a = &pp["autoscaler"];
    assert_eq!(
        (a["name"].as_str(), a["minReplicas"].as_i64(), a["maxReplicas"].as_i64()),
        (Some("productpage"), Some(1), Some(5))
    );
    assert_eq!(a["targetCPUUtilizationPercentage"], 80);
    let pods = pp["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 1);
    assert_eq!(
        (pods[0]["meshSidecar"].as_bool(), pods[0]["phase"].as_str()),
        (Some(true), Some("Running"))
    );
    assert_eq!(pp["services"][0]["name"], "productpage");

    let r1 = j(&s.workload_details("bookinfo", "reviews-v1").unwrap());
    assert_eq!(r1["templateAnnotations"]["kiali.io/runtimes"], "vertx-server");
    assert_eq!(r1["autoscaler"]["name"], "");
    assert_eq!(r1["autoscaler"]["maxReplicas"], 0);

    let r2 = j(&s.workload_details("bookinfo", "ratings-v2").unwrap());
    assert_eq!((r2["replicas"].as_i64(), r2["pods"].as_array().map(Vec::len)), (Some(0), Some(0)));
    assert!(matches!(s.workload_details("bookinfo", "ghost"), Err(ClusterError::NotFound(_))));
}

#[tokio::test]
async fn demo_mesh_config() {
    let s = demo().await.state().await.unwrap();
    let all = j(&s.mesh_config_list("bookinfo", None).unwrap());
    let names = |k: &str| -> Vec<String> {
        all[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names("virtualServices"), vec!["bookinfo", "ratings", "reviews"]);
    assert_eq!(names("destinationRules"), vec!["ratings", "reviews"]);
    assert_eq!(names("gateways"), vec!["bookinfo-gateway"]);
    assert_eq!(names("serviceEntries"), vec!["books-api"]);
    assert_eq!(all["rules"], json!([]));
    let ratings = all["virtualServices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["metadata"]["name"] == "ratings")
        .unwrap();
    let weights: i64 = ratings["spec"]["http"][0]["route"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["weight"].as_i64().unwrap())
        .sum();
    assert_eq!(weights, 90);

    let only = j(&s.mesh_config_list("bookinfo", Some("gateways,serviceentries")).unwrap());
    assert_eq!(only["virtualServices"], json!([]));
    assert_eq!(only["gateways"].as_array().unwrap().len(), 1);
    match s.mesh_config_list("bookinfo", Some("gateways,widgets")) {
        Err(e @ ClusterError::InvalidInput(_)) => {
            assert_eq!(e.http_status(), 400);
            assert!(e.to_string().contains("virtualservices"), "{e}");
        }
        other => panic!("expected a 400, got {other:?}"),
    }
    assert!(matches!(s.mesh_config_list("nope", None), Err(ClusterError::NotFound(_))));
}

#[tokio::test]
async fn demo_cluster_data_for_plugins() {
    use plugin_api::ClusterKind as K;
    let s = demo().await.state().await.unwrap();
    let d = s.cluster_data(
        &[K::Workloads, K::ServiceEntries, K::Gateways, K::DestinationRules],
        &["istio-system".to_string()],
    );
    assert_eq!(d.workloads.len(), 1);
    assert!(d.workloads[0].has_sidecar);
    // ServiceEntries and Gateways come from every visible namespace; DRs only from istio-system.
    let kinds: Vec<&str> = d.objects.iter().map(|o| o.kind.as_str()).collect();
    assert_eq!(kinds, vec!["ServiceEntry", "Gateway"]);
    assert_eq!(d.objects[0].spec()["location"], "MESH_EXTERNAL");
    // Kinds or namespaces named twice are delivered once.
    let twice = s.cluster_data(
        &[
            K::Workloads,
            K::Workloads,
            K::ServiceEntries,
            K::Gateways,
            K::DestinationRules,
            K::ServiceEntries,
        ],
        &["istio-system".to_string(), "istio-system".to_string()],
    );
    assert_eq!(twice, d);
    let book = s.cluster_data(
        &[K::Services, K::DestinationRules, K::MonitoringDashboards],
        &["bookinfo".to_string(), "kube-system".to_string()],
    );
    assert_eq!(book.services.len(), 6);
    assert_eq!(book.objects.iter().filter(|o| o.kind.as_str() == "DestinationRule").count(), 2);
}

#[tokio::test]
async fn routes_for_plugins_come_from_every_namespace_and_gateway_api_gateways_stay_apart() {
    use plugin_api::ClusterKind as K;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let c = Cluster::start(ClusterConfig {
        source: SourceKind::Snapshot,
        snapshot: vec![root.join("tests/fixtures/config-kinds")],
        ..Default::default()
    })
    .await
    .unwrap();
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    let s = c.state().await.unwrap();
    // The routes live in `shop`; a graph of `backends` still gets them (their backends may
    // be there).
    let d = s.cluster_data(&[K::Routes], &["backends".to_string()]);
    let mut names: Vec<String> =
        d.objects.iter().map(|o| format!("{}/{}", o.kind.as_str(), o.name.as_str())).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "GRPCRoute/grpc-broken",
            "GRPCRoute/grpc-fine",
            "HTTPRoute/route-broken",
            "HTTPRoute/route-fine"
        ]
    );
    // Istio's Gateways only: the Gateway API's are not delivered as `Gateways`.
    let g = s.cluster_data(&[K::Gateways], &["shop".to_string()]);
    assert!(g.objects.is_empty(), "{:?}", g.objects);
    // Counts name the Gateway API's Gateway with its group.
    let counts = c.object_counts();
    assert!(counts.contains(&("Gateway.gateway.networking.k8s.io", 6)), "{counts:?}");
    assert!(counts.contains(&("AuthorizationPolicy", 2)), "{counts:?}");
    // Namespace labels are read (Gateway API `allowedRoutes` selectors).
    assert_eq!(
        s.namespace("shop").map(|n| n.labels.get("gateway-access").cloned()),
        Some(Some("granted".to_string()))
    );
}
