//! Cluster model benchmark through the `kube` path: a synthetic cluster of 2,000 workloads
//! (Deployments, each with its ReplicaSet), 2,000 services and 6,000 pods served by the
//! loopback API server, in this process. Prints the time to first sync,
//! the latency of workloadList for a namespace of 200 workloads, and of a model rebuild
//! after a change. Objects carry what a real API server sends and the model never reads
//! (`managedFields`, the `kubectl apply` annotation, full pod specs), so trimming counts.
//!
//! Then one replica as deployed: the `meshlens` binary of this profile with the container
//! image's plugins and the `prometheus` backend (an empty Prometheus: the unused-node appender still
//! puts every workload in the graph), synced with the same cluster, serving workloads,
//! health and the graph of every namespace. Its resident memory (VmRSS, and the peak VmHWM)
//! is the figure behind the Deployment's memory request and limit. It is split into
//! anonymous memory (heap, stacks) and file-backed pages (the mapped binary and plugins), and
//! the replica is also synced with a growing part of the cluster to show what each kind
//! costs per object.
//!
//! Run: `cargo bench -p integration-tests --bench cluster` (release: the replica figure is
//! only meaningful for a release binary).

use std::time::{Duration, Instant};

use integration_tests::{
    kube_api::{KubeApi, Options},
    prometheus::PromServer,
    server::{Meshlens, image_plugins, plugin_dir},
};
use meshlens_cluster::{Cluster, ClusterConfig, HumanDuration, SourceKind};
use serde_json::{Value, json};

const NAMESPACES: usize = 10;
const PER_NS: usize = 200;
const PODS_PER: usize = 3;

/// The replica is measured as deployed.
const ALLOCATOR_ENV: &[(&str, &str)] = integration_tests::server::DEPLOYED_ALLOCATOR_ENV;

fn proc_kib(pid: &str, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn rss_kib() -> u64 {
    proc_kib("self", "VmRSS:")
}

/// What an API server adds to an object that `kubectl apply` created: identity, a
/// `managedFields` entry and the applied manifest as an annotation.
fn as_served(mut o: Value, i: usize) -> Value {
    let applied = o.to_string();
    let fields: serde_json::Map<String, Value> = ["metadata", "spec", "status"]
        .iter()
        .map(|k| (format!("f:{k}"), json!({"f:labels": {}, "f:annotations": {}, ".": {}})))
        .collect();
    let meta = o["metadata"].as_object_mut().expect("metadata");
    meta.insert("uid".into(), json!(format!("00000000-0000-4000-8000-{i:012}")));
    meta.insert("resourceVersion".into(), json!((1000 + i).to_string()));
    meta.insert("creationTimestamp".into(), json!("2026-01-01T00:00:00Z"));
    meta.insert(
        "managedFields".into(),
        json!([{"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1",
                "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields},
               {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "subresource": "status",
                "fieldsV1": {"f:status": {"f:replicas": {}, "f:conditions": {".": {}}}}}]),
    );
    if o["kind"] != "Pod" {
        let a = o["metadata"]["annotations"].as_object().cloned().unwrap_or_default();
        let mut a = a;
        a.insert("kubectl.kubernetes.io/last-applied-configuration".into(), json!(applied));
        o["metadata"]["annotations"] = Value::Object(a);
    }
    o
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
                    "spec": {"containers": [
                        {"name": "main", "image": "example/app:1.0", "ports": [{"containerPort": 8080}],
                         "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                         "env": [{"name": "LOG_LEVEL", "value": "info"}]},
                        {"name": "istio-proxy", "image": "istio/proxyv2", "args": ["proxy", "sidecar", "--domain", "$(POD_NAMESPACE).svc.cluster.local"],
                         "resources": {"requests": {"cpu": "10m", "memory": "40Mi"}}}],
                        "serviceAccountName": "default", "nodeName": format!("node-{}", w % 20)},
                    "status": {"phase": "Running", "podIP": format!("10.{n}.{}.{p}", w % 250)}}));
            }
            out.push(json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": app, "namespace": ns, "labels": {"app": app}},
                "spec": {"selector": {"app": app}, "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}}));
        }
    }
    out.into_iter().enumerate().map(|(i, o)| as_served(o, i)).collect()
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
        sync_timeout: HumanDuration(Duration::from_secs(120)),
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
    // The loopback API server runs in this process and holds the served objects too, so
    // this is not the cache's size: the replica below is measured on its own.
    println!(
        "  RSS growth of this process (loopback API server's objects + cache + model): {:.1} MiB (process RSS {:.1} MiB)",
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

    // One replica as deployed: the binary, its own process, the same cluster.
    let prom = PromServer::start_empty();
    // The image's plugins (the demo's backends are not in it).
    let plugins = plugin_dir(&image_plugins());
    let replica_cfg = |kubeconfig: &std::path::Path| {
        format!(
            "[server]\naddress = \"127.0.0.1\"\nport = 0\n[auth]\nstrategy = \"anonymous\"\n\
             [plugins]\ndirs = [{:?}]\n[cluster]\nsource = \"kube\"\nkubeconfig = {:?}\n\
             sync_timeout = \"120s\"\n[metrics]\nbackend = \"prometheus\"\n\
             [metrics.prometheus]\nurl = {:?}\n",
            plugins.path().display().to_string(),
            kubeconfig.display().to_string(),
            prom.url()
        )
    };

    // A replica synced with `objects` (served by its own loopback API) that has answered `path`.
    let replica_with = async |objects: Vec<Value>, path: &str| {
        let api = KubeApi::start(objects, Options::default()).await;
        let dir = tempfile::tempdir().unwrap();
        let cfg = replica_cfg(&api.write_kubeconfig(dir.path()));
        let m = Meshlens::start(&cfg, ALLOCATOR_ENV, vec![dir]).expect("meshlens starts");
        let r = m.get(path);
        assert_eq!(r.status, 200, "{}", r.text());
        (api, m)
    };

    // The same replica with an empty cluster: what the process costs before any object.
    let empty_anon = {
        let (_api, m) = replica_with(Vec::new(), "/api/namespaces").await;
        let pid = m.pid().to_string();
        println!(
            "  meshlens binary with an empty cluster: RSS {:.1} MiB synced and idle ({})",
            proc_kib(&pid, "VmRSS:") as f64 / 1024.0,
            rss_split(&pid)
        );
        proc_kib(&pid, "RssAnon:")
    };

    // Where the memory goes: the replica synced with a growing part of the cluster (caches
    // and model, one workloads request served); each step's anonymous memory over the
    // previous one, per object added. File-backed pages do not depend on the cluster.
    let mut prev = (empty_anon, 0usize);
    for (what, kinds) in [
        ("Namespaces, Deployments, ReplicaSets", &["Namespace", "Deployment", "ReplicaSet"][..]),
        ("+ Services", &["Namespace", "Deployment", "ReplicaSet", "Service"][..]),
        (
            "+ Pods (the whole cluster)",
            &["Namespace", "Deployment", "ReplicaSet", "Service", "Pod"][..],
        ),
    ] {
        let part: Vec<Value> = objects()
            .into_iter()
            .filter(|o| o["kind"].as_str().is_some_and(|k| kinds.contains(&k)))
            .collect();
        let n = part.len();
        let (_api, m) = replica_with(part, "/api/namespaces/ns-00/workloads").await;
        let anon = proc_kib(&m.pid().to_string(), "RssAnon:");
        let added = n.saturating_sub(prev.1).max(1);
        println!(
            "  {what}: {n} objects, anonymous RSS {:.1} MiB, +{:.1} MiB for {added} more objects ({:.0} bytes each)",
            anon as f64 / 1024.0,
            anon.saturating_sub(prev.0) as f64 / 1024.0,
            anon.saturating_sub(prev.0) as f64 * 1024.0 / added as f64
        );
        prev = (anon, n);
    }

    let cfg = replica_cfg(&api.write_kubeconfig(dir.path()));
    let t = Instant::now();
    let m = Meshlens::start(&cfg, ALLOCATOR_ENV, vec![plugins]).expect("meshlens starts");
    let r = m.get("/api/namespaces/ns-00/workloads");
    assert_eq!(r.status, 200, "{}", r.text());
    let synced = t.elapsed();
    let pid = m.pid().to_string();
    let (idle, sync_peak) = (proc_kib(&pid, "VmRSS:"), proc_kib(&pid, "VmHWM:"));
    let all: Vec<String> = (0..NAMESPACES).map(|n| format!("ns-{n:02}")).collect();
    for ns in &all {
        for op in ["workloads", "apps", "health", "mesh_validations"] {
            let r = m.get(&format!("/api/namespaces/{ns}/{op}"));
            assert_eq!(r.status, 200, "{ns} {op}: {}", r.text());
        }
    }
    let graph = m.get(&format!(
        "/api/namespaces/graph?namespaces={}&graphType=workload&duration=600s",
        all.join(",")
    ));
    assert_eq!(graph.status, 200, "{}", graph.text());
    let nodes = graph.json()["elements"]["nodes"].as_array().map_or(0, Vec::len);
    println!(
        "  meshlens binary (one replica, {} profile) answered after {:.1} ms: RSS {:.1} MiB synced and idle (peak {:.1} MiB so far), \
         {:.1} MiB after workloads/apps/health/validations of every namespace and a {nodes}-node graph ({}); peak RSS {:.1} MiB",
        integration_tests::server::profile_dir()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        synced.as_secs_f64() * 1e3,
        idle as f64 / 1024.0,
        sync_peak as f64 / 1024.0,
        proc_kib(&pid, "VmRSS:") as f64 / 1024.0,
        rss_split(&pid),
        proc_kib(&pid, "VmHWM:") as f64 / 1024.0
    );
}

/// What the resident memory is: heap and stacks (anonymous) vs the mapped binary and
/// plugins (file pages, shared with other processes running the same files).
fn rss_split(pid: &str) -> String {
    format!(
        "anonymous {:.1} MiB, file-backed {:.1} MiB",
        proc_kib(pid, "RssAnon:") as f64 / 1024.0,
        proc_kib(pid, "RssFile:") as f64 / 1024.0
    )
}
