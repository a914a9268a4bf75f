//! Cluster model benchmark through the `kube` path: a synthetic cluster of 2,000 workloads
//! (Deployments, each with its ReplicaSet), 2,000 services and 6,000 pods served by the
//! loopback API server. Prints the RSS growth of the synced cache, the time to first sync,
//! the latency of workloadList for a namespace of 200 workloads, and of a model rebuild
//! after a change.
//!
//! Run: `cargo bench -p integration-tests --bench cluster`

use std::time::{Duration, Instant};

use integration_tests::kube_api::{KubeApi, Options};
use meshlens_cluster::{Cluster, ClusterConfig, SourceKind};
use serde_json::{Value, json};

const NAMESPACES: usize = 10;
const PER_NS: usize = 200;
const PODS_PER: usize = 3;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn objects() -> Vec<Value> {
    let mut out = Vec::new();
    let sc = r#"{"containers":["istio-proxy"]}"#;
    for n in 0..NAMESPACES {
        let ns = format!("ns-{n:02}");
        out.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
        for w in 0..PER_NS {
            let app = format!("app-{w:03}");
            let name = format!("{app}-v1");
            let labels = json!({"app": app, "version": "v1", "team": "bench"});
            out.push(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "spec": {"replicas": PODS_PER, "selector": {"matchLabels": {"app": app, "version": "v1"}},
                    "template": {"metadata": {"labels": labels, "annotations": {"prometheus.io/scrape": "true"}},
                        "spec": {"containers": [{"name": "main", "image": "example/app:1.0", "ports": [{"containerPort": 8080}]}]}}},
                "status": {"replicas": PODS_PER, "availableReplicas": PODS_PER, "readyReplicas": PODS_PER}}));
            let rs = format!("{name}-5d8f7c9b4");
            out.push(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": rs, "namespace": ns, "labels": labels,
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": format!("d-{n}-{w}"), "controller": true}]},
                "spec": {"replicas": PODS_PER, "selector": {"matchLabels": {"app": app}}},
                "status": {"replicas": PODS_PER, "availableReplicas": PODS_PER}}));
            for p in 0..PODS_PER {
                out.push(json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": format!("{rs}-p{p}"), "namespace": ns, "labels": labels,
                        "annotations": {"sidecar.istio.io/status": sc},
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": format!("r-{n}-{w}"), "controller": true}]},
                    "spec": {"containers": [{"name": "main", "image": "example/app:1.0"}, {"name": "istio-proxy", "image": "istio/proxyv2"}]},
                    "status": {"phase": "Running", "podIP": format!("10.{n}.{}.{p}", w % 250)}}));
            }
            out.push(json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": app, "namespace": ns, "labels": {"app": app}},
                "spec": {"selector": {"app": app}, "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}}));
        }
    }
    out
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let objs = objects();
    let count = objs.len();
    let api =
        KubeApi::start(objs, Options { watch_max: Duration::from_secs(290), ..Default::default() })
            .await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = ClusterConfig {
        source: SourceKind::Kube,
        kubeconfig: Some(api.write_kubeconfig(dir.path())),
        sync_timeout: "120s".into(),
        ..Default::default()
    };
    let before = rss_kib();
    let t0 = Instant::now();
    let cluster = Cluster::start(cfg).await.unwrap();
    let state = cluster.state().await.unwrap();
    let sync = t0.elapsed();
    let after = rss_kib();
    let wl = state.workload_list("ns-00").unwrap();
    assert_eq!(wl.workloads.len(), PER_NS);
    println!(
        "cluster bench: {count} objects ({} workloads, {} services, {} pods)",
        NAMESPACES * PER_NS,
        NAMESPACES * PER_NS,
        NAMESPACES * PER_NS * PODS_PER
    );
    println!("  time to first sync (incl. first model build): {:.1} ms", sync.as_secs_f64() * 1e3);
    println!(
        "  RSS growth of the synced cache + model: {:.1} MiB (process RSS {:.1} MiB)",
        (after.saturating_sub(before)) as f64 / 1024.0,
        after as f64 / 1024.0
    );

    let mut lat = Vec::new();
    for _ in 0..300 {
        let t = Instant::now();
        let s = cluster.state().await.unwrap();
        let body = serde_json::to_vec(&s.workload_list("ns-03").unwrap()).unwrap();
        std::hint::black_box(body);
        lat.push(t.elapsed());
    }
    lat.sort();
    println!(
        "  workloadList (200 workloads, cached model, JSON encoded) over {} calls: p50 {:.1} us, p99 {:.1} us, max {:.1} us",
        lat.len(),
        pct(&lat, 0.5).as_secs_f64() * 1e6,
        pct(&lat, 0.99).as_secs_f64() * 1e6,
        lat.last().map(|d| d.as_secs_f64() * 1e6).unwrap_or(0.0)
    );

    // A change: the next request rebuilds the model from the caches.
    let mut rebuild = Vec::new();
    for i in 0..10 {
        api.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("late-{i}")}}));
        let t = Instant::now();
        let mut seen = false;
        for _ in 0..2000 {
            let s = cluster.state().await.unwrap();
            if s.namespace(&format!("late-{i}")).is_some() {
                seen = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(seen);
        rebuild.push(t.elapsed());
    }
    rebuild.sort();
    println!(
        "  change visible (watch event + model rebuild of {count} objects): p50 {:.1} ms, max {:.1} ms",
        pct(&rebuild, 0.5).as_secs_f64() * 1e3,
        rebuild.last().map(|d| d.as_secs_f64() * 1e3).unwrap_or(0.0)
    );
}
