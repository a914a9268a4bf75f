//! What the console tests share: the meshes they start and DevTools emulation.

use integration_tests::browser::Client;
use integration_tests::{
    prometheus::fixture,
    server::{BUNDLED, Meshlens, plugin_dir, workspace_root},
};
use std::collections::BTreeSet;

use serde_json::{Value, json};

/// The demo: config/demo.toml with the bundled plugins and generated demo traffic.
pub fn demo() -> Meshlens {
    let f = fixture(&["--topology", "demo", "--minutes", "20"]);
    let config =
        std::fs::read_to_string(workspace_root().join("config/demo.toml")).expect("demo.toml");
    let config = config.replace("port = 20001", "port = 0");
    let dir = plugin_dir(BUNDLED);
    let dirs = format!("[\"{}\"]", dir.path().display());
    let om = f.openmetrics.display().to_string();
    Meshlens::start(
        &config,
        &[
            ("MESHLENS_PLUGINS__DIRS", dirs.as_str()),
            ("MESHLENS_METRICS__OPENMETRICS_FILE__PATH", om.as_str()),
        ],
        vec![dir],
    )
    .expect("the demo starts")
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
