//! Issue-29 figures: the background export of `meshlens_health_status` for 200 namespaces
//! against a real Prometheus: queries per refresh (sent by meshlens, and executed by
//! Prometheus), time per refresh (meshlens's own log line), and meshlens's resident memory
//! before the first refresh and after several. Prints figures; asserts only that the export
//! ran and covered every namespace.

use std::time::{Duration, Instant};

use integration_tests::{
    load::proc_status,
    prometheus::{PromServer, simulated},
    server::{Meshlens, ensure_built, plugin_dir},
};

const NAMESPACES: usize = 200;
const REFRESHES: usize = 4;

/// Two workloads per namespace, `a` calling `b` with 1 % 503s.
fn topology() -> String {
    let mut t = String::from("step_seconds = 15\ncycle_minutes = 30\n");
    for n in 0..NAMESPACES {
        for w in ["a", "b"] {
            t.push_str(&format!(
                "[[workload]]\nnamespace = \"ns-{n}\"\nname = \"{w}-v1\"\napp = \"{w}\"\nversion = \"v1\"\n"
            ));
        }
        t.push_str(&format!(
            "[[edge]]\nfrom = \"ns-{n}/a-v1\"\nto = \"ns-{n}/b-v1\"\nservice = \"b\"\nprotocol = \"http\"\n\
             responses = [{{ code = \"200\", rate = 9.9 }}, {{ code = \"503\", rate = 0.1 }}]\n"
        ));
    }
    t
}

fn manifests() -> String {
    let mut y = String::new();
    for n in 0..NAMESPACES {
        y.push_str(&format!(
            "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns-{n}\n  creationTimestamp: '2026-01-01T00:00:00Z'\n"
        ));
        for w in ["a", "b"] {
            y.push_str(&format!(
                "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {w}-v1\n  namespace: ns-{n}\n  \
                 creationTimestamp: '2026-01-01T00:00:00Z'\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: {w}, version: v1}}\n  \
                 template:\n    metadata:\n      labels: {{app: {w}, version: v1}}\nstatus:\n  replicas: 1\n  availableReplicas: 1\n"
            ));
        }
        y.push_str(&format!(
            "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: b\n  namespace: ns-{n}\n  \
             creationTimestamp: '2026-01-01T00:00:00Z'\nspec:\n  selector: {{app: b}}\n  ports: [{{name: http, port: 9080}}]\n"
        ));
    }
    y
}

/// `meshlens_backend_queries_total` summed over every outcome that reached the backend.
fn queries_sent(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("meshlens_backend_queries_total{"))
        .filter(|l| {
            ["ok", "error", "timeout"].iter().any(|o| l.contains(&format!("outcome=\"{o}\"")))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The export's log lines so far: (namespaces, queries, ms).
fn refreshes(m: &Meshlens) -> Vec<(u64, u64, u64)> {
    let lines = m.logs.lock().map(|l| l.clone()).unwrap_or_default();
    let field = |line: &str, key: &str| -> Option<u64> {
        let rest = &line[line.find(&format!("{key}="))? + key.len() + 1..];
        rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    };
    lines
        .iter()
        .filter(|l| l.contains("health status exported"))
        .filter_map(|l| Some((field(l, "namespaces")?, field(l, "queries")?, field(l, "ms")?)))
        .collect()
}

fn main() {
    ensure_built();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let dir = tempfile::tempdir().expect("temp dir");
    let topo = dir.path().join("topology.toml");
    std::fs::write(&topo, topology()).expect("write topology");
    let built = Instant::now();
    let f = simulated(&topo, now - 3600, now + 900, 25);
    println!("data: {NAMESPACES} namespaces backfilled in {:.0} s", built.elapsed().as_secs_f64());
    let prom = PromServer::start(&f);
    let cluster = tempfile::tempdir().expect("temp dir");
    std::fs::write(cluster.path().join("mesh.yaml"), manifests()).expect("write manifests");
    let plugins = plugin_dir(&["metrics-prometheus"]);
    let interval = 15;
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [\"{}\"]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"{}\"]\n\
         [metrics]\nbackend = \"prometheus\"\n[metrics.prometheus]\nurl = \"{}\"\n\
         [health]\nexport_interval = \"{interval}s\"\n",
        plugins.path().display(),
        cluster.path().display(),
        prom.url()
    );
    let m = Meshlens::start(&cfg, &[], vec![plugins, cluster]).expect("meshlens starts");
    let pid = m.pid();
    // Before the first refresh (it comes one interval after start-up).
    std::thread::sleep(Duration::from_secs(2));
    let rss_before = proc_status(pid, "VmRSS").unwrap_or(0);
    let mut per_refresh = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(interval * (REFRESHES as u64 + 2) + 60);
    let mut seen = 0;
    while seen < REFRESHES && Instant::now() < deadline {
        let before_sent = queries_sent(&m.get("/metrics").text());
        let before_prom = prom.engine_queries();
        while refreshes(&m).len() == seen && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        // The refresh has logged; its queries are all answered.
        std::thread::sleep(Duration::from_millis(300));
        let sent = queries_sent(&m.get("/metrics").text()) - before_sent;
        let executed = prom.engine_queries() - before_prom;
        seen = refreshes(&m).len();
        per_refresh.push((sent, executed));
    }
    let rss_after = proc_status(pid, "VmRSS").unwrap_or(0);
    let logged = refreshes(&m);
    assert!(logged.len() >= REFRESHES, "only {} refreshes logged", logged.len());
    let gauge = m.get("/metrics").text();
    let series = gauge.lines().filter(|l| l.starts_with("meshlens_health_status{")).count();
    println!(
        "health export, {NAMESPACES} namespaces (2 workloads, 2 apps, 1 service each), every {interval} s, real Prometheus on 127.0.0.1"
    );
    for (i, ((ns, queries, ms), (sent, executed))) in logged.iter().zip(&per_refresh).enumerate() {
        assert_eq!(*ns as usize, NAMESPACES, "every namespace exported");
        println!(
            "  refresh {}: {ns} namespaces, {queries} queries planned ({:.1} per namespace), {sent} sent by meshlens, {executed} executed by Prometheus, {ms} ms",
            i + 1,
            *queries as f64 / *ns as f64
        );
    }
    println!("  gauge series: {series} (4 per object)");
    println!(
        "  meshlens RSS: {:.1} MiB before the first refresh, {:.1} MiB after {} refreshes",
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        logged.len()
    );
}
