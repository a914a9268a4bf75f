//! Probes, `/status` from cached state, the shutdown sequence, and a kind the service
//! account may not read: the real binary with a real Prometheus (stopped with SIGSTOP to
//! play a hung backend) and the loopback Kubernetes API. The kind that may not be read is
//! API behaviour, checked on the service in this process.

use std::{
    io::{Read, Write},
    net::TcpStream,
    process::Command,
    time::{Duration, Instant},
};

use integration_tests::{
    inprocess::InProcess,
    kube_api::{KubeApi, Options, read_fixtures},
    prometheus::PromServer,
    server::{Meshlens, Response, basic_auth, plugin_dir, request, request_within},
};
use serde_json::Value;

fn config(prom: &PromServer, plugins: &std::path::Path, server: &str, extra: &str) -> String {
    format!(
        "[server]\nport = 0\n{server}\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [\"{}\"]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [metrics]\nbackend = \"prometheus\"\nstatus_interval = \"200ms\"\nstale_after = \"2s\"\n{extra}\n\
         [metrics.prometheus]\nurl = \"{}\"\n",
        plugins.display(),
        prom.url()
    )
}

fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{sig} {pid}");
}

/// Polls `path` of the service at `addr` (at most 300 times, 100 ms apart) until it
/// answers `status`.
fn wait_for(addr: &str, path: &str, status: u16) -> Response {
    let mut last = None;
    for _ in 0..300 {
        let r = request(addr, "GET", path, &[]);
        if r.status == status {
            return r;
        }
        last = Some(r);
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{path} never answered {status}; last: {:?}", last.map(|r| (r.status, r.text())))
}

/// Like [`wait_for`] for what must happen right away: signal delivery is asynchronous, so
/// a few tries (at most 20, 25 ms apart).
fn wait_briefly(m: &Meshlens, path: &str, status: u16) -> Response {
    let mut r = m.get(path);
    for _ in 0..20 {
        if r.status == status {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
        r = m.get(path);
    }
    assert_eq!(r.status, status, "{path}: {}", r.text());
    r
}

/// Polls `check` (at most 300 times, 100 ms apart) until it holds.
fn wait_until(mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..300 {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn urls(status: &Value) -> Vec<String> {
    status["externalServices"]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s["url"].as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

#[test]
fn probes_and_status_stay_quick_while_prometheus_hangs() {
    let mut prom = PromServer::start_empty();
    let plugins = plugin_dir(&["metrics-prometheus"]);
    let cfg = config(&prom, plugins.path(), "", "timeout = \"5s\"\n")
        .replace("strategy = \"anonymous\"", "strategy = \"login\"\npassword = \"lifecycle-secret\"")
        .replace("[metrics.prometheus]", "[external_services.grafana]\nurl = \"http://grafana.example:3000\"\n[metrics.prometheus]");
    let m = Meshlens::start(&cfg, &[], vec![plugins]).expect("meshlens starts");

    // Liveness answers at once, at both paths; readiness once the caches synced.
    for path in ["/healthz", "/api/healthz"] {
        let r = m.get(path);
        assert_eq!((r.status, r.json()["status"].clone()), (200, "ok".into()), "{path}");
    }
    assert_eq!(wait_for(&m.addr, "/ready", 200).json()["status"], "ready");
    assert_eq!(m.get("/api/ready").status, 200);

    // Callers without credentials see no URLs; authenticated ones do.
    let public = m.get("/api/status");
    assert_eq!(public.status, 200);
    let text = public.text();
    assert!(urls(&public.json()).is_empty(), "{text}");
    assert!(!text.contains(&prom.url()) && !text.contains("grafana.example"), "{text}");
    assert!(
        public.json()["externalServices"][0]["version"].as_str().is_some_and(|v| v != "unknown"),
        "backend version from the probe: {text}"
    );
    // A public route checks no password: the session token from /token shows the details.
    let auth = basic_auth("admin", "lifecycle-secret");
    let token = m.get_with("/api/token", &[("Authorization", &auth)]).json()["token"].clone();
    let bearer = format!("Bearer {}", token.as_str().expect("a session token"));
    let full = m.get_with("/api/status", &[("Authorization", &bearer)]).json();
    assert!(urls(&full).iter().any(|u| u.starts_with(&prom.url())), "{full}");
    assert!(urls(&full).iter().any(|u| u.contains("grafana.example")), "{full}");

    // A hung Prometheus: /status and /healthz still answer (client timeout 2 s each).
    let pid = prom.pid().expect("prometheus runs");
    signal(pid, "STOP");
    std::thread::sleep(Duration::from_millis(500));
    let mut worst = Duration::ZERO;
    for path in ["/api/status", "/healthz", "/api/status"] {
        let started = Instant::now();
        let r = request_within(&m.addr, "GET", path, &[], Duration::from_secs(2))
            .unwrap_or_else(|e| panic!("{path} did not answer while Prometheus hangs: {e}"));
        worst = worst.max(started.elapsed());
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }
    println!("slowest /status or /healthz answer with Prometheus stopped: {worst:?}");
    // The outage (stale_after = 2s) shows in /status, in /metrics and as 503 on what needs
    // the backend; /ready stays 200: every replica shares the outage, and pages that never
    // query the backend keep their endpoints.
    let warned = wait_until(|| {
        let s = m.get("/api/status").json();
        s["warningMessages"].as_array().is_some_and(|w| {
            w.iter()
                .any(|w| w.as_str().is_some_and(|w| w.contains("metrics backend has not answered")))
        })
    });
    assert!(warned, "no /status warning: {}", m.get("/api/status").text());
    let public = m.get("/api/status").text();
    assert!(!public.contains(&prom.url()), "{public}");
    assert!(m.get("/metrics").text().contains("meshlens_backend_up 0"), "gauge while down");
    let r = m.get("/ready");
    assert_eq!((r.status, r.json()["status"].clone()), (200, "ready".into()), "{}", r.text());
    let r = m.get_with("/api/namespaces", &[("Authorization", &auth)]);
    assert_eq!(r.status, 200, "namespaces need no backend: {}", r.text());
    let r = m.get_with(
        "/api/namespaces/bookinfo/metrics?duration=60s&step=15s",
        &[("Authorization", &auth)],
    );
    assert_eq!(r.status, 503, "an operation that needs the backend: {}", r.text());
    assert_eq!(r.json()["code"], 503);
    signal(pid, "CONT");
    assert!(
        wait_until(|| m.get("/metrics").text().contains("meshlens_backend_up 1")),
        "gauge once the backend answers again"
    );
    assert!(!m.get("/api/status").text().contains("metrics backend has not answered"));
    prom.stop();
}

#[test]
fn sigterm_turns_unready_keeps_accepting_then_drains_and_exits() {
    let prom = PromServer::start_empty();
    let plugins = plugin_dir(&["metrics-prometheus"]);
    let server = "shutdown_grace = \"1s\"\ndrain_timeout = \"20s\"";
    let cfg = config(&prom, plugins.path(), server, "timeout = \"15s\"\n");
    let mut m = Meshlens::start(&cfg, &[], vec![plugins]).expect("meshlens starts");
    wait_for(&m.addr, "/ready", 200);

    // One connection that never sends anything, one keep-alive connection left idle.
    let _silent = TcpStream::connect(&m.addr).expect("connect");
    let mut keep = TcpStream::connect(&m.addr).expect("connect");
    keep.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").expect("send");
    keep.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut buf = [0u8; 1024];
    let n = keep.read(&mut buf).expect("keep-alive answer");
    assert!(
        String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );

    // A slow request: Prometheus is stopped, so its queries wait.
    let pid = prom.pid().expect("prometheus runs");
    signal(pid, "STOP");
    let addr = m.addr.clone();
    let slow = std::thread::spawn(move || {
        request_within(
            &addr,
            "GET",
            "/api/namespaces/bookinfo/health?type=app",
            &[],
            Duration::from_secs(30),
        )
    });
    std::thread::sleep(Duration::from_millis(500));

    m.signal("TERM");
    // At once (as soon as the signal is delivered): not ready, yet still accepting and answering.
    let r = wait_briefly(&m, "/ready", 503);
    assert!(
        r.json()["message"].as_str().is_some_and(|s| s.contains("shutting down")),
        "{}",
        r.text()
    );
    assert_eq!(m.get("/healthz").status, 200);

    // Past the grace period the slow request is still in flight; let Prometheus go on.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(m.alive(), "the process must wait for the in-flight request");
    signal(pid, "CONT");
    let answer = slow.join().expect("slow request thread").expect("the slow request completes");
    assert_eq!(answer.status, 200, "{}", answer.text());

    // Then it exits on its own, not held by the idle connections.
    assert_eq!(m.wait_exit(Duration::from_secs(25)), Some(0), "exit status after the drain");
    assert!(
        m.logged("every connection closed"),
        "the drain ended because connections closed, not at the deadline"
    );
    let mut rest = Vec::new();
    assert_eq!(
        keep.read_to_end(&mut rest).ok(),
        Some(0),
        "the idle keep-alive connection was closed"
    );
}

#[test]
fn a_second_signal_exits_at_once() {
    let prom = PromServer::start_empty();
    let plugins = plugin_dir(&["metrics-prometheus"]);
    let server = "shutdown_grace = \"30s\"\ndrain_timeout = \"30s\"";
    let cfg = config(&prom, plugins.path(), server, "timeout = \"30s\"\n");
    let mut m = Meshlens::start(&cfg, &[], vec![plugins]).expect("meshlens starts");
    wait_for(&m.addr, "/ready", 200);
    let pid = prom.pid().expect("prometheus runs");
    signal(pid, "STOP");
    let addr = m.addr.clone();
    let _slow = std::thread::spawn(move || {
        request_within(
            &addr,
            "GET",
            "/api/namespaces/bookinfo/health?type=app",
            &[],
            Duration::from_secs(60),
        )
    });
    std::thread::sleep(Duration::from_millis(300));
    m.signal("TERM");
    wait_briefly(&m, "/ready", 503);
    m.signal("INT");
    // Grace and drain would take a minute; the second signal ends it now.
    let code = m.wait_exit(Duration::from_secs(10));
    signal(pid, "CONT");
    assert_eq!(code, Some(1), "exit status after a second signal");
    assert!(m.logged("second signal"));
}

#[test]
fn a_kind_the_service_account_may_not_read_counts_as_absent() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let api = rt.block_on(KubeApi::start(
        read_fixtures(&[root.join("../config/demo"), root.join("fixtures/cluster")]),
        Options::default(),
    ));
    api.forbid("cronjobs");
    let dir = tempfile::tempdir().expect("temp dir");
    let kc = api.write_kubeconfig(dir.path());
    let prom = PromServer::start_empty();
    let plugins = plugin_dir(&["metrics-prometheus"]);
    let cfg = config(&prom, plugins.path(), "", "").replace(
        "source = \"snapshot\"\nsnapshot = [\"config/demo\"]",
        &format!(
            "source = \"kube\"\nkubeconfig = {:?}\nsync_timeout = \"20s\"",
            kc.display().to_string()
        ),
    );
    let m = InProcess::start(&cfg, &[], vec![plugins, dir]).expect("meshlens starts");

    // Ready, and the other kinds are served.
    wait_for(&m.addr, "/ready", 200);
    let wl = m.get("/api/namespaces/bookinfo/workloads");
    assert_eq!(wl.status, 200, "{}", wl.text());
    assert!(!wl.json()["workloads"].as_array().expect("workloads").is_empty());
    let status = m.get("/api/status").json();
    let warnings: Vec<&str> = status["warningMessages"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(warnings.iter().any(|w| w.contains("CronJob") && w.contains("absent")), "{warnings:?}");
    assert!(
        !warnings.iter().any(|w| w.contains("Deployment")),
        "only the forbidden kind is named: {warnings:?}"
    );
}

#[test]
fn a_plugins_log_lines_reach_the_hosts_log_with_its_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("metrics.om");
    std::fs::write(&file, "# TYPE up gauge\nup{job=\"a\"} 1 1700000000\n# EOF\n")
        .expect("write metrics file");
    let plugins = plugin_dir(&["metrics-openmetrics-file"]);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [\"{}\"]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [metrics]\nbackend = \"openmetrics_file\"\n[metrics.openmetrics_file]\npath = {:?}\n",
        plugins.path().display(),
        file.display().to_string()
    );
    let m = Meshlens::start(&cfg, &[], vec![plugins, dir]).expect("meshlens starts");
    // The embedded store logs its load inside the plugin, during configure.
    let line = m
        .logs
        .lock()
        .map(|l| l.iter().find(|l| l.contains("loaded metrics file")).cloned())
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("no plugin log line in the host's stderr"));
    assert!(line.contains("metrics-openmetrics-file"), "the line names the plugin: {line}");
    assert!(line.contains("INFO"), "{line}");
}
