//! namespaceValidations over a large namespace, at 1x and 4x, to show that the cost grows
//! linearly. 1x = 1,000 VirtualServices, 1,000 DestinationRules, 100 Gateways,
//! 1,000 Services (2,000 workloads). Each size runs in its own child process so that its
//! peak memory (VmHWM) is its own.
//!
//! Run: `cargo bench -p meshlens-validations --bench validations`
//! (`MESHLENS_BENCH_SCALES=1,2,4,8` for other sizes)

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use meshlens_validations::*;
use serde_json::json;

const NS: &str = "bench";

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn input(scale: usize) -> ValidationInput {
    let (n, gateways) = (1000 * scale, 100 * scale);
    let mut input = ValidationInput::default();
    let obj = |kind, name: String, spec| MeshObject { kind, namespace: NS.into(), name, spec };
    for g in 0..gateways {
        input.objects.push(obj(
            ObjectKind::Gateway,
            format!("gw-{g}"),
            // Every 10th gateway shares its host with the next: some multi-match findings.
            json!({"selector": {"istio": "ingressgateway"},
                   "servers": [{"port": {"number": 80, "name": "http", "protocol": "HTTP"},
                                "hosts": [format!("h{}.example.com", if g % 10 == 1 { g - 1 } else { g }), format!("*.w{g}.example.com")]}]}),
        ));
    }
    for i in 0..n {
        let svc = format!("svc-{i}");
        input.services.push(ServiceInfo {
            namespace: NS.into(),
            name: svc.clone(),
            labels: labels(&[("app", &svc)]),
            selector: labels(&[("app", &svc)]),
        });
        for v in ["v1", "v2"] {
            input.workloads.push(WorkloadInfo {
                namespace: NS.into(),
                name: format!("{svc}-{v}"),
                labels: labels(&[("app", &svc), ("version", v)]),
            });
        }
        input.objects.push(obj(
            ObjectKind::DestinationRule,
            svc.clone(),
            json!({"host": svc, "subsets": [{"name": "v1", "labels": {"version": "v1"}}, {"name": "v2", "labels": {"version": "v2"}}]}),
        ));
        // Every 10th route is broken (weights sum to 90); every 5th goes through a gateway.
        let w2 = if i % 10 == 0 { 40 } else { 50 };
        let gateways = if i % 5 == 0 { json!([format!("gw-{}", i % gateways)]) } else { json!([]) };
        input.objects.push(obj(
            ObjectKind::VirtualService,
            svc.clone(),
            json!({"hosts": [svc], "gateways": gateways, "http": [{"route": [
                {"destination": {"host": svc, "subset": "v1"}, "weight": 50},
                {"destination": {"host": format!("svc-{i}.bench.svc.cluster.local"), "subset": "v2"}, "weight": w2}]}]}),
        ));
    }
    input
}

fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// CPU time of this thread in ns (`/proc/thread-self/schedstat`): unlike wall time it
/// does not grow when other processes share the cores.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn run_size(scale: usize) {
    let input = input(scale);
    let before = vm_hwm_kib();
    let runs = 5;
    let mut times = Vec::with_capacity(runs);
    let mut cpu = Vec::with_capacity(runs);
    let mut json_len = 0;
    let mut ser = Duration::ZERO;
    let mut invalid = 0;
    let mut warned = 0;
    for _ in 0..runs {
        let (t, c) = (Instant::now(), thread_cpu_ns());
        let out = validate_namespace(NS, &input);
        times.push(t.elapsed());
        cpu.push(thread_cpu_ns().saturating_sub(c));
        let t = Instant::now();
        json_len = serde_json::to_vec(&out).map(|v| v.len()).unwrap_or(0);
        ser = t.elapsed();
        let all = out[NS].values().flat_map(|m| m.values());
        (invalid, warned) = all.fold((0, 0), |(i, w), v| {
            (i + usize::from(!v.valid), w + usize::from(v.valid && !v.checks.is_empty()))
        });
    }
    times.sort();
    cpu.sort();
    let objects = input.objects.len();
    println!(
        "scale {scale}x: {objects} objects, {} services, {} workloads: validate_namespace median {:.1} ms wall (min {:.1}, max {:.1}), {:.1} ms CPU; \
         JSON {:.1} KiB in {:.1} ms; {invalid} invalid, {warned} warned-only; VmHWM {} KiB (after building the input {} KiB)",
        input.services.len(),
        input.workloads.len(),
        times[runs / 2].as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[runs - 1].as_secs_f64() * 1e3,
        cpu[runs / 2] as f64 / 1e6,
        json_len as f64 / 1024.0,
        ser.as_secs_f64() * 1e3,
        vm_hwm_kib(),
        before,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(pos) = args.iter().position(|a| a == "--size") {
        let scale = args.get(pos + 1).and_then(|s| s.parse().ok()).unwrap_or(1);
        run_size(scale);
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        eprintln!("cannot find the bench executable");
        return;
    };
    // MESHLENS_BENCH_SCALES=1,2,4,8 for more points.
    let scales: Vec<usize> = std::env::var("MESHLENS_BENCH_SCALES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 4]);
    for scale in scales {
        match Command::new(&exe).args(["--size", &scale.to_string()]).status() {
            Ok(s) if s.success() => {}
            other => eprintln!("size {scale}x failed: {other:?}"),
        }
    }
}
