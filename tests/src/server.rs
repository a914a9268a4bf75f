//! Starts the real `meshlens` binary on 127.0.0.1:0 and talks to it over plain HTTP (reqwest).
//!
//! The binary and the plugin libraries come from this build's target folder
//! (`target/<profile>/`), built before the tests by `cargo build --workspace` (what
//! `scripts/test.sh` runs first); `ensure_built` fails with that command when they are missing.

use std::{
    collections::HashMap,
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Mutex, OnceLock, mpsc},
    time::{Duration, Instant},
};

/// `target/<profile>` of the running test binary, or `target/release` when
/// `MESHLENS_TEST_SERVER_PROFILE=release`: a debug test binary (the console benchmark) then
/// builds and starts the release server and plugins without compiling the tests in release.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/<test-binary>
    let dir = exe.parent().and_then(Path::parent).expect("target/<profile>").to_path_buf();
    match std::env::var("MESHLENS_TEST_SERVER_PROFILE").as_deref() {
        Ok("release") => dir.parent().map_or(dir.clone(), |t| t.join("release")),
        _ => dir,
    }
}

/// The workspace root (for config/ and scripts/).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// The command that builds what the tests run (`scripts/test.sh` runs it before the tests).
fn build_command() -> &'static str {
    if profile_dir().file_name().and_then(|n| n.to_str()) == Some("release") {
        "cargo build --release --workspace"
    } else {
        "cargo build --workspace"
    }
}

/// Checks, once per test process, that the binary and every bundled and test plugin of
/// this build are in `target/<profile>/`, and panics naming the build command when one is
/// missing. Tests never run cargo themselves: a build inside a test is built per test
/// binary, and its package set unifies features differently from `cargo test`'s, so the two
/// would rebuild each other's outputs.
pub fn ensure_built() {
    static CHECKED: OnceLock<()> = OnceLock::new();
    CHECKED.get_or_init(|| {
        let binary = binary_path();
        let mut missing: Vec<String> = Vec::new();
        if !binary.is_file() {
            missing.push(binary.display().to_string());
        }
        for p in BUNDLED.iter().chain(TESTING) {
            let lib = library_path(p);
            if !lib.is_file() {
                missing.push(lib.display().to_string());
            }
        }
        assert!(
            missing.is_empty(),
            "not built: {}. Build first with `{}` from the workspace root (scripts/test.sh does), \
             then run the tests",
            missing.join(", "),
            build_command()
        );
    });
}

fn binary_path() -> PathBuf {
    profile_dir().join(format!("meshlens{}", std::env::consts::EXE_SUFFIX))
}

/// The path of the `meshlens` binary of this build.
pub fn binary() -> PathBuf {
    ensure_built();
    binary_path()
}

/// The library file of a plugin package (`dup-one` → `target/<profile>/libdup_one.so`).
pub fn plugin_library(package: &str) -> PathBuf {
    ensure_built();
    library_path(package)
}

fn library_path(package: &str) -> PathBuf {
    let file = format!(
        "{}{}{}",
        std::env::consts::DLL_PREFIX,
        package.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    );
    let deps = profile_dir().join("deps").join(&file);
    let top = profile_dir().join(&file);
    // The uplifted copy can be stale after a test-only build; prefer the newer one.
    match (
        std::fs::metadata(&deps).and_then(|m| m.modified()),
        std::fs::metadata(&top).and_then(|m| m.modified()),
    ) {
        (Ok(a), Ok(b)) if a > b => deps,
        (Ok(_), Err(_)) => deps,
        _ => top,
    }
}

/// The bundled plugins (what the README's run command installs).
pub const BUNDLED: &[&str] = &[
    "appender-service-entry",
    "appender-dead-node",
    "appender-response-time",
    "appender-security-policy",
    "appender-unused-node",
    "appender-mesh",
    "appender-sidecars-check",
    "appender-ambient",
    "appender-health",
    "metrics-prometheus",
    "metrics-openmetrics-file",
    "metrics-simulator",
    "dashboards-builtin",
    "dashboards-folder",
    "dashboards-monitoring",
];

/// The bundled metrics backends that exist for the demo and offline files, not for a
/// cluster: the container image leaves them out ("the demo not included").
pub const DEMO_BACKENDS: &[&str] = &["metrics-openmetrics-file", "metrics-simulator"];

/// The plugins the container image ships (`deploy/Containerfile`): the bundled ones less
/// [`DEMO_BACKENDS`].
pub fn image_plugins() -> Vec<&'static str> {
    BUNDLED.iter().copied().filter(|p| !DEMO_BACKENDS.contains(p)).collect()
}

/// Test-only plugins (never in the default plugin folder).
pub const TESTING: &[&str] = &[
    "dup-one",
    "dup-two",
    "panicking",
    "wrong-api",
    "bench-appender",
    "slow-appender",
    "spin-backend",
];

/// A temporary plugin folder holding copies of the given packages' libraries.
pub fn plugin_dir(packages: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for p in packages {
        let src = plugin_library(p);
        let dst = dir.path().join(src.file_name().expect("file name"));
        std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("copy {}: {e}", src.display()));
        // meshlens refuses a library its group could replace; a umask of 002 would make one.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o755))
                .unwrap_or_else(|e| panic!("chmod {}: {e}", dst.display()));
        }
    }
    dir
}

/// A config on 127.0.0.1:0 with anonymous auth, plugins from `plugins`, the given
/// `[cluster]` lines and no metrics backend (what validations need).
pub fn cluster_only_config(cluster: &str, plugins: &Path) -> String {
    format!(
        "[server]\naddress = \"127.0.0.1\"\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [\"{}\"]\n[cluster]\n{cluster}\n",
        plugins.display()
    )
}

/// meshlens on the demo manifests (snapshot source), with no plugins and no metrics backend.
pub fn demo_snapshot_server() -> Meshlens {
    let plugins = tempfile::tempdir().expect("temp dir");
    let cfg =
        cluster_only_config("source = \"snapshot\"\nsnapshot = [\"config/demo\"]", plugins.path());
    Meshlens::start(&cfg, &[], vec![plugins]).expect("meshlens starts")
}

/// A running meshlens process; killed on drop.
/// The allocator settings the container image and the Deployment set
/// (`deploy/Containerfile`, `deploy/kubernetes/deployment.yaml`), for benchmarks that
/// measure a replica's memory as deployed. `deploy_manifests` keeps the three equal.
pub const DEPLOYED_ALLOCATOR_ENV: &[(&str, &str)] = &[
    ("MALLOC_ARENA_MAX", "2"),
    ("MIMALLOC_ARENA_EAGER_COMMIT", "0"),
    ("MIMALLOC_PURGE_DELAY", "0"),
];

pub struct Meshlens {
    child: Child,
    pub addr: String,
    /// stderr lines seen so far (logs).
    pub logs: std::sync::Arc<Mutex<Vec<String>>>,
    /// stdout lines seen so far.
    pub stdout: std::sync::Arc<Mutex<Vec<String>>>,
    _keep: Vec<tempfile::TempDir>,
    _config: tempfile::NamedTempFile,
}

/// What starting the binary produced when it did not come up.
#[derive(Debug)]
pub struct StartFailure {
    pub code: Option<i32>,
    pub stderr: String,
}

impl Meshlens {
    /// Writes `config` to a file and starts `meshlens serve --config FILE` with `env`.
    /// `keep` holds temp folders the config refers to.
    pub fn start(
        config: &str,
        env: &[(&str, &str)],
        keep: Vec<tempfile::TempDir>,
    ) -> Result<Meshlens, StartFailure> {
        let mut file = tempfile::Builder::new().suffix(".toml").tempfile().expect("config file");
        file.write_all(config.as_bytes()).expect("write config");
        let mut cmd = Command::new(binary());
        cmd.arg("serve").arg("--config").arg(file.path()).current_dir(workspace_root());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.env("RUST_LOG", "info").stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn meshlens");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let logs = std::sync::Arc::new(Mutex::new(Vec::new()));
        let logs2 = logs.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                logs2.lock().map(|mut l| l.push(line)).ok();
            }
        });
        let (tx, rx) = mpsc::channel();
        let out = std::sync::Arc::new(Mutex::new(Vec::new()));
        let out2 = out.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // `https://` when `[server.tls]` is set; a JSON object with `log.format = "json"`.
                if let Some(addr) = listening_address(&line) {
                    let _ = tx.send(addr);
                }
                out2.lock().map(|mut l| l.push(line)).ok();
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(addr) = rx.recv_timeout(Duration::from_millis(50)) {
                return Ok(Meshlens { child, addr, logs, stdout: out, _keep: keep, _config: file });
            }
            if let Ok(Some(status)) = child.try_wait() {
                std::thread::sleep(Duration::from_millis(100));
                let stderr = logs.lock().map(|l| l.join("\n")).unwrap_or_default();
                return Err(StartFailure { code: status.code(), stderr });
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let stderr = logs.lock().map(|l| l.join("\n")).unwrap_or_default();
                return Err(StartFailure {
                    code: None,
                    stderr: format!("did not start within 60 s\n{stderr}"),
                });
            }
        }
    }

    /// GET `path` with optional headers.
    pub fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Response {
        request(&self.addr, "GET", path, headers)
    }

    /// GET `path`.
    pub fn get(&self, path: &str) -> Response {
        self.get_with(path, &[])
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal (`TERM`, `INT`, `STOP`, ...) to the process.
    pub fn signal(&self, sig: &str) {
        let _ =
            Command::new("kill").arg(format!("-{sig}")).arg(self.child.id().to_string()).status();
    }

    /// Waits up to `within` for the process to exit; its exit code (`None`: still running
    /// or ended by a signal).
    pub fn wait_exit(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Whether a stderr line seen so far contains `text`.
    pub fn logged(&self, text: &str) -> bool {
        self.logs.lock().map(|l| l.iter().any(|line| line.contains(text))).unwrap_or(false)
    }

    /// Sends SIGTERM and waits (bounded) for the exit status.
    pub fn terminate(&mut self) -> Option<i32> {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

/// The `host:port` of the start-up line, as text (`meshlens listening on http://ADDR`) or as
/// JSON (`{"event":"listening","address":"http://ADDR",...}`).
pub fn listening_address(line: &str) -> Option<String> {
    let text = line
        .strip_prefix("meshlens listening on http://")
        .or_else(|| line.strip_prefix("meshlens listening on https://"));
    if let Some(addr) = text {
        return Some(addr.to_string());
    }
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    if v["event"] != "listening" {
        return None;
    }
    let url = v["address"].as_str()?;
    url.strip_prefix("http://").or_else(|| url.strip_prefix("https://")).map(str::to_string)
}

impl Drop for Meshlens {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

impl Response {
    /// The body parsed as JSON (panics with the body text when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!("body is not JSON ({e}): {}", String::from_utf8_lossy(&self.body))
        })
    }
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// A header by lower-case name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// reqwest is built without a crypto provider (`rustls-no-provider`), and even a plain
/// `http://` client needs one installed before it is built.
pub fn install_crypto_provider() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// One HTTP request with reqwest's blocking client. It runs on a thread of its own so that
/// sync and `#[tokio::test]` tests alike can call it (the blocking client may not be used
/// on an async worker). Redirects are not followed: tests see the 3xx itself. A GET's JSON
/// answer at a documented operation is checked against the Swagger document
/// ([`crate::api_schema::check`]; a disagreement panics).
pub fn request(addr: &str, method: &str, path: &str, headers: &[(&str, &str)]) -> Response {
    request_within(addr, method, path, headers, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Like [`request`], with an error (not a panic) when no answer comes within `timeout`.
pub fn request_within(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> Result<Response, String> {
    let url = format!("http://{addr}{path}");
    let method = reqwest::Method::from_bytes(method.as_bytes())
        .map_err(|e| format!("method {method}: {e}"))?;
    let headers: Vec<(String, String)> =
        headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    std::thread::scope(|s| {
        s.spawn(|| {
            install_crypto_provider();
            let client = reqwest::blocking::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(timeout)
                .no_proxy()
                .build()
                .map_err(|e| format!("HTTP client: {e}"))?;
            let mut req = client.request(method.clone(), &url);
            for (k, v) in &headers {
                req = req.header(k, v);
            }
            let resp = req.send().map_err(|e| format!("{url}: {e}"))?;
            let status = resp.status().as_u16();
            let headers = resp
                .headers()
                .iter()
                .map(|(k, v)| {
                    (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned())
                })
                .collect();
            let body = resp.bytes().map_err(|e| format!("{url}: body: {e}"))?.to_vec();
            let response = Response { status, headers, body };
            if method == reqwest::Method::GET {
                crate::api_schema::check(
                    path,
                    status,
                    response.header("content-type"),
                    &response.body,
                );
            }
            Ok(response)
        })
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
    })
}

/// `Authorization: Basic ...` for user and password.
pub fn basic_auth(user: &str, password: &str) -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

/// `clients` threads that each GET `path` from the service at `addr` once a second for
/// `seconds` seconds (a console left open on one page), their starts spread evenly over the
/// first second as independent viewers' would be; every response.
pub fn viewers(addr: &str, path: &str, clients: usize, seconds: u64) -> Vec<Response> {
    let begin = Instant::now();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                s.spawn(move || {
                    let start =
                        begin + Duration::from_millis(1000 * c as u64 / clients.max(1) as u64);
                    std::thread::sleep(start.saturating_duration_since(Instant::now()));
                    let mut answers = Vec::new();
                    for i in 0..seconds {
                        answers.push(request(addr, "GET", path, &[]));
                        let next = start + Duration::from_secs(i + 1);
                        std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    }
                    answers
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("viewer thread")).collect()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn basic_auth_encodes_like_rfc7617() {
        assert_eq!(
            super::basic_auth("Aladdin", "open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        assert_eq!(super::basic_auth("a", "b"), "Basic YTpi");
    }
}
