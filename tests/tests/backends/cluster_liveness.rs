//! A cluster whose API server goes away (issue #32, failure isolation): the real `kube`
//! client against the loopback API server, stopped for real (port closed, connections cut)
//! and restarted on the same address.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use integration_tests::kube_api::{KubeApi, Options, read_fixtures};
use integration_tests::poll::within;
use meshlens_cluster::{
    Cluster, ClusterConfig, ClusterError, ClusterState, HumanDuration, SourceKind,
};
use serde_json::{Value, json};

fn fixture_paths() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    vec![root.join("../config/demo"), root.join("fixtures/cluster")]
}

async fn kube_cluster(api: &KubeApi, dir: &tempfile::TempDir) -> Cluster {
    let cfg = ClusterConfig {
        source: SourceKind::Kube,
        kubeconfig: Some(api.write_kubeconfig(dir.path())),
        sync_timeout: HumanDuration(Duration::from_secs(20)),
        ..Default::default()
    };
    // Starting must neither fail nor hang, whether the server is up or not.
    tokio::time::timeout(Duration::from_secs(5), Cluster::start(cfg))
        .await
        .expect("Cluster::start hung")
        .expect("Cluster::start failed")
}

fn workload_names(s: &ClusterState, ns: &str) -> Vec<String> {
    s.namespace(ns)
        .map(|n| n.workloads.iter().map(|w| w.name.clone()).collect())
        .unwrap_or_default()
}

fn deployment(name: &str, app: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "bookinfo", "labels": {"app": app}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": app}},
                 "template": {"metadata": {"labels": {"app": app, "version": "v1"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
        "status": {"availableReplicas": 1}})
}

/// `state_if_reachable` must say Unavailable (503) at once, naming the server.
async fn assert_unavailable_at_once(cluster: &Cluster, api: &KubeApi) {
    let asked = Instant::now();
    let r = cluster.state_if_reachable().await;
    let took = asked.elapsed();
    match r {
        Err(e @ ClusterError::Unavailable(_)) => {
            assert_eq!(e.http_status(), 503);
            let msg = e.to_string();
            assert!(
                msg.contains(&api.url()) || msg.contains("not synced"),
                "the reason names neither the server nor the sync: {msg}"
            );
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert!(took < Duration::from_millis(500), "Unavailable took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_api_server_is_reported_refused_at_once_and_recovers_with_current_objects() {
    let api = KubeApi::start(read_fixtures(&fixture_paths()), Options::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let cluster = kube_cluster(&api, &dir).await;
    let s = tokio::time::timeout(Duration::from_secs(25), cluster.state())
        .await
        .expect("state() hung")
        .expect("the caches did not sync");
    assert!(workload_names(&s, "bookinfo").contains(&"details-v1".to_string()));
    // Healthy: not lost, and the reachable read serves the same objects.
    within(Duration::from_secs(3), "a healthy cluster reading as reachable", async || {
        cluster.lost().is_none() && cluster.state_if_reachable().await.is_ok()
    })
    .await;

    api.stop().await;
    let detected =
        within(Duration::from_secs(20), "the lost API server being reported", async || {
            cluster.lost().is_some()
        })
        .await;
    eprintln!("lost reported {detected:?} after the API server stopped");
    let why = cluster.lost().unwrap_or_default();
    assert!(why.contains(&api.url()), "the reason does not name the server: {why}");
    assert_unavailable_at_once(&cluster, &api).await;
    // The home cluster's read keeps serving what it holds, without waiting.
    let asked = Instant::now();
    let s = cluster.state().await.expect("state() of a synced cluster failed while lost");
    assert!(asked.elapsed() < Duration::from_secs(2), "state() waited {:?}", asked.elapsed());
    assert!(workload_names(&s, "bookinfo").contains(&"details-v1".to_string()));
    assert!(cluster.synced(), "a lost cluster forgot that it had synced");
    // Still lost a little later (the probes keep failing), and still answered at once.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(cluster.lost().is_some(), "the lost server was forgotten while still down");
    assert_unavailable_at_once(&cluster, &api).await;

    // Changes made while the client was cut off must be there after the return.
    api.apply(deployment("search-v1", "search"));
    assert!(api.delete("apps/v1", "Deployment", "bookinfo", "details-v1"));
    api.restart().await;
    let back = within(
        Duration::from_secs(30),
        "the returned cluster serving the changes made during the outage",
        async || match cluster.state_if_reachable().await {
            Ok(s) => {
                let names = workload_names(&s, "bookinfo");
                names.contains(&"search-v1".to_string())
                    && !names.contains(&"details-v1".to_string())
            }
            Err(_) => false,
        },
    )
    .await;
    eprintln!("back and current {back:?} after the API server restarted");
    assert_eq!(cluster.lost(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_api_server_is_reported_by_the_probe_and_recovers_after_a_restart() {
    let api = KubeApi::start(read_fixtures(&fixture_paths()), Options::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let cluster = kube_cluster(&api, &dir).await;
    tokio::time::timeout(Duration::from_secs(25), cluster.state())
        .await
        .expect("state() hung")
        .expect("the caches did not sync");

    // Nothing fails, nothing closes: only the probe's own timeout can tell.
    api.hang();
    let detected =
        within(Duration::from_secs(20), "the hung API server being reported", async || {
            cluster.lost().is_some()
        })
        .await;
    eprintln!("lost reported {detected:?} after the API server hung");
    let why = cluster.lost().unwrap_or_default();
    assert!(why.contains("no answer"), "the reason does not say the server is silent: {why}");
    assert_unavailable_at_once(&cluster, &api).await;

    api.apply(deployment("search-v1", "search"));
    api.restart().await;
    let back = within(
        Duration::from_secs(30),
        "the restarted cluster serving the change made while it hung",
        async || match cluster.state_if_reachable().await {
            Ok(s) => workload_names(&s, "bookinfo").contains(&"search-v1".to_string()),
            Err(_) => false,
        },
    )
    .await;
    eprintln!("back and current {back:?} after the hung API server restarted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_started_against_a_stopped_api_server_syncs_once_it_starts() {
    let api = KubeApi::start(read_fixtures(&fixture_paths()), Options::default()).await;
    api.stop().await;
    let dir = tempfile::tempdir().unwrap();
    let cluster = kube_cluster(&api, &dir).await;
    assert!(!cluster.synced());
    assert_unavailable_at_once(&cluster, &api).await;
    let detected =
        within(Duration::from_secs(20), "the unreachable server being reported", async || {
            cluster.lost().is_some()
        })
        .await;
    eprintln!("lost reported {detected:?} after a start against a stopped server");
    assert!(!cluster.synced());
    assert_unavailable_at_once(&cluster, &api).await;

    api.restart().await;
    let synced =
        within(Duration::from_secs(30), "the first sync after the server started", async || {
            cluster.synced()
        })
        .await;
    eprintln!("synced {synced:?} after the API server started");
    // A completed first sync is proof enough that the server answers and nothing is stale.
    let reachable =
        within(Duration::from_secs(2), "the synced cluster reading as reachable", async || {
            cluster.state_if_reachable().await.is_ok()
        })
        .await;
    eprintln!("reachable {reachable:?} after the sync");
    let s = cluster.state_if_reachable().await.expect("reachable");
    assert_eq!(workload_names(&s, "bookinfo").len(), 9);
    assert_eq!(cluster.lost(), None);
}

#[tokio::test]
async fn a_snapshot_is_never_lost() {
    let cluster = Cluster::start(ClusterConfig {
        source: SourceKind::Snapshot,
        snapshot: fixture_paths(),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(cluster.lost(), None);
    let s = cluster.state_if_reachable().await.expect("a snapshot is always readable");
    assert!(workload_names(&s, "bookinfo").contains(&"details-v1".to_string()));
}
