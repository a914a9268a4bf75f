//! The service-level operations, config, auth and plugin loading. The operations' answers
//! are checked on the service served in this process ([`serve`]); start-up failures (exit
//! code 2), environment overrides, signals, a plugin's panic and the plugin listing of the
//! CLI on the real binary.

use integration_tests::inprocess::InProcess;
use integration_tests::server::{Meshlens, basic_auth, binary, plugin_dir, plugin_library};
use serde_json::Value;

const ANON: &str = "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n";

fn login(extra: &str) -> String {
    format!(
        "[server]\nport = 0\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [auth]\nstrategy = \"login\"\nusername = \"alice\"\npassword = \"pa55word\"\n{extra}"
    )
}

fn start(config: &str) -> Meshlens {
    Meshlens::start(config, &[], vec![]).unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"))
}

/// The service in this process.
fn serve(config: &str) -> InProcess {
    InProcess::start(config, &[], vec![])
        .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"))
}

fn assert_error(resp: &integration_tests::server::Response, status: u16) -> Value {
    assert_eq!(resp.status, status, "body: {}", resp.text());
    let body = resp.json();
    assert_eq!(body["code"], status, "{body}");
    assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    body
}

#[test]
fn status_answers_at_all_four_paths_with_the_status_info_shape() {
    let m = serve(ANON);
    for path in ["/", "/status", "/api", "/api/status", "/api/config"] {
        let r = m.get(path);
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("content-type"), Some("application/json"));
        let v = r.json();
        assert_eq!(v["status"]["state"], "running", "{path}: {v}");
        assert_eq!(v["status"]["version"], env!("CARGO_PKG_VERSION"));
        let services = v["externalServices"].as_array().expect("externalServices array");
        assert!(!services.is_empty());
        for s in services {
            assert!(s["name"].is_string() && s["version"].is_string(), "{s}");
        }
        assert!(v["warningMessages"].is_array());
    }
}

#[test]
fn unknown_paths_are_404_and_other_methods_405_with_the_error_body() {
    let m = serve(ANON);
    for path in ["/nope", "/api/nope", "/api/namespaces/x/unknown/thing", "/apis/status"] {
        let body = assert_error(&m.get(path), 404);
        assert!(
            !body["message"].as_str().unwrap_or_default().contains("unknown/thing"),
            "no echo of the path"
        );
    }
    let r = integration_tests::server::request(
        &m.addr,
        "POST",
        "/api/status",
        &[("Content-Length", "0")],
    );
    assert_error(&r, 405);
    assert!(r.header("allow").is_some_and(|a| a.contains("GET")));
    let r = integration_tests::server::request(&m.addr, "DELETE", "/namespaces/x/workloads", &[]);
    assert_error(&r, 405);
}

#[test]
fn web_root_moves_every_route() {
    let m = serve(&ANON.replace("port = 0\n", "port = 0\nweb_root = \"/meshlens\"\n"));
    assert_eq!(m.get("/meshlens/api/status").status, 200);
    assert_eq!(m.get("/meshlens/status").status, 200);
    assert_error(&m.get("/api/status"), 404);
}

fn start_err(config: &str, env: &[(&str, &str)]) -> (Option<i32>, String) {
    match Meshlens::start(config, env, vec![]) {
        Ok(_) => panic!("meshlens started with a bad config:\n{config}"),
        Err(e) => (e.code, e.stderr),
    }
}

#[test]
fn config_errors_stop_start_up_naming_the_key() {
    let cases = [
        (
            "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\nbogus_key = 1\n".to_string(),
            "auth.bogus_key",
        ),
        (
            "[server]\nport = \"eighty\"\n[auth]\nstrategy = \"anonymous\"\n".to_string(),
            "server.port",
        ),
        (
            "[server]\nport = 0\nrequest_timeout = \"soon\"\n[auth]\nstrategy = \"anonymous\"\n"
                .to_string(),
            "server.request_timeout",
        ),
        ("[server]\nport = 0\n[auth]\nstrategy = \"login\"\n".to_string(), "auth.password"),
        (login("signing_key = \"too-short\"\n"), "auth.signing_key"),
        (format!("{ANON}[unknown_section]\nx = 1\n"), "unknown_section"),
        (format!("{ANON}[metrics]\nbackend = \"prometheus\"\nbogus = 2\n"), "metrics.bogus"),
        (
            ANON.replace("[cluster]\n", "[cluster]\nexclude_namespaces = [\"(\"]\n"),
            "cluster.exclude_namespaces",
        ),
    ];
    for (config, key) in cases {
        let (code, stderr) = start_err(&config, &[]);
        assert_eq!(code, Some(2), "{key}: {stderr}");
        assert!(stderr.contains(key), "expected `{key}` in: {stderr}");
    }
    let (code, stderr) = start_err(ANON, &[("MESHLENS_SERVER__PORT", "not-a-port")]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("server.port"), "{stderr}");
}

#[test]
fn environment_overrides_the_file() {
    // The file asks for login without a password (an error) and a privileged port;
    // the environment fixes both.
    let file = "[server]\nport = 1\n[auth]\nstrategy = \"login\"\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n";
    let m = Meshlens::start(
        file,
        &[("MESHLENS_SERVER__PORT", "0"), ("MESHLENS_AUTH__STRATEGY", "anonymous")],
        vec![],
    )
    .expect("env overrides apply");
    assert!(!m.addr.ends_with(":1"));
    assert_eq!(m.get("/api/grafana").status, 503, "anonymous: no credentials needed");
}

fn token_of(m: &InProcess) -> String {
    let r = m.get_with("/token", &[("Authorization", &basic_auth("alice", "pa55word"))]);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["token"].as_str().expect("token").to_string()
}

#[test]
fn token_is_issued_for_basic_credentials_and_opens_other_operations() {
    let m = serve(&login("[external_services.grafana]\nurl = \"http://grafana:3000\"\n"));
    let r = m.get_with("/api/token", &[("Authorization", &basic_auth("alice", "pa55word"))]);
    assert_eq!(r.status, 200);
    let v = r.json();
    let token = v["token"].as_str().expect("token");
    assert_eq!(token.split('.').count(), 3);
    let exp = v["expired_at"].as_str().expect("expired_at");
    // Go's time.String(): "2026-11-23 10:04:05.123456789 +0000 UTC m=+86400.000000001"
    let parts: Vec<&str> = exp.split(' ').collect();
    assert_eq!(parts.len(), 5, "{exp}");
    assert_eq!(parts[0].len(), 10);
    assert_eq!((parts[2], parts[3]), ("+0000", "UTC"));
    assert!(parts[4].starts_with("m=+") && parts[4].contains('.'), "{exp}");
    let bearer = format!("Bearer {token}");
    assert_eq!(m.get_with("/api/grafana", &[("Authorization", &bearer)]).status, 200);
    assert_eq!(
        m.get_with("/api/grafana", &[("Authorization", &basic_auth("alice", "pa55word"))]).status,
        200
    );
    // / and /status need nothing.
    assert_eq!(m.get("/api/status").status, 200);
    assert_eq!(m.get("/").status, 200);
}

#[test]
fn every_401_case_has_the_error_body_and_www_authenticate() {
    let m = serve(&login(
        "signing_key = \"0123456789abcdef0123456789abcdef\"\ntoken_lifetime = \"1s\"\n",
    ));
    let other = serve(&login("signing_key = \"fedcba9876543210fedcba9876543210\"\n"));
    let good = token_of(&m);
    let foreign = token_of(&other);
    let parts: Vec<&str> = good.split('.').collect();
    // Same header and signature, payload changed to another user with a later expiry.
    let tampered =
        format!("{}.eyJ1c2VybmFtZSI6InJvb3QiLCJleHAiOjk5OTk5OTk5OTl9.{}", parts[0], parts[2]);
    // {"alg":"none","typ":"JWT"} with the real payload and no signature.
    let unsigned = format!("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.{}.", parts[1]);
    let cases: Vec<(&str, Option<String>)> = vec![
        ("missing", None),
        ("malformed header", Some("Bearer".into())),
        ("garbage token", Some("Bearer not.a.token".into())),
        ("wrong signature", Some(format!("Bearer {foreign}"))),
        ("alg none", Some(format!("Bearer {unsigned}"))),
        ("tampered", Some(format!("Bearer {tampered}"))),
        ("wrong password", Some(basic_auth("alice", "wrong"))),
        ("wrong user", Some(basic_auth("mallory", "pa55word"))),
        ("unknown scheme", Some("Digest abc".into())),
    ];
    for (what, header) in &cases {
        let headers: Vec<(&str, &str)> =
            header.iter().map(|h| ("Authorization", h.as_str())).collect();
        let r = m.get_with("/api/grafana", &headers);
        assert_error(&r, 401);
        assert!(r.header("www-authenticate").is_some(), "{what}: no WWW-Authenticate");
    }
    // Expired: the lifetime is one second.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let r = m.get_with("/api/grafana", &[("Authorization", &format!("Bearer {good}"))]);
    assert_error(&r, 401);
    // GET /token itself demands the Basic credentials.
    assert_error(&m.get("/token"), 401);
    assert_error(&m.get_with("/token", &[("Authorization", &basic_auth("alice", "nope"))]), 401);
}

#[test]
fn grafana_descriptor_status_codes() {
    let off = serve(&format!(
        "{ANON}[external_services.grafana]\nurl = \"http://g:3000\"\ndisplay_link = false\n"
    ));
    let r = off.get("/api/grafana");
    assert_eq!(r.status, 204);
    assert!(r.body.is_empty());
    assert_error(&serve(ANON).get("/api/grafana"), 503);
    assert_error(
        &serve(&format!("{ANON}[external_services.grafana]\nurl = \"grafana:3000/x\"\n"))
            .get("/api/grafana"),
        503,
    );
    let ok = serve(&format!(
        "{ANON}[external_services.grafana]\nurl = \"https://grafana.example:3000\"\nvar_service = \"var-svc\"\n"
    ));
    let v = ok.get("/api/grafana").json();
    assert_eq!(v["url"], "https://grafana.example:3000");
    assert_eq!(v["varNamespace"], "var-namespace");
    assert_eq!(v["varService"], "var-svc");
    assert_eq!(v["varWorkload"], "var-workload");
    assert!(v["serviceDashboardPath"].is_string() && v["workloadDashboardPath"].is_string());
    // Grafana appears in /status when configured.
    let status = ok.get("/status").json();
    assert!(
        status["externalServices"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "Grafana" && s["url"] == "https://grafana.example:3000")
    );
}

#[test]
fn tracing_descriptor_status_codes() {
    assert_error(&serve(ANON).get("/api/jaeger"), 404);
    assert_error(
        &serve(&format!("{ANON}[external_services.tracing]\nurl = \"jaeger-query\"\n"))
            .get("/api/jaeger"),
        406,
    );
    let m = serve(&format!("{ANON}[external_services.tracing]\nurl = \"http://jaeger:16686\"\n"));
    assert_eq!(m.get("/api/jaeger").json(), serde_json::json!({"url": "http://jaeger:16686"}));
}

fn plugins_config(dir: &std::path::Path) -> String {
    format!("{ANON}[plugins]\ndirs = [\"{}\"]\n", dir.display())
}

#[test]
fn refused_libraries_are_reported_and_the_service_keeps_serving() {
    let dir = plugin_dir(&["wrong-api", "dup-one"]);
    std::fs::write(
        dir.path().join(format!(
            "{}notaplugin{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        )),
        b"just text",
    )
    .unwrap();
    let config = plugins_config(dir.path());
    let m = start(&config);
    let warnings = m.get("/status").json()["warningMessages"].clone();
    let text = warnings.to_string();
    assert!(text.contains("libwrong_api"), "{text}");
    assert!(
        text.contains("0.0.9") && text.contains(plugin_api::API_VERSION),
        "both versions named: {text}"
    );
    assert!(text.contains("notaplugin"), "{text}");
    assert!(!text.contains("libdup_one"), "dup-one loads fine: {text}");

    // `meshlens plugins` prints the same picture.
    let mut file = tempfile::Builder::new().suffix(".toml").tempfile().unwrap();
    std::io::Write::write_all(&mut file, config.as_bytes()).unwrap();
    let out = std::process::Command::new(binary())
        .arg("plugins")
        .arg("--config")
        .arg(file.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    let header = table.lines().next().unwrap_or_default();
    for col in ["NAME", "KIND", "VERSION", "FILE"] {
        assert!(header.contains(col), "{table}");
    }
    let dup_line =
        table.lines().find(|l| l.starts_with("duplicate")).unwrap_or_else(|| panic!("{table}"));
    assert!(dup_line.contains("appender") && dup_line.contains("libdup_one"), "{dup_line}");
    assert!(
        table.contains("REFUSED") && table.contains("0.0.9") && table.contains("notaplugin"),
        "{table}"
    );
}

#[test]
fn two_components_with_one_name_stop_start_up_naming_both_files() {
    let dir = plugin_dir(&["dup-one", "dup-two"]);
    let (code, stderr) = start_err(&plugins_config(dir.path()), &[]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("libdup_one")
            && stderr.contains("libdup_two")
            && stderr.contains("duplicate"),
        "{stderr}"
    );
}

#[test]
fn a_panicking_plugin_does_not_take_the_host_down() {
    let dir = plugin_dir(&["panicking"]);
    let mut m =
        start(&format!("{}[metrics]\nbackend = \"panicking\"\n", plugins_config(dir.path())));
    // The backend panics in status(): the entry shows an unknown version, the request succeeds.
    for _ in 0..3 {
        let v = m.get("/status").json();
        let store = &v["externalServices"][0];
        assert_eq!(store["name"], "panicking");
        assert_eq!(store["version"], "unknown");
    }
    // A request that reaches the panicking query, or an appender that panics, is a 500;
    // the next request is served.
    let r = m.get("/api/namespaces/bookinfo/health");
    assert_error(&r, 500);
    assert!(r.json()["message"].as_str().unwrap_or_default().contains("panicked"), "{}", r.text());
    assert_error(&m.get("/api/namespaces/graph?namespaces=bookinfo&appenders=panicInputs"), 500);
    assert_eq!(m.get("/status").status, 200);
    assert!(m.alive());
    assert!(plugin_library("panicking").exists());

    // With a working store, an appender that panics in apply fails only its request.
    let f = integration_tests::prometheus::fixture(&["--topology", "demo", "--minutes", "20"]);
    let dir = plugin_dir(&["panicking", "metrics-openmetrics-file"]);
    let cfg = format!(
        "{}[metrics]\nbackend = \"openmetrics_file\"\n[metrics.openmetrics_file]\npath = \"{}\"\n",
        plugins_config(dir.path()),
        f.openmetrics.display()
    );
    let mut m = Meshlens::start(&cfg, &[], vec![dir]).expect("meshlens starts");
    let r = m.get("/api/namespaces/graph?namespaces=bookinfo&appenders=panicApply");
    assert_error(&r, 500);
    let ok = m.get("/api/namespaces/graph?namespaces=bookinfo&appenders=");
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert!(ok.json()["elements"]["nodes"].as_array().is_some_and(|n| !n.is_empty()));
    assert!(m.alive());
}

#[test]
fn sigterm_shuts_down_gracefully() {
    let mut m = start(ANON);
    assert_eq!(m.get("/status").status, 200);
    assert_eq!(m.terminate(), Some(0));
}

#[test]
fn swagger_document_is_served_and_every_documented_path_is_routed() {
    let m = serve(ANON);
    let doc = m.get("/api/swagger.json").json();
    assert_eq!(doc["swagger"], "2.0");
    let paths = doc["paths"].as_object().expect("paths");
    assert!(paths.len() >= 26, "{} paths", paths.len());
    for path in paths.keys() {
        let concrete: String = path
            .split('/')
            .map(|s| if s.starts_with('{') { "x" } else { s })
            .collect::<Vec<_>>()
            .join("/");
        let r = m.get(&format!("/api{concrete}"));
        if r.status == 404 {
            assert_ne!(
                r.json()["message"],
                "no such operation",
                "{path} is documented but not routed"
            );
        }
    }
}

fn mesh_with_pilot(image: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let y = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: istio-system\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: istio-pilot\n  namespace: istio-system\n\
         spec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: pilot}}\n  template:\n    metadata:\n      labels: {{app: pilot}}\n\
         ---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: istio-pilot-6d4b9c00-abcde\n  namespace: istio-system\n  labels: {{app: pilot}}\n  \
         ownerReferences:\n  - {{apiVersion: apps/v1, kind: ReplicaSet, name: istio-pilot-6d4b9c00, uid: u1, controller: true}}\n\
         spec:\n  containers:\n  - {{name: discovery, image: \"docker.io/istio/pilot:{image}\"}}\n"
    );
    std::fs::write(dir.path().join("mesh.yaml"), y).expect("write manifests");
    dir
}

#[test]
fn an_unsupported_mesh_version_is_a_status_warning() {
    for (tag, warned) in [("0.8.0", true), ("1.20.0", false)] {
        let dir = mesh_with_pilot(tag);
        let cfg = format!(
            "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"{}\"]\n",
            dir.path().display()
        );
        let m = InProcess::start(&cfg, &[], vec![dir]).expect("meshlens starts");
        let v = m.get("/api/status").json();
        let istio = v["externalServices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "Istio")
            .cloned();
        assert_eq!(istio.map(|s| s["version"].clone()), Some(serde_json::json!(tag)), "{v}");
        let warning =
            v["warningMessages"].as_array().unwrap().iter().any(|w| {
                w.as_str().is_some_and(|w| w.contains("not supported") && w.contains(tag))
            });
        assert_eq!(warning, warned, "{tag}: {v}");
    }
}

/// A plugin library or folder someone else could replace is refused before it is opened,
/// with a message naming the file and why, and listed like any other refusal: a
/// group-writable file, a file owned by another user (when the test runs as root and can
/// make one), and a world-writable folder. A world-writable folder with the sticky bit (as
/// /tmp, which holds every one of these folders) is fine. (Each of them was loaded.)
#[test]
fn plugins_others_could_replace_are_refused_naming_file_and_reason() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let lib = |p: &str| plugin_library(p).file_name().expect("name").to_owned();
    let mixed = plugin_dir(&["dup-one", "metrics-prometheus"]);
    let group_writable = mixed.path().join(lib("dup-one"));
    std::fs::set_permissions(&group_writable, std::fs::Permissions::from_mode(0o664)).unwrap();
    let foreign = mixed.path().join(lib("metrics-prometheus"));
    let as_root = std::fs::metadata(mixed.path()).unwrap().uid() == 0;
    if as_root {
        let ok = std::process::Command::new("chown").arg("12345").arg(&foreign).status();
        assert!(ok.is_ok_and(|s| s.success()), "chown");
    }
    let open = plugin_dir(&["wrong-api"]);
    std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let sticky = plugin_dir(&["dup-two"]);
    std::fs::set_permissions(sticky.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();

    let config = format!(
        "{ANON}[plugins]\ndirs = [\"{}\", \"{}\", \"{}\"]\n",
        mixed.path().display(),
        open.path().display(),
        sticky.path().display()
    );
    let mut file = tempfile::Builder::new().suffix(".toml").tempfile().unwrap();
    std::io::Write::write_all(&mut file, config.as_bytes()).unwrap();
    let out = std::process::Command::new(binary())
        .arg("plugins")
        .arg("--config")
        .arg(file.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    let refused = |path: &std::path::Path| {
        let shown = path.display().to_string();
        table
            .lines()
            .skip_while(|l| !l.starts_with("REFUSED FILE"))
            .find(|l| l.starts_with(&shown))
            .map(str::to_string)
    };
    let line = refused(&group_writable).unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains("writable by its group (mode 0664)"), "{line}");
    let line = refused(open.path()).unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains("plugin folder is writable by its group and by others"), "{line}");
    assert!(!table.contains(&lib("wrong-api").to_string_lossy().to_string()), "{table}");
    if as_root {
        let line = refused(&foreign).unwrap_or_else(|| panic!("{table}"));
        assert!(line.contains("owned by uid 12345"), "{line}");
        assert!(!table.lines().any(|l| l.starts_with("prometheus ")), "{table}");
    }
    // The sticky folder's library loads (dup-one, refused, no longer clashes with it).
    let dup =
        table.lines().find(|l| l.starts_with("duplicate")).unwrap_or_else(|| panic!("{table}"));
    assert!(dup.contains(&lib("dup-two").to_string_lossy().to_string()), "{dup}");

    // The running service lists the same refusals in /status and keeps serving.
    let m = start(&config);
    let warnings = m.get("/status").json()["warningMessages"].to_string();
    assert!(warnings.contains("writable by its group"), "{warnings}");
}
