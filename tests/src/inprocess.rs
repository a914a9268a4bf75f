//! meshlens served inside the test process: the state built from a configuration (plugins
//! from this build's target folder, a snapshot cluster, a backend from the configuration or
//! one made in the test), and the router served on 127.0.0.1:0 by a runtime of its own.
//! No binary is spawned, so a test pays for no process start.
//!
//! The client side is [`crate::server::Meshlens`]'s (`addr`, `get`, `get_with`, and
//! [`crate::server::request`] for other methods): a test switches by changing the type it
//! starts. What needs a process stays on `Meshlens`: the CLI, signals and drain, stdout
//! (the start-up lines) and the log's format, the listener's own limits, and the reading of
//! environment overrides itself. A test that only wants a key set differently sets it on the
//! typed configuration ([`InProcess::configured`]): an override is only another way to set
//! a key.
//!
//! Each service has its own self-metrics registry (`AppState::telemetry`), so `/metrics`
//! counts only that service's requests, and its own log lines ([`InProcess::logs`], at
//! `info` as the binary the tests start): the service's threads (runtime, blocking pool, CPU
//! pool) log to a subscriber of the service's, not the process's, however many run in the
//! test binary.

use std::{
    io::Write,
    path::PathBuf,
    sync::{Arc, Mutex, mpsc},
    thread::JoinHandle,
    time::Duration,
};

use meshlens::{config::Config, plugins::Registry, state::AppState};
use plugin_api::MetricsBackendBox;

use crate::server::{Response, StartFailure, request, workspace_root};

/// A service running in this process; stopped on drop.
pub struct InProcess {
    pub addr: String,
    /// The state the handlers see (the same one: tests may look into it).
    pub state: Arc<AppState>,
    /// The service's log lines so far (text, as the binary writes them to stderr).
    pub logs: Arc<Mutex<Vec<String>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    _keep: Vec<tempfile::TempDir>,
}

impl InProcess {
    /// [`crate::server::Meshlens::start`]'s arguments. `env` must be empty: the environment
    /// is the process's (set the key with [`InProcess::configured`] instead). Relative paths
    /// in `cluster.snapshot` (home and remotes) and `plugins.dirs` are read from the workspace root, as the
    /// binary started there does.
    pub fn start(
        config: &str,
        env: &[(&str, &str)],
        keep: Vec<tempfile::TempDir>,
    ) -> Result<InProcess, StartFailure> {
        assert!(
            env.is_empty(),
            "the environment is the process's: set the key with InProcess::configured"
        );
        InProcess::serve(config, |_| {}, None, keep)
    }

    /// Like [`InProcess::start`], with `adjust` applied to the parsed configuration before
    /// the service is built (what a `MESHLENS_<SECTION>__<KEY>` variable does to the binary's),
    /// and the result validated again.
    pub fn configured(
        config: &str,
        adjust: impl FnOnce(&mut Config),
        keep: Vec<tempfile::TempDir>,
    ) -> Result<InProcess, StartFailure> {
        InProcess::serve(config, adjust, None, keep)
    }

    /// Like [`InProcess::start`], with `backend` as the metrics backend in place of the
    /// configured one (a store made in the test with [`plugin_api::MetricsAdapter`]).
    pub fn with_backend(
        config: &str,
        backend: MetricsBackendBox,
        keep: Vec<tempfile::TempDir>,
    ) -> Result<InProcess, StartFailure> {
        InProcess::serve(config, |_| {}, Some(Arc::new(backend)), keep)
    }

    fn serve(
        config: &str,
        adjust: impl FnOnce(&mut Config),
        backend: Option<Arc<MetricsBackendBox>>,
        keep: Vec<tempfile::TempDir>,
    ) -> Result<InProcess, StartFailure> {
        crate::server::ensure_built();
        let failed = |stderr: String| StartFailure { code: Some(2), stderr };
        let mut config = Config::from_toml(config).map_err(|e| failed(e.to_string()))?;
        adjust(&mut config);
        config.validate().map_err(|e| failed(e.to_string()))?;
        let root = workspace_root();
        let remotes = config.cluster.remotes.iter_mut().flat_map(|r| r.snapshot.iter_mut());
        for p in config.cluster.snapshot.iter_mut().chain(remotes) {
            *p = root.join(&*p);
        }
        for d in &mut config.plugins.dirs {
            *d = root.join(&*d).display().to_string();
        }
        let (ready_tx, ready_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let logs = Arc::new(Mutex::new(Vec::new()));
        let dispatch = log_dispatch(logs.clone());
        let thread = std::thread::spawn(move || {
            // This thread builds the state (plugins log as they load) and makes the CPU pool,
            // whose threads log where it does; the runtime's threads are told on start.
            let _logging = tracing::dispatcher::set_default(&dispatch);
            let on_start = dispatch.clone();
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .on_thread_start(move || {
                    // For the thread's whole life (it ends with the runtime).
                    std::mem::forget(tracing::dispatcher::set_default(&on_start));
                })
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    let _ = ready_tx.send(Err(format!("runtime: {e}")));
                    return;
                }
            };
            runtime.block_on(async move {
                let dirs: Vec<PathBuf> = config.plugins.dirs.iter().map(PathBuf::from).collect();
                let state = match Registry::load(&dirs) {
                    Ok(registry) => AppState::assemble(config, registry, backend).await,
                    Err(e) => Err(e.into()),
                };
                let state = match state {
                    Ok(s) => Arc::new(s),
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("meshlens: {e}")));
                        return;
                    }
                };
                let bound = meshlens::listener::bind(([127, 0, 0, 1], 0).into())
                    .and_then(|tcp| tcp.local_addr().map(|a| (tcp, a)));
                let (tcp, addr) = match bound {
                    Ok(b) => b,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("bind: {e}")));
                        return;
                    }
                };
                let running = meshlens::server::start(state.clone(), tcp, None);
                let _ = ready_tx.send(Ok((addr.to_string(), state)));
                // Until the test drops its handle (or ends without dropping it).
                let _ = stop_rx.await;
                let _ = tokio::time::timeout(Duration::from_secs(5), running.stop()).await;
            });
            runtime.shutdown_timeout(Duration::from_millis(500));
        });
        match ready_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Ok((addr, state))) => Ok(InProcess {
                addr,
                state,
                logs,
                stop: Some(stop_tx),
                thread: Some(thread),
                _keep: keep,
            }),
            Ok(Err(stderr)) => {
                let _ = thread.join();
                Err(failed(stderr))
            }
            Err(_) => Err(StartFailure { code: None, stderr: "did not start within 60 s".into() }),
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

    /// Whether a log line seen so far contains `text`.
    pub fn logged(&self, text: &str) -> bool {
        self.logs.lock().map(|l| l.iter().any(|line| line.contains(text))).unwrap_or(false)
    }
}

/// A text subscriber at `info` (what the tests' binary runs with, `RUST_LOG=info`) whose
/// lines go to `lines`.
fn log_dispatch(lines: Arc<Mutex<Vec<String>>>) -> tracing::Dispatch {
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
        .with_ansi(false)
        .with_writer(move || Lines(lines.clone(), Vec::new()))
        .finish();
    tracing::Dispatch::new(subscriber)
}

/// One event's text, kept as lines when the formatter is done with it.
struct Lines(Arc<Mutex<Vec<String>>>, Vec<u8>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.1.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.1);
        if let Ok(mut kept) = self.0.lock() {
            kept.extend(text.lines().map(str::to_string));
        }
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// meshlens on the demo manifests (snapshot source), with no plugins and no metrics backend,
/// in this process ([`crate::server::demo_snapshot_server`]'s twin).
pub fn demo_snapshot_service() -> InProcess {
    let plugins = tempfile::tempdir().expect("temp dir");
    let cfg = crate::server::cluster_only_config(
        "source = \"snapshot\"\nsnapshot = [\"config/demo\"]",
        plugins.path(),
    );
    InProcess::start(&cfg, &[], vec![plugins]).expect("meshlens starts")
}
