//! Error messages name the offending parameter but never reflect request text back.

use integration_tests::inprocess::InProcess;

const MARK: &str = "zqmarkqz";

#[test]
fn error_bodies_do_not_reflect_request_text() {
    let cfg = "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n";
    let m = InProcess::start(cfg, &[], vec![]).expect("meshlens starts");
    let paths = [
        format!("/api/{MARK}"),
        format!("/api/namespaces/{MARK}/apps/{MARK}"),
        format!("/api/namespaces/bookinfo/apps/{MARK}"),
        format!("/namespaces/{MARK}/workloads"),
        format!("/namespaces/bookinfo/workloads/{MARK}"),
        format!("/namespaces/bookinfo/mesh?objects={MARK}"),
        format!("/namespaces/bookinfo/mesh/{MARK}/x/mesh_validations"),
        format!("/namespaces/bookinfo/mesh/virtualservices/{MARK}/mesh_validations"),
        format!("/namespaces/{MARK}/mesh_validations"),
        format!("/namespaces/bookinfo/services/{MARK}/mesh_validations"),
        format!("/api/namespaces/bookinfo/health?type={MARK}"),
        format!("/api/namespaces/bookinfo/health?rateInterval={MARK}"),
        format!("/api/namespaces/bookinfo/apps/{MARK}/health"),
        format!("/api/namespaces/graph?namespaces={MARK}"),
        format!("/api/namespaces/graph?namespaces=bookinfo&graphType={MARK}"),
        format!("/api/namespaces/graph?namespaces=bookinfo&duration={MARK}"),
        format!("/api/namespaces/graph?namespaces=bookinfo&appenders={MARK}"),
        format!("/api/namespaces/bookinfo/workloads/reviews-v1/graph?groupBy={MARK}"),
        format!("/api/namespaces/graph?namespaces=bookinfo&hide={MARK}"),
        format!("/api/namespaces/graph?namespaces=bookinfo&find={MARK}+%3D+1"),
        format!("/api/namespaces/graph?namespaces=bookinfo&find=app+%3D+{MARK}+and+rps+%3E+1"),
        format!("/api/namespaces/graph?namespaces=bookinfo&hops={MARK}"),
        format!("/api/namespaces/bookinfo/metrics?direction={MARK}"),
        format!("/api/namespaces/bookinfo/apps/reviews/dashboard?rateFunc={MARK}"),
        format!("/api/namespaces/bookinfo/apps/reviews/customdashboard/{MARK}"),
        format!(
            "/api/namespaces/bookinfo/apps/reviews/customdashboard/vertx-server?quantiles[]={MARK}"
        ),
    ];
    let mut reflected = Vec::new();
    for p in &paths {
        let r = m.get(p);
        assert!(r.status >= 400, "{p}: {}", r.status);
        let body = r.text();
        if body.contains(MARK) {
            reflected.push(format!("{p} -> {body}"));
        }
        let v = r.json();
        assert_eq!(v["code"], r.status, "{p}: {body}");
    }
    assert!(reflected.is_empty(), "request text reflected:\n{}", reflected.join("\n"));
}

/// A port on 127.0.0.1 where nothing listens (bound, then released).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("address").port()
}

fn wait_until(mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if check() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    false
}

/// A store that refuses connections, at a URL with credentials: `/ready` stays 200 and,
/// like `/status` and the draining `/ready` 503, shows callers without credentials no URL,
/// no credential and no error text. (`/ready` answered 503 "error sending request for url
/// (http://…)".)
#[test]
fn ready_and_status_show_no_backend_url_or_error_text_without_credentials() {
    let port = closed_port();
    let plugins = integration_tests::server::plugin_dir(&["metrics-prometheus"]);
    let cfg = format!(
        "[server]\nport = 0\nshutdown_grace = \"10s\"\n[auth]\nstrategy = \"login\"\npassword = \"no-echo-pw\"\n\
         [plugins]\ndirs = [\"{}\"]\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [metrics]\nstatus_interval = \"200ms\"\nstale_after = \"1s\"\n\
         [metrics.prometheus]\nurl = \"http://scraper:hunter2@127.0.0.1:{port}\"\n",
        plugins.path().display()
    );
    let m = InProcess::start(&cfg, &[], vec![plugins]).expect("meshlens starts");
    let leaks = |text: &str| {
        ["hunter2", "scraper", &format!(":{port}"), "error sending", "onnection refused"]
            .into_iter()
            .filter(|s| text.contains(s))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let ready = m.get("/ready");
    assert_eq!(ready.status, 200, "readiness does not follow the backend: {}", ready.text());
    assert!(leaks(&ready.text()).is_empty(), "{}", ready.text());
    assert!(
        wait_until(|| m.get("/api/status").text().contains("metrics backend has not answered")),
        "the outage shows in /status: {}",
        m.get("/api/status").text()
    );
    let public = m.get("/api/status").text();
    assert!(
        leaks(&public).is_empty(),
        "/status without credentials shows {:?}: {public}",
        leaks(&public)
    );
    let auth = integration_tests::server::basic_auth("admin", "no-echo-pw");
    let full = m.get_with("/api/status", &[("Authorization", &auth)]).text();
    assert!(full.contains("metrics backend has not answered"), "{full}");
    assert!(!full.contains("hunter2"), "credentials are never shown: {full}");

    // What the first SIGTERM does (the signal itself: process::lifecycle).
    m.state.lifecycle.begin_drain();
    assert!(wait_until(|| m.get("/ready").status == 503), "draining turns /ready to 503");
    let draining = m.get("/ready");
    assert_eq!(draining.json()["code"], 503);
    assert!(leaks(&draining.text()).is_empty(), "{}", draining.text());
}

/// Configuration errors name the key and never repeat a value: a password that reads as
/// a number from the environment (figment printed it: "found unsigned int `…`"), a port,
/// and a backend URL with credentials that does not parse.
#[test]
fn configuration_errors_do_not_echo_values() {
    integration_tests::server::ensure_built();
    let check = |env: &[(&str, &str)], config: &str| {
        let mut file = tempfile::Builder::new().suffix(".toml").tempfile().expect("temp file");
        std::io::Write::write_all(&mut file, config.as_bytes()).expect("write");
        let mut cmd = std::process::Command::new(integration_tests::server::binary());
        cmd.args(["serve", "--config"]).arg(file.path());
        cmd.current_dir(integration_tests::server::workspace_root()).envs(env.iter().copied());
        let out = cmd.output().expect("run meshlens");
        assert_eq!(out.status.code(), Some(2), "refused at start");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let base =
        "[server]\nport = 0\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n";
    let err = check(&[("MESHLENS_AUTH__PASSWORD", "73914682055")], base);
    assert!(err.contains("auth.password") && !err.contains("73914682055"), "{err}");
    let err = check(
        &[("MESHLENS_AUTH__PASSWORD", "x"), ("MESHLENS_SERVER__PORT", "hunter2secret")],
        base,
    );
    assert!(err.contains("server.port") && !err.contains("hunter2secret"), "{err}");
    let err = check(&[("MESHLENS_AUTH__STRATEGY", "hunter2secret")], base);
    assert!(err.contains("auth.strategy") && !err.contains("hunter2secret"), "{err}");

    let plugins = integration_tests::server::plugin_dir(&["metrics-prometheus"]);
    let cfg = format!(
        "{base}[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [\"{}\"]\n\
         [metrics.prometheus]\nurl = \"http://scraper:hunter2@[::1\"\n",
        plugins.path().display()
    );
    let err = check(&[], &cfg);
    assert!(err.contains("metrics.prometheus.url") && !err.contains("hunter2"), "{err}");
}

/// Every answer carries `X-Content-Type-Options: nosniff` (operations, errors, metrics,
/// the console's files); the console's page and files carry the Content-Security-Policy.
#[test]
fn every_answer_has_nosniff_and_the_console_a_content_security_policy() {
    let cfg = "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n";
    let m = InProcess::start(cfg, &[], vec![]).expect("meshlens starts");
    for (method, path, status) in [
        ("GET", "/api/status", 200),
        ("GET", "/api/namespaces", 200),
        ("GET", "/metrics", 200),
        ("GET", "/healthz", 200),
        ("GET", &format!("/api/{MARK}") as &str, 404),
        ("POST", "/api/namespaces", 405),
        ("GET", "/console/", 200),
        ("GET", "/console/js/app.js", 200),
        ("GET", "/console/favicon.svg", 200),
    ] {
        let r = integration_tests::server::request(&m.addr, method, path, &[]);
        assert_eq!(r.status, status, "{method} {path}");
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"), "{method} {path}");
        if path.starts_with("/console/") {
            let csp = r.header("content-security-policy").unwrap_or_default();
            assert!(
                csp.starts_with("default-src 'self';") && csp.contains("frame-ancestors 'none'"),
                "{path}: {csp:?}"
            );
        }
    }
}
