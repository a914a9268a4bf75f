//! Load generation with Debian's `wrk` (`scripts/test.sh` installs it) and the process
//! figures a load run reads: `tests/load/statuses.lua` counts answers by status and checks
//! `Retry-After` on every 503; [`proc_status`] reads RSS and threads from `/proc`.

use std::process::{Child, Command, Stdio};

use crate::{prometheus::tool, server::workspace_root};

/// What one `wrk` run printed (its `WRK {...}` line).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct WrkRun {
    pub requests: u64,
    pub seconds: f64,
    pub ok: u64,
    pub busy: u64,
    pub busy_without_retry_after: u64,
    pub other: u64,
    pub other_status: u64,
    pub connect_errors: u64,
    pub read_errors: u64,
    pub write_errors: u64,
    pub timeouts: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// A running `wrk`: `connections` connections for `seconds` against `http://{addr}`, going
/// round `paths`. Its open-file limit is raised for the connections (`ulimit -n`).
pub struct Wrk(Child);

impl Wrk {
    pub fn start(addr: &str, paths: &[String], connections: usize, seconds: u64) -> Wrk {
        let wrk = tool("wrk");
        let script = workspace_root().join("tests").join("load").join("statuses.lua");
        let threads = connections.clamp(1, 2);
        let cmd = format!(
            "ulimit -n {} 2>/dev/null; exec {} -t{threads} -c{connections} -d{seconds}s --timeout 10s -s {} http://{addr}/",
            connections + 1024,
            wrk.display(),
            script.display()
        );
        let child = Command::new("sh")
            .args(["-c", &cmd])
            .env("WRK_PATHS", paths.join(" "))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start wrk");
        Wrk(child)
    }

    /// Waits for the run to end; its figures (panics with wrk's output when it printed none).
    pub fn finish(self) -> WrkRun {
        let out = self.0.wait_with_output().expect("wrk output");
        let text = String::from_utf8_lossy(&out.stdout);
        text.lines()
            .find_map(|l| serde_json::from_str(l.strip_prefix("WRK ")?).ok())
            .unwrap_or_else(|| {
                panic!("wrk printed no figures:\n{text}\n{}", String::from_utf8_lossy(&out.stderr))
            })
    }
}

/// `field` (`VmRSS`, `VmHWM`, `Threads`) of a process's `/proc/PID/status`; sizes in KiB.
pub fn proc_status(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
