//! A real Prometheus for tests, and the metrics backend plugins loaded through the real
//! plugin boundary.
//!
//! - [`fixture`] writes constant-rate traffic with `metrics_simulation::fixture` and
//!   backfills it into TSDB blocks with `promtool tsdb create-blocks-from openmetrics`, once
//!   per test process and set of fixture arguments.
//! - [`simulated`] does the same with the simulator's model (`meshlens simulate`): the
//!   samples the live `simulator` backend holds, for a real Prometheus to answer from.
//! - [`PromServer`] copies a fixture's blocks into its own data folder and runs
//!   `prometheus` on 127.0.0.1 with an OS-picked port (never 9090); it can be stopped and
//!   restarted on the same port and data, and is killed on drop.
//! - [`load_backend`] opens a backend plugin's library with abi_stable, checks it, and
//!   returns its component.
//!
//! `prometheus` and `promtool` come from Debian's `prometheus` package (`scripts/test.sh`
//! installs it); without them these helpers panic with a message naming the package.

use std::{
    collections::HashMap,
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex, OnceLock},
    time::{Duration, Instant},
};

use metrics_simulation::fixture;
use plugin_api::{MetricsBackendBox, PluginMod_Ref};

/// Finds a program on PATH; panics naming the Debian package when it is missing.
pub fn tool(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(name);
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "`{name}` was not found on PATH. The Prometheus tests need Debian's `prometheus` package: \
         apt-get install -y --no-install-recommends prometheus (scripts/test.sh does this)"
    );
}

/// Generated traffic and its backfilled TSDB blocks.
pub struct Fixture {
    /// The OpenMetrics file (what the embedded store reads).
    pub openmetrics: PathBuf,
    /// The TSDB folder promtool wrote (copied per server).
    pub blocks: PathBuf,
    /// The fixture's expected answers (`metrics_simulation::fixture::write`; for
    /// [`simulated`] data: only `start` and `end`).
    pub expected: serde_json::Value,
    /// The folder of a per-call fixture, removed with it.
    _dir: Option<tempfile::TempDir>,
}

impl Fixture {
    /// The last timestamp of the data.
    pub fn end(&self) -> i64 {
        self.expected["end"].as_i64().expect("end in expected JSON")
    }
    /// The first timestamp of the data.
    pub fn start(&self) -> i64 {
        self.expected["start"].as_i64().expect("start in expected JSON")
    }
}

/// `target/<profile>` of the running test or bench binary.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let mut dir = exe.parent().expect("binary folder").to_path_buf();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    dir
}

/// The fixture for these arguments (`metrics_simulation::fixture::Options::parse`:
/// `--topology demo|synthetic`, `--namespaces`, `--workloads`, `--minutes`, `--end`,
/// `--step`, `--duration-unit`).
///
/// Built once per test process; kept under `target/tmp/meshlens-prom-fixtures/`, keyed by
/// the arguments and the generator's text, so later runs with a fixed `--end` reuse it.
/// With `--end now` (the default) every process builds its own.
pub fn fixture(args: &[&str]) -> Arc<Fixture> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Fixture>>>> = OnceLock::new();
    let key = args.join("\u{1f}");
    let cache = CACHE.get_or_init(Default::default);
    // Held while building: concurrent tests asking for the same data wait for one build.
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(f) = map.get(&key) {
        return f.clone();
    }
    let f = Arc::new(build_fixture(args));
    map.insert(key, f.clone());
    f
}

fn build_fixture(args: &[&str]) -> Fixture {
    use std::hash::{Hash, Hasher};
    let options =
        fixture::Options::parse(args).unwrap_or_else(|e| panic!("fixture arguments {args:?}: {e}"));
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    args.hash(&mut hasher);
    fixture::SOURCE.hash(&mut hasher);
    let now_based = options.end.is_none();
    let root = profile_dir()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(profile_dir)
        .join("tmp")
        .join("meshlens-prom-fixtures");
    let dir = if now_based {
        remove_dead_now_fixtures(&root);
        root.join(format!("now-{}-{:016x}", std::process::id(), hasher.finish()))
    } else {
        root.join(format!("{:016x}", hasher.finish()))
    };
    let done = dir.join("done");
    if !done.is_file() {
        // Built in a private staging folder and renamed into place, so a concurrent run
        // (or a cleanup) never sees, or removes, a half-built fixture.
        std::fs::create_dir_all(&root).expect("create fixture root");
        let staging =
            tempfile::Builder::new().prefix(".staging-").tempdir_in(&root).expect("staging folder");
        generate(&options, staging.path());
        std::fs::write(staging.path().join("done"), args.join(" ")).expect("mark fixture done");
        let staged = staging.keep();
        let _ = std::fs::remove_dir_all(&dir);
        if std::fs::rename(&staged, &dir).is_err() {
            // Another process put an identical fixture in place first.
            let _ = std::fs::remove_dir_all(&staged);
            assert!(done.is_file(), "fixture {} could not be put in place", dir.display());
        }
    }
    let expected: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("expected.json")).expect("read expected JSON"),
    )
    .expect("expected JSON");
    Fixture {
        openmetrics: dir.join("metrics.om"),
        blocks: dir.join("blocks"),
        expected,
        _dir: None,
    }
}

/// Data that ends "now" is only good for the process that made it: remove the folders of
/// processes that are gone (statics are never dropped, so nobody else cleans them).
fn remove_dead_now_fixtures(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(pid) = name.strip_prefix("now-").and_then(|r| r.split('-').next()) else {
            continue;
        };
        if pid != std::process::id().to_string() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The simulator model's samples from `end - minutes` to `end` (cycle phase zero at
/// `start`) written by `meshlens simulate` and backfilled; built per call in a folder that
/// lives as long as the fixture.
pub fn simulated(topology: &Path, start: i64, end: i64, minutes: i64) -> Fixture {
    let dir = tempfile::Builder::new().prefix("meshlens-simulated").tempdir().expect("temp dir");
    let openmetrics = dir.path().join("metrics.om");
    let out = Command::new(crate::server::binary())
        .arg("simulate")
        .arg("--topology")
        .arg(topology)
        .args([
            "--start",
            &start.to_string(),
            "--end",
            &end.to_string(),
            "--minutes",
            &minutes.to_string(),
        ])
        .arg("--out")
        .arg(&openmetrics)
        .output()
        .expect("run meshlens simulate");
    assert!(
        out.status.success(),
        "meshlens simulate failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    backfill(&openmetrics, &dir.path().join("blocks"));
    let expected = serde_json::json!({"start": end - minutes * 60, "end": end});
    Fixture { openmetrics, blocks: dir.path().join("blocks"), expected, _dir: Some(dir) }
}

/// Samples a test wrote itself as OpenMetrics text (see `metrics-simulation`'s writer for
/// the format), backfilled; `start` and `end` are the first and last sample times.
pub fn from_openmetrics(text: &str, start: i64, end: i64) -> Fixture {
    let dir = tempfile::Builder::new().prefix("meshlens-written").tempdir().expect("temp dir");
    let openmetrics = dir.path().join("metrics.om");
    std::fs::write(&openmetrics, text).expect("write OpenMetrics");
    backfill(&openmetrics, &dir.path().join("blocks"));
    let expected = serde_json::json!({"start": start, "end": end});
    Fixture { openmetrics, blocks: dir.path().join("blocks"), expected, _dir: Some(dir) }
}

fn backfill(openmetrics: &Path, blocks: &Path) {
    let promtool = tool("promtool");
    let out = Command::new(&promtool)
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(openmetrics)
        .arg(blocks)
        .output()
        .expect("run promtool");
    assert!(
        out.status.success(),
        "promtool tsdb create-blocks-from openmetrics failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn generate(options: &fixture::Options, dir: &Path) {
    use std::io::{BufWriter, Write};
    let openmetrics = dir.join("metrics.om");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let file = std::fs::File::create(&openmetrics).expect("create metrics.om");
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let expected = fixture::write(options, now, &mut out).expect("write metrics.om");
    out.flush().expect("write metrics.om");
    let mut json = Vec::new();
    fixture::write_expected(&expected, &mut json).expect("expected JSON");
    std::fs::write(dir.join("expected.json"), json).expect("write expected.json");
    backfill(&openmetrics, &dir.join("blocks"));
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// A running (or stopped) Prometheus server with its own data folder.
pub struct PromServer {
    child: Option<Child>,
    data: tempfile::TempDir,
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
    /// Extra `global:` lines of prometheus.yml (the query log), kept when the config is rewritten.
    global_extra: String,
}

const START_LIMIT: Duration = Duration::from_secs(60);

impl PromServer {
    /// Starts a server over a copy of the fixture's blocks.
    pub fn start(fixture: &Fixture) -> PromServer {
        let data =
            tempfile::Builder::new().prefix("meshlens-prom-data").tempdir().expect("temp dir");
        copy_dir(&fixture.blocks, &data.path().join("tsdb")).expect("copy TSDB blocks");
        Self::start_in(data)
    }

    /// Starts a server with no data at all.
    pub fn start_empty() -> PromServer {
        let data =
            tempfile::Builder::new().prefix("meshlens-prom-data").tempdir().expect("temp dir");
        Self::start_in(data)
    }

    /// Starts a server over a copy of the fixture's blocks that logs every query it
    /// executes to its query log ([`executed_queries`](Self::executed_queries)).
    pub fn start_logging_queries(fixture: &Fixture) -> PromServer {
        let data =
            tempfile::Builder::new().prefix("meshlens-prom-data").tempdir().expect("temp dir");
        copy_dir(&fixture.blocks, &data.path().join("tsdb")).expect("copy TSDB blocks");
        let log = data.path().join("queries.log");
        Self::start_with(data, format!("  query_log_file: {log:?}\n"))
    }

    fn start_in(data: tempfile::TempDir) -> PromServer {
        Self::start_with(data, String::new())
    }

    fn start_with(data: tempfile::TempDir, global_extra: String) -> PromServer {
        std::fs::write(
            data.path().join("prometheus.yml"),
            format!("global:\n  scrape_interval: 15s\n{global_extra}"),
        )
        .expect("write config");
        let mut server =
            PromServer { child: None, data, port: 0, log: Arc::default(), global_extra };
        server.spawn();
        server
    }

    /// Scrapes `http://{target}{path}` every second as job `job` from now on (the config is
    /// rewritten and reloaded with SIGHUP; the reload shows in the log).
    pub fn scrape(&self, job: &str, target: &str, path: &str) {
        let config = format!(
            "global:\n  scrape_interval: 15s\n{}scrape_configs:\n  - job_name: {job:?}\n    scrape_interval: 1s\n    metrics_path: {path:?}\n    static_configs:\n      - targets: [{target:?}]\n",
            self.global_extra
        );
        std::fs::write(self.data.path().join("prometheus.yml"), config).expect("write config");
        let pid = self.pid().expect("prometheus runs");
        let _ = Command::new("kill").args(["-HUP", &pid.to_string()]).status();
    }

    /// Every query the server executed so far (its query log; needs [`start_logging_queries`](Self::start_logging_queries)):
    /// each line's `params` (`query`, `start`, `end`, `step`).
    pub fn executed_queries(&self) -> Vec<serde_json::Value> {
        self.query_log().into_iter().map(|v| v["params"].clone()).collect()
    }

    /// The query log's whole entries (params, stats with timings, `ts` when logged).
    pub fn query_log(&self) -> Vec<serde_json::Value> {
        let text =
            std::fs::read_to_string(self.data.path().join("queries.log")).unwrap_or_default();
        text.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).collect()
    }

    /// An instant query's first value (`None` when the result is empty).
    pub fn query_value(&self, promql: &str) -> Option<f64> {
        let (status, body) =
            http_get(self.port, &format!("/api/v1/query?query={}", percent_encode(promql)))?;
        if status != 200 {
            return None;
        }
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The port the server listens on (kept across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Queries Prometheus's engine has evaluated so far, from its own `/metrics`: what the
    /// benchmarks count to show how many queries a run really cost the store.
    pub fn engine_queries(&self) -> f64 {
        let (_, text) = http_get(self.port, "/metrics").expect("prometheus /metrics");
        text.lines()
            .filter(|l| {
                l.starts_with("prometheus_engine_query_duration_seconds_count")
                    && l.contains("slice=\"inner_eval\"")
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).join("\n")
    }

    fn spawn(&mut self) {
        let prometheus = tool("prometheus");
        let dir = self.data.path();
        let mut child = Command::new(prometheus)
            .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("tsdb").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{}", self.port))
            .arg("--storage.tsdb.retention.time=100y")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start prometheus");
        let stderr = child.stderr.take().expect("stderr pipe");
        let (tx, rx) = std::sync::mpsc::channel::<u16>();
        let log = self.log.clone();
        // Drains the log for the server's whole life (a full pipe would stall it).
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("msg=\"Listening on\"")
                    && let Some(port) = line
                        .split_whitespace()
                        .find_map(|w| w.strip_prefix("address=127.0.0.1:"))
                        .and_then(|p| p.trim_matches('"').parse::<u16>().ok())
                {
                    let _ = tx.send(port);
                }
                log.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
        self.child = Some(child);
        match rx.recv_timeout(START_LIMIT) {
            Ok(port) => self.port = port,
            Err(_) => panic!(
                "prometheus did not report its port within {START_LIMIT:?}; log:\n{}",
                self.log()
            ),
        }
        let deadline = Instant::now() + START_LIMIT;
        while Instant::now() < deadline {
            if http_get(self.port, "/-/ready").is_some_and(|(status, _)| status == 200) {
                return;
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                panic!("prometheus exited with {status}; log:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("prometheus was not ready within {START_LIMIT:?}; log:\n{}", self.log());
    }

    /// Stops the server with SIGTERM (kill after 15 s), keeping port and data for [`restart`](Self::restart).
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Starts the server again on the same port and data.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for PromServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Percent-encodes a query-string value (a PromQL query sent straight to Prometheus).
pub fn percent_encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// A GET on 127.0.0.1 with short deadlines: `(status, body)`, or `None` when nothing answers.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let url = format!("http://127.0.0.1:{port}{path}");
    // A thread of its own: the blocking client may not run on an async worker.
    std::thread::scope(|s| {
        s.spawn(|| {
            crate::server::install_crypto_provider();
            let client = reqwest::blocking::Client::builder()
                .connect_timeout(Duration::from_secs(2))
                .timeout(Duration::from_secs(10))
                .no_proxy()
                .build()
                .ok()?;
            let resp = client.get(&url).send().ok()?;
            let status = resp.status().as_u16();
            Some((status, resp.text().ok()?))
        })
        .join()
        .ok()
        .flatten()
    })
}

/// The library file of a plugin package built by this test build (a dev-dependency):
/// `target/<profile>/deps/lib<name>.so`, else `target/<profile>/lib<name>.so`.
pub fn backend_library(package: &str) -> PathBuf {
    let profile = profile_dir();
    let file = format!(
        "{}{}{}",
        std::env::consts::DLL_PREFIX,
        package.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    );
    let candidates = [profile.join("deps").join(&file), profile.join(&file)];
    candidates.iter().find(|p| p.is_file()).cloned().unwrap_or_else(|| {
        panic!(
            "{file} not found in {}: is {package} a dev-dependency of the tests?",
            profile.display()
        )
    })
}

/// Loads a plugin library through the real boundary and returns its backend named `name`.
pub fn load_backend(package: &str, name: &str) -> MetricsBackendBox {
    let path = backend_library(package);
    let header = abi_stable::library::lib_header_from_path(&path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    let module = header
        .init_root_module::<PluginMod_Ref>()
        .unwrap_or_else(|e| panic!("{} is not a compatible plugin: {e}", path.display()));
    let components =
        module.components()().into_result().unwrap_or_else(|e| panic!("components(): {e}"));
    components
        .metrics_backends
        .into_iter()
        .find(|b| b.name().into_result().is_ok_and(|n| n.as_str() == name))
        .unwrap_or_else(|| panic!("{} has no metrics backend named {name}", path.display()))
}

/// Loads and configures a backend with a JSON table.
pub fn configured_backend(
    package: &str,
    name: &str,
    config: serde_json::Value,
) -> MetricsBackendBox {
    let backend = load_backend(package, name);
    backend
        .configure(config.to_string().as_str().into())
        .into_result()
        .unwrap_or_else(|e| panic!("configure {name}: {e}"));
    backend
}
