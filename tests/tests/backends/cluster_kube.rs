//! The cluster model through the real `kube` client against the loopback API server, and
//! the snapshot source on the same fixtures.

use std::{collections::BTreeMap, path::PathBuf, sync::Arc, time::Duration};

use integration_tests::kube_api::{KubeApi, Options, read_fixtures};
use meshlens_cluster::{
    Cluster, ClusterConfig, ClusterError, ClusterState, HumanDuration, SourceKind,
};
use plugin_api::ClusterKind;
use serde_json::{Value, json};

fn fixture_paths() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    vec![root.join("../config/demo"), root.join("fixtures/cluster")]
}

async fn kube_cluster(api: &KubeApi, dir: &tempfile::TempDir, sync_timeout: Duration) -> Cluster {
    let cfg = ClusterConfig {
        source: SourceKind::Kube,
        kubeconfig: Some(api.write_kubeconfig(dir.path())),
        sync_timeout: HumanDuration(sync_timeout),
        ..Default::default()
    };
    Cluster::start(cfg).await.unwrap()
}

async fn snapshot_cluster(paths: Vec<PathBuf>) -> Cluster {
    Cluster::start(ClusterConfig {
        source: SourceKind::Snapshot,
        snapshot: paths,
        ..Default::default()
    })
    .await
    .unwrap()
}

fn answer<T: serde::Serialize>(r: Result<T, ClusterError>) -> Value {
    match r {
        Ok(v) => serde_json::to_value(v).unwrap(),
        Err(e) => json!({"status": e.http_status()}),
    }
}

/// Every operation's answer for every namespace, app and workload the model knows, plus
/// names that do not exist.
fn all_answers(s: &ClusterState) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    out.insert("namespaces".to_string(), answer(Ok::<_, ClusterError>(s.namespace_list())));
    let mut names: Vec<String> = s.namespaces().map(|n| n.name.clone()).collect();
    names.push("kube-system".into());
    names.push("missing".into());
    for ns in &names {
        out.insert(format!("{ns} apps"), answer(Ok::<_, ClusterError>(s.app_list(ns))));
        out.insert(format!("{ns} workloads"), answer(s.workload_list(ns)));
        out.insert(format!("{ns} mesh"), answer(s.mesh_config_list(ns, None)));
        out.insert(
            format!("{ns} mesh vs"),
            answer(s.mesh_config_list(ns, Some("virtualservices"))),
        );
        let apps: Vec<String> = s.apps(ns).into_iter().map(|a| a.name).collect();
        for a in apps.iter().chain(std::iter::once(&"ghost".to_string())) {
            out.insert(format!("{ns} app {a}"), answer(s.app_details(ns, a)));
        }
        let wls: Vec<String> = s
            .namespace(ns)
            .map(|n| n.workloads.iter().map(|w| w.name.clone()).collect())
            .unwrap_or_default();
        for w in wls.iter().chain(std::iter::once(&"ghost".to_string())) {
            out.insert(format!("{ns} workload {w}"), answer(s.workload_details(ns, w)));
        }
    }
    let kinds = [
        ClusterKind::Workloads,
        ClusterKind::Services,
        ClusterKind::ServiceEntries,
        ClusterKind::DestinationRules,
        ClusterKind::VirtualServices,
        ClusterKind::Gateways,
        ClusterKind::MonitoringDashboards,
    ];
    let data = s.cluster_data(&kinds, &names);
    out.insert("cluster_data".into(), json!(format!("{data:?}")));
    out
}

fn assert_same(a: &BTreeMap<String, Value>, b: &BTreeMap<String, Value>, what: &str) {
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "{what}: different sets of answers"
    );
    for (k, v) in a {
        assert_eq!(v, &b[k], "{what}: answers differ for {k}");
    }
}

/// Writes what a `GET` of every collection answers (typed lists whose items carry no
/// apiVersion/kind) as files: a cluster dump in the API's own JSON.
async fn dump(api: &KubeApi, dir: &std::path::Path) -> Vec<PathBuf> {
    let client = reqwest::Client::new();
    let mut files = Vec::new();
    for (i, path) in [
        "/api/v1/namespaces",
        "/api/v1/pods",
        "/api/v1/services",
        "/api/v1/replicationcontrollers",
        "/apis/apps/v1/deployments",
        "/apis/apps/v1/replicasets",
        "/apis/apps/v1/statefulsets",
        "/apis/apps/v1/daemonsets",
        "/apis/batch/v1/jobs",
        "/apis/batch/v1/cronjobs",
        "/apis/autoscaling/v2/horizontalpodautoscalers",
        "/apis/networking.istio.io/v1beta1/virtualservices",
        "/apis/networking.istio.io/v1beta1/destinationrules",
        "/apis/networking.istio.io/v1beta1/gateways",
        "/apis/networking.istio.io/v1beta1/serviceentries",
        "/apis/monitoring.kiali.io/v1alpha1/monitoringdashboards",
    ]
    .iter()
    .enumerate()
    {
        let body: Value =
            client.get(format!("{}{path}", api.url())).send().await.unwrap().json().await.unwrap();
        let f = dir.join(format!("{i:02}.json"));
        std::fs::write(&f, serde_json::to_string_pretty(&body).unwrap()).unwrap();
        files.push(f);
    }
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_and_snapshot_sources_give_identical_answers() {
    let api = KubeApi::start(read_fixtures(&fixture_paths()), Options::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let kube = kube_cluster(&api, &dir, Duration::from_secs(20)).await;
    let from_kube = all_answers(&kube.state().await.unwrap());
    assert_eq!(kube.version(), "v1.33.2");

    let snap = snapshot_cluster(fixture_paths()).await;
    assert_eq!(snap.warnings(), Vec::<String>::new());
    let from_snapshot = all_answers(&snap.state().await.unwrap());
    assert_same(&from_kube, &from_snapshot, "kube vs snapshot");

    let dumped = snapshot_cluster(dump(&api, dir.path()).await).await;
    assert_eq!(dumped.warnings(), Vec::<String>::new());
    assert_same(&from_kube, &all_answers(&dumped.state().await.unwrap()), "kube vs API dump");

    // The answers are about the fixtures, not empty on both sides.
    let names: Vec<&str> = from_kube["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["bookinfo", "extras", "istio-system"]);
    let types: BTreeMap<String, String> = from_kube["extras workloads"]["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["name"].as_str().unwrap().to_string(), w["type"].as_str().unwrap().to_string()))
        .collect();
    let want: BTreeMap<String, String> = [
        ("agent", "DaemonSet"),
        ("db", "StatefulSet"),
        ("debug", "Pod"),
        ("legacy", "ReplicationController"),
        ("loner", "ReplicaSet"),
        ("nightly", "CronJob"),
        ("oneshot", "Job"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(types, want);
    let db = &from_kube["extras workload db"];
    assert_eq!(
        (
            db["replicas"].as_i64(),
            db["availableReplicas"].as_i64(),
            db["unavailableReplicas"].as_i64()
        ),
        (Some(2), Some(1), Some(1))
    );
    assert_eq!(db["autoscaler"]["maxReplicas"], 4);
    assert_eq!(db["pods"].as_array().unwrap().len(), 2);
    assert_eq!(db["services"][0]["name"], "db");
    assert_eq!(from_kube["extras workload nightly"]["pods"][0]["name"], "nightly-29000000-abcde");
    // A v1alpha3 object is served and read; config.istio.io has no CRD: empty, not an error.
    assert_eq!(from_kube["extras mesh"]["virtualServices"][0]["metadata"]["name"], "db");
    assert_eq!(from_kube["bookinfo mesh"]["rules"], json!([]));
    assert_eq!(from_kube["bookinfo mesh"]["quotaSpecs"], json!([]));
    assert_eq!(from_kube["bookinfo mesh"]["virtualServices"].as_array().unwrap().len(), 3);
    assert_eq!(from_kube["missing workloads"], json!({"status": 404}));
    assert_eq!(from_kube["kube-system workloads"], json!({"status": 404}));
    assert_eq!(from_kube["missing apps"]["applications"], json!([]));
}

fn deployment(name: &str, app: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "bookinfo", "labels": {"app": app}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": app}},
                 "template": {"metadata": {"labels": {"app": app, "version": "v1"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
        "status": {"availableReplicas": 1}})
}

async fn wait_for(cluster: &Cluster, what: &str, check: impl Fn(&Arc<ClusterState>) -> bool) {
    for _ in 0..150 {
        let s = cluster.state().await.unwrap();
        if check(&s) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not show within 15 s");
}

fn workload_names(s: &ClusterState, ns: &str) -> Vec<String> {
    s.namespace(ns)
        .map(|n| n.workloads.iter().map(|w| w.name.clone()).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_cache_follows_additions_and_removals_across_watch_restarts() {
    // Short watches: the client must resume from bookmarks to see later changes.
    let opts = Options {
        watch_max: Duration::from_secs(1),
        bookmark_every: Duration::from_millis(300),
        ..Default::default()
    };
    let api = KubeApi::start(read_fixtures(&fixture_paths()), opts).await;
    let dir = tempfile::tempdir().unwrap();
    let cluster = kube_cluster(&api, &dir, Duration::from_secs(20)).await;
    let s = cluster.state().await.unwrap();
    assert!(workload_names(&s, "bookinfo").contains(&"details-v1".to_string()));

    api.apply(deployment("search-v1", "search"));
    // What the garbage collector would do: the Deployment, its ReplicaSet and its pod go.
    assert!(api.delete("apps/v1", "Deployment", "bookinfo", "details-v1"));
    assert!(api.delete("apps/v1", "ReplicaSet", "bookinfo", "details-v1-646574616"));
    assert!(api.delete("v1", "Pod", "bookinfo", "details-v1-646574616-abcde"));
    wait_for(&cluster, "the added and the removed deployment", |s| {
        let names = workload_names(s, "bookinfo");
        names.contains(&"search-v1".to_string()) && !names.contains(&"details-v1".to_string())
    })
    .await;
    let s = cluster.state().await.unwrap();
    let apps: Vec<String> = s.apps("bookinfo").into_iter().map(|a| a.name).collect();
    assert!(apps.contains(&"search".to_string()));
    // details keeps its Service, so the app still exists, now without workloads.
    let details = serde_json::to_value(s.app_details("bookinfo", "details").unwrap()).unwrap();
    assert_eq!(details["workloads"], json!([]));

    // Let every watch end once (watch_max 1 s) and resume, then change a mesh object.
    let (watches_before, _, _) = api.served();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (watches_after, _, bookmarks) = api.served();
    assert!(watches_after > watches_before, "no watch was resumed");
    assert!(bookmarks > 0, "no bookmark was sent");
    assert!(api.delete("networking.istio.io/v1beta1", "VirtualService", "bookinfo", "ratings"));
    wait_for(&cluster, "the removed VirtualService", |s| {
        let l =
            serde_json::to_value(s.mesh_config_list("bookinfo", Some("virtualservices")).unwrap())
                .unwrap();
        l["virtualServices"].as_array().is_some_and(|a| a.len() == 2)
    })
    .await;

    // History lost while the client was cut off: resuming gets 410 Gone, the client lists
    // again and still converges.
    api.set_available(false);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    api.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "late"}}));
    api.compact();
    api.set_available(true);
    wait_for(&cluster, "a namespace added after a 410", |s| s.namespace("late").is_some()).await;
    assert!(api.served().1 > 0, "no watch resumed from an expired version");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_answers_not_synced_until_the_api_server_is_reachable() {
    let api = KubeApi::start(read_fixtures(&fixture_paths()), Options::default()).await;
    api.set_available(false);
    let dir = tempfile::tempdir().unwrap();
    let cluster = kube_cluster(&api, &dir, Duration::from_millis(300)).await;
    match cluster.state().await {
        Err(e @ ClusterError::NotSynced(_)) => assert_eq!(e.http_status(), 503),
        other => panic!("expected NotSynced, got {other:?}"),
    }
    api.set_available(true);
    let mut synced = None;
    for _ in 0..100 {
        if let Ok(s) = cluster.state().await {
            synced = Some(s);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let s = synced.expect("the cache never synced after the server came back");
    assert_eq!(workload_names(&s, "bookinfo").len(), 9);
}
