//! What the console tests share: the meshes they start and DevTools emulation.

use integration_tests::browser::{Client, js, wait_js};
use integration_tests::{
    prometheus::fixture,
    server::{BUNDLED, Meshlens, plugin_dir, workspace_root},
};
use std::collections::BTreeSet;

use serde_json::{Value, json};

/// The demo as it was before its second cluster: config/demo.toml without `west` (its
/// `[[cluster.remotes]]`) and the demo topology without its `cluster` lines, so every series
/// is the home cluster's. The console tests written for one cluster run on it. Hold the
/// folder as long as the server runs.
pub fn one_cluster() -> (tempfile::TempDir, Vec<(String, String)>) {
    let text = std::fs::read_to_string(workspace_root().join("config/demo/topology.toml"))
        .expect("the demo topology");
    let home: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("cluster ="))
        .map(|l| format!("{l}\n"))
        .collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("topology.toml");
    std::fs::write(&path, home).expect("write the topology");
    let env = vec![
        ("MESHLENS_CLUSTER__REMOTES".to_string(), "[]".to_string()),
        ("MESHLENS_METRICS__SIMULATOR__TOPOLOGY".to_string(), path.display().to_string()),
    ];
    (dir, env)
}

/// The demo: config/demo.toml, one cluster ([`one_cluster`]), with the bundled plugins and
/// generated demo traffic.
pub fn demo() -> Meshlens {
    let (home, one) = one_cluster();
    let f = fixture(&["--topology", "demo", "--minutes", "20"]);
    let config =
        std::fs::read_to_string(workspace_root().join("config/demo.toml")).expect("demo.toml");
    let config = config.replace("port = 20001", "port = 0");
    let dir = plugin_dir(BUNDLED);
    let dirs = format!("[\"{}\"]", dir.path().display());
    let om = f.openmetrics.display().to_string();
    let mut env = vec![
        ("MESHLENS_PLUGINS__DIRS", dirs.as_str()),
        ("MESHLENS_METRICS__OPENMETRICS_FILE__PATH", om.as_str()),
    ];
    env.extend(one.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    Meshlens::start(&config, &env, vec![dir, home]).expect("the demo starts")
}

/// The scale benchmarks' mesh: `namespaces` namespaces of a 10-workload chain each (plus the
/// shared `unknown` caller), `minutes` of traffic ending at 1700000000, in the embedded store.
pub fn synthetic_mesh(namespaces: usize, minutes: &str) -> Meshlens {
    use std::fmt::Write as _;
    let synthetic = tempfile::tempdir().expect("temp dir");
    let mut y = String::new();
    for n in 0..namespaces {
        let _ = write!(y, "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns-{n}\n");
    }
    std::fs::write(synthetic.path().join("namespaces.yaml"), y).expect("manifests");
    let count = namespaces.to_string();
    let f = fixture(&[
        "--topology",
        "synthetic",
        "--namespaces",
        &count,
        "--workloads",
        "10",
        "--minutes",
        minutes,
        "--end",
        "1700000000",
    ]);
    let dir = plugin_dir(BUNDLED);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n[cluster]\nsource = \"snapshot\"\nsnapshot = [{:?}]\n[metrics]\nbackend = \"openmetrics_file\"\n[metrics.openmetrics_file]\npath = {:?}\n",
        dir.path(),
        synthetic.path(),
        f.openmetrics
    );
    Meshlens::start(&cfg, &[], vec![dir, synthetic]).expect("meshlens starts")
}

/// chromedriver's `POST /session/{id}/goog/cdp/execute`: one DevTools command.
#[derive(Debug)]
struct Cdp(Value);

impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/goog/cdp/execute", session.unwrap_or_default()))
    }
    fn method_and_body(&self, _url: &url::Url) -> (warp::http::Method, Option<String>) {
        (warp::http::Method::POST, Some(self.0.to_string()))
    }
}

/// Emulates `prefers-color-scheme` (`""` restores the system's).
pub async fn emulate_scheme(c: &Client, scheme: &str) {
    c.issue_cmd(Cdp(json!({
        "cmd": "Emulation.setEmulatedMedia",
        "params": { "features": [{ "name": "prefers-color-scheme", "value": scheme }] }
    })))
    .await
    .expect("emulate the colour scheme");
}

/// The ids of a graph answer's `nodes` (or `edges`) list.
pub fn ids(list: &Value) -> BTreeSet<String> {
    list.as_array()
        .expect("array")
        .iter()
        .map(|e| e["data"]["id"].as_str().expect("id").to_string())
        .collect()
}

/// The ids in a comma-separated attribute (`data-node-ids`).
pub fn split_ids(v: &Value) -> BTreeSet<String> {
    v.as_str()
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A 200 answer's JSON.
pub fn api(m: &Meshlens, path: &str) -> Value {
    let r = m.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json()
}

/// The drawn list's rows, once drawn: every `data-*` attribute of each `[data-testid=row]`,
/// in order, its first link (`href`) and its Cluster cell (`cell`, when the column is shown).
pub async fn rows(c: &Client) -> Vec<Value> {
    wait_js(
        c,
        "const t = document.querySelector('[data-testid=list]');
         return t && t.dataset.state === 'drawn'",
        "the list to be drawn",
    )
    .await;
    let v = js(
        c,
        "return [...document.querySelectorAll('[data-testid=row]')].map((r) => {
           const a = r.querySelector('a[href]');
           const cell = r.querySelector('[data-testid=cell-cluster]');
           return {...r.dataset, href: a ? a.getAttribute('href') : null,
                   ...(cell ? {cell: cell.textContent} : {})};
         })",
        vec![],
    )
    .await;
    v.as_array().expect("rows").clone()
}
