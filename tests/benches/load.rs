//! Benchmark: meshlens under a mixed load, with Debian's `wrk`, against a release build on a
//! generated mesh (30 namespaces of 8 workloads, 20 minutes of traffic ending now) backed by
//! real Prometheus, default configuration (answer cache on, default `[limits]`).
//!
//! Three phases on one server, run with the allocator settings it is deployed with: 200
//! connections for 60 s, 2,000 connections for 60 s, then 200 again (whether memory taken at
//! the peak is kept, given back, or still growing). Each phase runs four `wrk`s at once, a
//! quarter of the connections each:
//! - graph: the all-namespace workload graph;
//! - health: `/api/namespaces/ns-N/health`, going round the namespaces;
//! - apps: `/api/namespaces/ns-N/apps`, going round the namespaces;
//! - status: `/api/status`.
//!
//! Prints per operation: throughput, answers by status, p50/p99/max latency, errors other than
//! 503 (other statuses, socket errors, timeouts); per phase: RSS and threads at its start and
//! end and the peak, RSS sampled every tenth of the phase (flat, or growing?), Prometheus
//! queries per second (its own
//! `prometheus_engine_query_duration_seconds_count`), admission refusals (meshlens's
//! `/metrics`). `MESHLENS_LOAD_SECONDS` shortens the phases.
//!
//! `cargo bench -p integration-tests --bench load` (README "Benchmarks").

use integration_tests::{
    load::{Wrk, WrkRun, proc_status},
    mesh::TestMesh,
    server::Meshlens,
};

const NAMESPACES: usize = 30;
const WORKLOADS: usize = 8;

fn refused(m: &Meshlens) -> f64 {
    m.get("/metrics")
        .text()
        .lines()
        .find_map(|l| l.strip_prefix("meshlens_admission_refused_total ")?.parse().ok())
        .unwrap_or(0.0)
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or("?".into(), |k| format!("{:.0} MiB", k as f64 / 1024.0))
}

fn phase(mesh: &TestMesh, m: &Meshlens, connections: usize, seconds: u64) {
    let pid = m.pid();
    let ns = |prefix: &str, suffix: &str| -> Vec<String> {
        (0..NAMESPACES).map(|i| format!("{prefix}ns-{i}{suffix}")).collect()
    };
    let ops: Vec<(&str, Vec<String>)> = vec![
        ("graph", vec![mesh.graph_path()]),
        ("health", ns("/api/namespaces/", "/health")),
        ("apps", ns("/api/namespaces/", "/apps")),
        ("status", vec!["/api/status".to_string()]),
    ];
    let (rss0, threads0) = (proc_status(pid, "VmRSS"), proc_status(pid, "Threads"));
    let (q0, refused0) = (mesh.prom.engine_queries(), refused(m));
    let share = connections / ops.len();
    let runs: Vec<(&str, Wrk)> = ops
        .iter()
        .map(|(name, paths)| (*name, Wrk::start(&m.addr, paths, share, seconds)))
        .collect();
    // RSS at each tenth of the phase, while the load runs.
    let samples: Vec<Option<u64>> = (1..=10)
        .map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(seconds * 100));
            proc_status(pid, "VmRSS")
        })
        .collect();
    let runs: Vec<(&str, WrkRun)> = runs.into_iter().map(|(n, w)| (n, w.finish())).collect();
    let (q1, refused1) = (mesh.prom.engine_queries(), refused(m));
    let (rss1, threads1) = (proc_status(pid, "VmRSS"), proc_status(pid, "Threads"));
    println!(
        "\n{connections} connections x {seconds} s ({share} per operation), mesh {NAMESPACES} namespaces x {WORKLOADS} workloads:"
    );
    println!(
        "  {:<7} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9} {:>9}  errors other than 503",
        "op", "requests", "req/s", "200", "503", "p50 ms", "p99 ms", "max ms"
    );
    for (name, r) in &runs {
        println!(
            "  {name:<7} {:>9} {:>9.1} {:>8} {:>8} {:>9.1} {:>9.1} {:>9.1}  {} other statuses{}, 503 without Retry-After {}, sockets: connect {} read {} write {} timeout {}",
            r.requests,
            r.requests as f64 / r.seconds.max(0.001),
            r.ok,
            r.busy,
            r.p50_ms,
            r.p99_ms,
            r.max_ms,
            r.other,
            if r.other > 0 { format!(" (e.g. {})", r.other_status) } else { String::new() },
            r.busy_without_retry_after,
            r.connect_errors,
            r.read_errors,
            r.write_errors,
            r.timeouts,
        );
    }
    println!(
        "  RSS {} -> {} (peak so far {}), threads {} -> {}; Prometheus {:.1} queries/s; admission refused {:.0}",
        mib(rss0),
        mib(rss1),
        mib(proc_status(pid, "VmHWM")),
        threads0.unwrap_or(0),
        threads1.unwrap_or(0),
        (q1 - q0) / seconds as f64,
        refused1 - refused0,
    );
    let each: Vec<String> = samples
        .iter()
        .map(|k| k.map_or("?".into(), |k| format!("{:.0}", k as f64 / 1024.0)))
        .collect();
    println!("  RSS at each tenth of the phase, MiB: {}", each.join(", "));
}

fn main() {
    let seconds: u64 =
        std::env::var("MESHLENS_LOAD_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let mesh = TestMesh::new(NAMESPACES, WORKLOADS);
    // The deployed allocator settings, and connection caps above the defaults (1,000 open,
    // 200 per address) so that wrk's 2,000 connections from one address all open.
    let mut env = integration_tests::server::DEPLOYED_ALLOCATOR_ENV.to_vec();
    env.extend([
        ("MESHLENS_SERVER__MAX_CONNECTIONS", "4000"),
        ("MESHLENS_SERVER__MAX_CONNECTIONS_PER_ADDRESS", "4000"),
    ]);
    let m = mesh.meshlens_with_env("", &env);
    let warm = m.get(&mesh.graph_path());
    assert_eq!(warm.status, 200, "warm-up: {}", warm.text());
    println!(
        "meshlens pid {}: warm-up graph of {} nodes; RSS {}",
        m.pid(),
        warm.json()["elements"]["nodes"].as_array().map_or(0, Vec::len),
        mib(proc_status(m.pid(), "VmRSS"))
    );
    phase(&mesh, &m, 200, seconds);
    phase(&mesh, &m, 2_000, seconds);
    phase(&mesh, &m, 200, seconds);
}
