//! A real browser for the console tests: Debian's `chromium`, headless, driven through
//! `chromedriver` (WebDriver) with fantoccini.
//!
//! One browser session is shared by every test of a test binary (starting Chromium is the
//! slow part); [`with_browser`] hands it out one test at a time. chromedriver runs under a
//! small shell that kills its whole process group (chromedriver and Chromium) when the test
//! process goes away (its stdin closes), since statics are never dropped.
//!
//! `chromium` and `chromedriver` come from Debian's `chromium` and `chromium-driver`
//! packages (`scripts/test.sh` installs them).

use std::{
    future::Future,
    io::{BufRead, BufReader},
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Mutex, OnceLock},
    time::{Duration, Instant},
};

pub use fantoccini::Client;
use fantoccini::wd::WebDriverCompatibleCommand;
use serde_json::{Value, json};

/// The flags the console tests start Chromium with (quiet, reproducible, no network calls home).
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
];

struct Shared {
    client: Client,
    rt: tokio::runtime::Runtime,
    _driver: Child,
}

fn shared() -> &'static Mutex<Shared> {
    static SHARED: OnceLock<Mutex<Shared>> = OnceLock::new();
    SHARED.get_or_init(|| Mutex::new(start()))
}

fn target_tmp() -> PathBuf {
    crate::server::profile_dir()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(crate::server::profile_dir)
        .join("tmp")
}

fn on_path(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()).unwrap_or_else(|| {
        panic!(
            "`{name}` was not found on PATH. The console tests need Debian's `chromium` and `chromium-driver` \
             packages: apt-get install -y --no-install-recommends chromium chromium-driver (scripts/test.sh does this)"
        )
    })
}

fn start() -> Shared {
    let chromedriver = on_path("chromedriver");
    let chromium = on_path("chromium");
    // A fresh profile per test process; folders of processes that are gone are removed here.
    let root = target_tmp().join("console-chromium");
    if let Ok(entries) = std::fs::read_dir(&root) {
        for e in entries.flatten() {
            let pid = e.file_name().to_string_lossy().to_string();
            if pid != std::process::id().to_string() && !Path::new("/proc").join(&pid).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let profile = root.join(std::process::id().to_string());
    let _ = std::fs::remove_dir_all(&profile);
    std::fs::create_dir_all(&profile).expect("chromium profile folder");

    // `read` returns when our end of the pipe closes (the test process exited, however it
    // ended); then the whole group goes.
    let mut driver = Command::new("sh")
        .arg("-c")
        .arg("\"$0\" --port=0 & read _ignored; kill -TERM -$$ 2>/dev/null")
        .arg(&chromedriver)
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver");
    let stdout = driver.stdout.take().expect("chromedriver stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(port) = line.split("started successfully on port ").nth(1) {
                let _ = tx.send(port.trim_end_matches('.').trim().to_string());
            }
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("chromedriver reports its port within 30 s");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|s| s.to_string()).collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    args.push("--window-size=1280,800".into());
    let caps = json!({
        "browserName": "chrome",
        "goog:chromeOptions": { "binary": chromium, "args": args },
        "goog:loggingPrefs": { "browser": "ALL" },
    });
    let Value::Object(caps) = caps else { unreachable!("a JSON object literal") };
    let client = rt
        .block_on(async {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            fantoccini::ClientBuilder::new(connector)
                .capabilities(caps)
                .connect(&format!("http://127.0.0.1:{port}"))
                .await
        })
        .unwrap_or_else(|e| panic!("cannot start a chromium session through chromedriver: {e}"));
    Shared { client, rt, _driver: driver }
}

/// Runs `f` with the shared browser (one test at a time), at 1280×800 with an empty log.
pub fn with_browser<F, Fut, T>(f: F) -> T
where
    F: FnOnce(Client) -> Fut,
    Fut: Future<Output = T>,
{
    let guard = shared().lock().unwrap_or_else(|e| e.into_inner());
    let client = guard.client.clone();
    guard.rt.block_on(async move {
        client.set_window_size(1280, 800).await.expect("set window size");
        let _ = browser_log(&client).await;
        f(client).await
    })
}

/// chromedriver's `POST /session/{id}/se/log` (the browser console, with `goog:loggingPrefs`).
#[derive(Debug)]
struct GetLog;

impl WebDriverCompatibleCommand for GetLog {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }
    fn method_and_body(&self, _url: &url::Url) -> (warp::http::Method, Option<String>) {
        (warp::http::Method::POST, Some(json!({ "type": "browser" }).to_string()))
    }
}

/// The browser console entries since the last call (reading clears them).
pub async fn browser_log(c: &Client) -> Vec<Value> {
    match c.issue_cmd(GetLog).await {
        Ok(Value::Array(entries)) => entries,
        Ok(other) => panic!("unexpected log answer: {other}"),
        Err(e) => panic!("cannot read the browser log: {e}"),
    }
}

/// Console entries of level SEVERE (errors, failed loads, uncaught exceptions).
pub async fn console_errors(c: &Client) -> Vec<String> {
    browser_log(c)
        .await
        .into_iter()
        .filter(|e| e["level"] == "SEVERE")
        .map(|e| e["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Runs `script` (a function body; `arguments` available) and returns its value.
pub async fn js(c: &Client, script: &str, args: Vec<Value>) -> Value {
    c.execute(script, args).await.unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
}

/// Waits (bounded: 60 s) until `script` returns something truthy; returns it.
pub async fn wait_js(c: &Client, script: &str, what: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = js(c, script, vec![]).await;
        let truthy =
            !matches!(&v, Value::Null | Value::Bool(false)) && v != json!("") && v != json!(0);
        if truthy {
            return v;
        }
        if Instant::now() > deadline {
            let url = c.current_url().await.map(|u| u.to_string()).unwrap_or_default();
            let body =
                js(c, "return document.body ? document.body.innerText.slice(0, 2000) : ''", vec![])
                    .await;
            panic!("timed out waiting for {what} on {url}\npage text: {body}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the graph container is drawn (or failed) and returns its attributes.
pub async fn wait_graph(c: &Client) -> Value {
    let v = wait_js(
        c,
        "const g = document.querySelector('[data-testid=graph]');
         if (!g || g.dataset.state === 'loading') return null;
         return {state: g.dataset.state, nodes: g.dataset.nodes, edges: g.dataset.edges, ids: g.dataset.nodeIds,
                 found: g.dataset.foundIds, hidden: g.dataset.hiddenIds, error: g.dataset.error || null};",
        "the graph to be drawn",
    )
    .await;
    assert_eq!(v["state"], "drawn", "graph failed: {v}");
    v
}

/// Saves a PNG screenshot under `target/console-screenshots/NAME.png`.
pub async fn screenshot(c: &Client, name: &str) -> PathBuf {
    let dir = target_tmp()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(target_tmp)
        .join("console-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot folder");
    let png = c.screenshot().await.expect("screenshot");
    let path = dir.join(format!("{name}.png"));
    std::fs::write(&path, png).expect("write screenshot");
    path
}
