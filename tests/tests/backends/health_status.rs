//! Health you can configure: the computed `status` of every health operation, the graph's
//! `healthStatus`, `/api/config`'s `healthConfig` and the `meshlens_health_status` gauge,
//! against a real Prometheus holding a generated mesh with known rates per response code,
//! under Kiali's default rules and under custom `[[health.rate]]` rules.

use std::{
    collections::BTreeMap,
    path::Path,
    time::{Duration, Instant},
};

use integration_tests::{
    api_schema,
    inprocess::InProcess as Meshlens,
    prometheus::{Fixture, PromServer, simulated},
    server::{BUNDLED, ensure_built, plugin_dir},
};
use serde_json::Value;

const NS: &str = "hx";

/// (app, desired replicas, available replicas, has a Service)
const APPS: &[(&str, i32, i32, bool)] = &[
    ("caller", 1, 1, false),
    ("notfound", 1, 1, true), // 12 % 404
    ("fivexx", 1, 1, true),   // 6 % 500 plus 6 % 503
    ("inonly", 1, 1, true),   // 15 % inbound 503, clean outbound calls to backend
    ("backend", 1, 1, true),
    ("slight", 1, 1, true), // 0.5 % 503
    ("broken", 1, 1, true), // 15 % 503
    ("grpcy", 1, 1, true),  // 2 % grpc status 14
    ("idle", 1, 1, true),   // no traffic
    ("down", 2, 0, true),   // 0 of 2 replicas available
];

/// The traffic, per second: caller calls everything, inonly calls backend.
const TOPOLOGY_EDGES: &str = r#"
[[edge]]
from = "hx/caller-v1"
to = "hx/notfound-v1"
service = "notfound"
protocol = "http"
responses = [{ code = "200", rate = 88.0 }, { code = "404", rate = 12.0 }]

[[edge]]
from = "hx/caller-v1"
to = "hx/fivexx-v1"
service = "fivexx"
protocol = "http"
responses = [{ code = "200", rate = 88.0 }, { code = "500", rate = 6.0 }, { code = "503", rate = 6.0 }]

[[edge]]
from = "hx/caller-v1"
to = "hx/inonly-v1"
service = "inonly"
protocol = "http"
responses = [{ code = "200", rate = 8.5 }, { code = "503", rate = 1.5 }]

[[edge]]
from = "hx/inonly-v1"
to = "hx/backend-v1"
service = "backend"
protocol = "http"
responses = [{ code = "200", rate = 100.0 }]

[[edge]]
from = "hx/caller-v1"
to = "hx/slight-v1"
service = "slight"
protocol = "http"
responses = [{ code = "200", rate = 199.0 }, { code = "503", rate = 1.0 }]

[[edge]]
from = "hx/caller-v1"
to = "hx/broken-v1"
service = "broken"
protocol = "http"
responses = [{ code = "200", rate = 85.0 }, { code = "503", rate = 15.0 }]

[[edge]]
from = "hx/caller-v1"
to = "hx/grpcy-v1"
service = "grpcy"
protocol = "grpc"
responses = [{ code = "200", grpc_status = "0", rate = 98.0 }, { code = "200", grpc_status = "14", rate = 2.0 }]
"#;

/// Expected statuses: (kind, name) → status. Workloads are named `<app>-v1`.
type Expected = BTreeMap<(&'static str, String), &'static str>;

fn expected(rows: &[(&'static str, &'static str, &'static str, &'static str)]) -> Expected {
    let mut m = Expected::new();
    for (app, app_s, wl_s, svc_s) in rows {
        m.insert(("app", app.to_string()), *app_s);
        m.insert(("workload", format!("{app}-v1")), *wl_s);
        if *svc_s != "-" {
            m.insert(("service", app.to_string()), *svc_s);
        }
    }
    m
}

/// Under Kiali's default rule.
fn defaults() -> Expected {
    expected(&[
        // Outbound: 5xx 29.5 of 510 http (5.8 %) and 2 % grpc 14: degraded.
        ("caller", "degraded", "degraded", "-"),
        ("notfound", "degraded", "degraded", "degraded"),
        ("fivexx", "failure", "failure", "failure"),
        // 15 % inbound is failure on its own; summed with the clean outbound it would be 1.4 %.
        ("inonly", "failure", "failure", "failure"),
        ("backend", "healthy", "healthy", "healthy"),
        ("slight", "degraded", "degraded", "degraded"),
        ("broken", "failure", "failure", "failure"),
        ("grpcy", "degraded", "degraded", "degraded"),
        ("idle", "healthy", "healthy", "na"),
        ("down", "failure", "failure", "na"),
    ])
}

/// A 404 tolerance for the notfound app, then a namespace-wide 5xx rule at 1 %.
const CUSTOM_RULES: &str = r#"
[[health.rate]]
namespace = "hx"
kind = "app"
name = "notfound"
[[health.rate.tolerance]]
code = "^404$"
protocol = "http"
degraded = 20
failure = 30

[[health.rate]]
namespace = "hx"
[[health.rate.tolerance]]
code = "^5\\d\\d$"
direction = ".*"
protocol = "http"
degraded = 1
failure = 10
"#;

fn custom() -> Expected {
    expected(&[
        ("caller", "degraded", "degraded", "-"),
        // The app's own rule tolerates its 404s; its service and workload fall to the
        // namespace rule, which counts only 5xx.
        ("notfound", "healthy", "healthy", "healthy"),
        ("fivexx", "failure", "failure", "failure"),
        ("inonly", "failure", "failure", "failure"),
        ("backend", "healthy", "healthy", "healthy"),
        // 0.5 % is under the namespace's 1 %.
        ("slight", "healthy", "healthy", "healthy"),
        ("broken", "failure", "failure", "failure"),
        // No tolerance of the matching rule looks at grpc: nothing judged; the replicas are up.
        ("grpcy", "healthy", "healthy", "na"),
        ("idle", "healthy", "healthy", "na"),
        ("down", "failure", "failure", "na"),
    ])
}

fn manifests() -> String {
    let mut docs = vec![format!(
        r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{NS}","uid":"ns-{NS}","creationTimestamp":"2026-01-01T00:00:00Z"}}}}"#
    )];
    for (i, (app, replicas, available, service)) in APPS.iter().enumerate() {
        let labels = format!(r#"{{"app":"{app}","version":"v1"}}"#);
        let meta = |kind: &str, name: &str, owner: Option<(&str, &str)>| {
            let owner = owner.map_or(String::new(), |(k, n)| {
                format!(
                    r#","ownerReferences":[{{"apiVersion":"apps/v1","kind":"{k}","name":"{n}","uid":"{k}-{n}","controller":true}}]"#
                )
            });
            format!(
                r#"{{"name":"{name}","namespace":"{NS}","uid":"{kind}-{name}","creationTimestamp":"2026-01-01T00:00:00Z","labels":{labels}{owner}}}"#
            )
        };
        let wl = format!("{app}-v1");
        let rs = format!("{wl}-7f");
        let template = format!(
            r#"{{"metadata":{{"labels":{labels}}},"spec":{{"containers":[{{"name":"{app}","image":"example/{app}:v1"}}]}}}}"#
        );
        docs.push(format!(
            r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{},"spec":{{"replicas":{replicas},"selector":{{"matchLabels":{labels}}},"template":{template}}},"status":{{"replicas":{replicas},"availableReplicas":{available},"readyReplicas":{available}}}}}"#,
            meta("Deployment", &wl, None)
        ));
        docs.push(format!(
            r#"{{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{},"spec":{{"replicas":{replicas},"selector":{{"matchLabels":{labels}}},"template":{template}}},"status":{{"replicas":{replicas},"availableReplicas":{available}}}}}"#,
            meta("ReplicaSet", &rs, Some(("Deployment", &wl)))
        ));
        // The unavailable Deployment's pods never started.
        for p in 0..*available {
            let pod = format!("{rs}-p{p}");
            docs.push(format!(
                r#"{{"apiVersion":"v1","kind":"Pod","metadata":{},"spec":{{"containers":[{{"name":"{app}","image":"example/{app}:v1"}},{{"name":"istio-proxy","image":"istio/proxyv2:1.20.0"}}]}},"status":{{"phase":"Running","conditions":[{{"type":"Ready","status":"True"}}],"podIP":"10.9.{i}.{p}"}}}}"#,
                meta("Pod", &pod, Some(("ReplicaSet", &rs))).replacen(
                    r#""labels""#,
                    r#""annotations":{"sidecar.istio.io/status":"{\"version\":\"t\"}"},"labels""#,
                    1
                )
            ));
        }
        if *service {
            docs.push(format!(
                r#"{{"apiVersion":"v1","kind":"Service","metadata":{{"name":"{app}","namespace":"{NS}","uid":"svc-{app}","creationTimestamp":"2026-01-01T00:00:00Z","labels":{{"app":"{app}"}}}},"spec":{{"selector":{{"app":"{app}"}},"ports":[{{"name":"http","port":9080}}],"clusterIP":"10.96.0.{i}"}}}}"#
            ));
        }
    }
    docs.join("\n---\n")
}

fn topology() -> String {
    let mut t = String::from("step_seconds = 15\ncycle_minutes = 30\n");
    for (app, ..) in APPS {
        t.push_str(&format!(
            "[[workload]]\nnamespace = \"{NS}\"\nname = \"{app}-v1\"\napp = \"{app}\"\nversion = \"v1\"\n"
        ));
    }
    t.push_str(TOPOLOGY_EDGES);
    t
}

/// The mesh's traffic, 60 minutes of it ending 30 minutes from now: every window lies in it.
fn mesh(dir: &Path) -> Fixture {
    ensure_built();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let path = dir.join("topology.toml");
    std::fs::write(&path, topology()).expect("write topology");
    simulated(&path, now - 3600, now + 1800, 60)
}

fn start(prom: &PromServer, rules: &str) -> Meshlens {
    let snapshot = tempfile::tempdir().expect("temp dir");
    std::fs::write(snapshot.path().join("hx.yaml"), manifests()).expect("write manifests");
    // Another namespace, for export_namespaces.
    std::fs::write(
        snapshot.path().join("other.yaml"),
        manifests()
            .replace(&format!("\"namespace\":\"{NS}\""), "\"namespace\":\"other\"")
            .replace(
                &format!("\"name\":\"{NS}\",\"uid\":\"ns-{NS}\""),
                "\"name\":\"other\",\"uid\":\"ns-other\"",
            )
            .replace("\"uid\":\"", "\"uid\":\"o-"),
    )
    .expect("write manifests");
    let mut packages: Vec<&str> =
        BUNDLED.iter().copied().filter(|p| p.starts_with("appender-")).collect();
    packages.push("metrics-prometheus");
    let plugins = plugin_dir(&packages);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [\"{}\"]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"{}\"]\n\
         [metrics]\nbackend = \"prometheus\"\ntimeout = \"5s\"\n[metrics.prometheus]\nurl = \"{}\"\n\
         [health]\nexport_interval = \"1s\"\n{rules}",
        plugins.path().display(),
        snapshot.path().display(),
        prom.url()
    );
    Meshlens::start(&cfg, &[], vec![plugins, snapshot]).expect("meshlens starts")
}

fn get(m: &Meshlens, path: &str) -> Value {
    let r = m.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    api_schema::check(path, r.status, r.header("content-type"), &r.body);
    r.json()
}

/// Every health operation's status, as the API answers: (kind, name) → status.
fn api_statuses(m: &Meshlens) -> BTreeMap<(&'static str, String), String> {
    let mut out = BTreeMap::new();
    let s = |v: &Value| v["status"].as_str().unwrap_or("(none)").to_string();
    for (app, _, _, service) in APPS {
        let a = get(m, &format!("/api/namespaces/{NS}/apps/{app}/health"));
        out.insert(("app", app.to_string()), s(&a));
        let w = get(m, &format!("/api/namespaces/{NS}/workloads/{app}-v1/health"));
        out.insert(("workload", format!("{app}-v1")), s(&w));
        if *service {
            let v = get(m, &format!("/api/namespaces/{NS}/services/{app}/health"));
            out.insert(("service", app.to_string()), s(&v));
        }
    }
    // namespaceHealth: each entry carries its own status, and agrees with the object's.
    for kind in ["app", "workload", "service"] {
        let all = get(m, &format!("/api/namespaces/{NS}/health?type={kind}"));
        let entries = all.as_object().expect("namespace health is a map");
        for (name, entry) in entries {
            let object = out.get(&(kind_name(kind), name.clone())).cloned();
            assert_eq!(
                Some(s(entry)),
                object,
                "namespaceHealth type={kind} {name} disagrees with its own operation"
            );
        }
        let count = out.keys().filter(|(k, _)| *k == kind).count();
        assert_eq!(entries.len(), count, "namespaceHealth type={kind}: every object");
    }
    out
}

fn kind_name(kind: &str) -> &'static str {
    match kind {
        "app" => "app",
        "workload" => "workload",
        _ => "service",
    }
}

fn check_api(
    m: &Meshlens,
    want: &Expected,
    what: &str,
) -> BTreeMap<(&'static str, String), String> {
    let got = api_statuses(m);
    let want: BTreeMap<(&'static str, String), String> =
        want.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
    assert_eq!(got, want, "{what}: health statuses");
    got
}

/// The graph's `healthStatus` of every app, service and workload node it shows agrees with
/// the API (graph window = the API's default rateInterval, 10 minutes).
fn check_graph(m: &Meshlens, api: &BTreeMap<(&'static str, String), String>) {
    for graph_type in ["app", "workload"] {
        let g = get(
            m,
            &format!("/api/namespaces/graph?namespaces={NS}&graphType={graph_type}&duration=600s"),
        );
        let nodes = g["elements"]["nodes"].as_array().expect("nodes");
        let mut judged = 0;
        for n in nodes {
            let d = &n["data"];
            if d["namespace"] != NS {
                continue;
            }
            let (kind, name) = match d["nodeType"].as_str() {
                Some("app") => ("app", d["app"].as_str().unwrap_or_default()),
                Some("workload") => ("workload", d["workload"].as_str().unwrap_or_default()),
                Some("service") => ("service", d["service"].as_str().unwrap_or_default()),
                _ => continue,
            };
            let want = api.get(&(kind, name.to_string()));
            assert_eq!(
                d["healthStatus"].as_str(),
                want.map(String::as_str),
                "graph {graph_type}: {kind} {name}: {d}"
            );
            judged += 1;
        }
        assert!(judged >= 8, "graph {graph_type}: judged only {judged} nodes");
    }
}

/// `meshlens_health_status` holds 1 for the API's status and 0 for the other three.
fn check_gauge(m: &Meshlens, api: &BTreeMap<(&'static str, String), String>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut text;
    loop {
        text = m.get("/metrics").text();
        let complete = api.keys().all(|(kind, name)| {
            text.contains(&format!("kind=\"{kind}\",name=\"{name}\",namespace=\"{NS}\""))
                || text.contains(&format!("namespace=\"{NS}\",kind=\"{kind}\",name=\"{name}\""))
        });
        if complete || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    for ((kind, name), status) in api {
        for s in ["healthy", "degraded", "failure", "na"] {
            let line = format!(
                "meshlens_health_status{{namespace=\"{NS}\",kind=\"{kind}\",name=\"{name}\",status=\"{s}\"}} {}",
                u8::from(s == status)
            );
            assert!(text.contains(&line), "missing `{line}` in /metrics:\n{}", gauge_lines(&text));
        }
    }
}

fn gauge_lines(text: &str) -> String {
    text.lines().filter(|l| l.contains("health_status")).collect::<Vec<_>>().join("\n")
}

#[test]
fn statuses_under_the_default_rules_agree_everywhere() {
    let dir = tempfile::tempdir().expect("temp dir");
    let prom = PromServer::start(&mesh(dir.path()));
    let m = start(&prom, "");
    let api = check_api(&m, &defaults(), "default rules");
    check_graph(&m, &api);
    check_gauge(&m, &api);
    // /api/config shows the default entry alone.
    let cfg = get(&m, "/api/config");
    let rate = cfg["healthConfig"]["rate"].as_array().expect("healthConfig.rate");
    assert_eq!(rate.len(), 1);
    let codes: Vec<&str> = rate[0]["tolerance"]
        .as_array()
        .expect("tolerance")
        .iter()
        .filter_map(|t| t["code"].as_str())
        .collect();
    assert_eq!(codes, ["5XX", "4XX", "^[1-9]$|^1[0-6]$", "^-$"]);
    assert_eq!(rate[0]["namespace"], ".*");
    assert_eq!(rate[0]["tolerance"][1]["degraded"], 10.0);
    assert_eq!(rate[0]["tolerance"][1]["failure"], 20.0);
    // The export goes through the metrics engine: its queries are counted.
    let metrics = m.get("/metrics").text();
    assert!(metrics.contains("meshlens_backend_queries_total{"), "backend queries are counted");
}

#[test]
fn custom_rules_change_the_statuses_everywhere() {
    let dir = tempfile::tempdir().expect("temp dir");
    let prom = PromServer::start(&mesh(dir.path()));
    let m = start(&prom, CUSTOM_RULES);
    let api = check_api(&m, &custom(), "custom rules");
    check_graph(&m, &api);
    check_gauge(&m, &api);
    // The configured entries in order, then the default one.
    let cfg = get(&m, "/api/config");
    let rate = cfg["healthConfig"]["rate"].as_array().expect("healthConfig.rate");
    assert_eq!(rate.len(), 3);
    assert_eq!(
        (rate[0]["name"].as_str(), rate[0]["tolerance"][0]["code"].as_str()),
        (Some("notfound"), Some("^404$"))
    );
    assert_eq!(rate[0]["tolerance"][0]["direction"], ".*", "unset patterns are written out");
    assert_eq!((rate[1]["name"].as_str(), rate[1]["namespace"].as_str()), (Some(".*"), Some("hx")));
    assert_eq!(rate[1]["tolerance"][0]["degraded"], 1.0);
    assert_eq!(rate[2]["tolerance"][0]["code"], "5XX");
}

#[test]
fn export_namespaces_limits_the_gauge() {
    let prom = PromServer::start_empty();
    let m = start(&prom, "export_namespaces = [\"other\"]\n");
    let line = "meshlens_health_status{namespace=\"other\",kind=\"workload\",name=\"down-v1\",status=\"failure\"} 1";
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut text = String::new();
    while Instant::now() < deadline {
        text = m.get("/metrics").text();
        if text.contains(line) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(text.contains(line), "{}", gauge_lines(&text));
    // No traffic at all: replicas decide, and a service has nothing to judge.
    assert!(text.contains("meshlens_health_status{namespace=\"other\",kind=\"app\",name=\"idle\",status=\"healthy\"} 1"));
    assert!(text.contains(
        "meshlens_health_status{namespace=\"other\",kind=\"service\",name=\"idle\",status=\"na\"} 1"
    ));
    assert!(
        !text.contains(&format!("namespace=\"{NS}\"")),
        "{NS} is not exported:\n{}",
        gauge_lines(&text)
    );
}

#[test]
fn bad_rules_are_refused_by_config_check_and_serve_naming_each_key() {
    ensure_built();
    let text = "[auth]\nstrategy = \"anonymous\"\n\
                [[health.rate]]\nname = \"(\"\n\
                [[health.rate.tolerance]]\ncode = \"5XX\"\n\
                [[health.rate.tolerance]]\ncode = \"[\"\ndegraded = 30\nfailure = 20\n";
    let mut file = tempfile::Builder::new().suffix(".toml").tempfile().expect("config file");
    std::io::Write::write_all(&mut file, text.as_bytes()).expect("write config");
    let path = file.path().to_str().expect("utf-8 path");
    let binary = integration_tests::server::binary();
    for args in [vec!["config", "check", "--config", path], vec!["serve", "--config", path]] {
        let out = std::process::Command::new(&binary)
            .args(&args)
            .current_dir(integration_tests::server::workspace_root())
            .output()
            .expect("run meshlens");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let keys = [
            "`health.rate[0].name`",
            "`health.rate[0].tolerance[1].code`",
            "`health.rate[0].tolerance[1].degraded`",
        ];
        for key in keys {
            assert!(err.contains(key), "{args:?}: {key} not named:\n{err}");
        }
        let lines: Vec<&str> = err.lines().filter(|l| l.contains("health.rate")).collect();
        assert_eq!(lines.len(), 3, "{args:?}: one line per problem:\n{err}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));
    }
}
