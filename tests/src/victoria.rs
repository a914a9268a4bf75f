//! A real VictoriaMetrics (Debian's `victoria-metrics`; `scripts/test.sh` installs it) for
//! tests: a second store that speaks the Prometheus query API without being Prometheus.
//! [`VmServer::start`] runs it on 127.0.0.1 (OS-picked port) with its own data folder and
//! loads a generated fixture through `/api/v1/import/prometheus`; killed on drop.

use std::{
    io::{BufRead, BufReader, Write},
    net::TcpStream,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use crate::prometheus::{Fixture, http_get, tool};

/// A running VictoriaMetrics single-node server.
pub struct VmServer {
    child: Child,
    port: u16,
    _data: tempfile::TempDir,
}

impl Drop for VmServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The TCP port a process listens on, from /proc (VictoriaMetrics does not log the port it
/// got for `:0`).
fn listening_port(pid: u32) -> Option<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| l.to_str()?.strip_prefix("socket:[")?.strip_suffix(']').map(str::to_string))
        .collect();
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    table.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // local_address, ..., st == 0A (LISTEN), ..., inode
        (f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9]))
            .then(|| u16::from_str_radix(f[1].rsplit(':').next()?, 16).ok())
            .flatten()
    })
}

impl VmServer {
    /// Starts a server and imports the fixture's samples.
    pub fn start(fixture: &Fixture) -> VmServer {
        let data = tempfile::Builder::new().prefix("meshlens-vm-data").tempdir().expect("temp dir");
        let child = Command::new(tool("victoria-metrics"))
            .arg("-httpListenAddr=127.0.0.1:0")
            .arg(format!("-storageDataPath={}", data.path().display()))
            // The fixtures are backfilled history (and a little future): keep all of it,
            // show the newest points at once, and cache nothing while loading.
            .args(["-retentionPeriod=100y", "-search.latencyOffset=0s", "-search.disableCache"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start victoria-metrics (Debian package `victoria-metrics`; scripts/test.sh installs it)");
        let mut vm = VmServer { port: 0, child, _data: data };
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if vm.port == 0 {
                vm.port = listening_port(vm.child.id()).unwrap_or(0);
            }
            if vm.port != 0 && http_get(vm.port, "/health").is_some_and(|(s, _)| s == 200) {
                vm.import(fixture);
                return vm;
            }
            if let Ok(Some(status)) = vm.child.try_wait() {
                panic!("victoria-metrics exited with {status}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("victoria-metrics was not ready within 60 s");
    }

    /// `http://127.0.0.1:PORT`, the URL the `prometheus` backend is given.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Streams the fixture's OpenMetrics samples as Prometheus text (timestamps in ms).
    fn import(&self, fixture: &Fixture) {
        let file = std::fs::File::open(&fixture.openmetrics).expect("open fixture");
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(300))).ok();
        let head = "POST /api/v1/import/prometheus HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                    Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
        s.write_all(head.as_bytes()).expect("send");
        let mut chunk = String::with_capacity(1 << 20);
        let flush = |chunk: &mut String, s: &mut TcpStream| {
            if !chunk.is_empty() {
                s.write_all(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes()).expect("send");
                chunk.clear();
            }
        };
        for line in BufReader::new(file).lines().map_while(Result::ok) {
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            // `name{labels} value seconds` → `... value milliseconds`
            let Some((sample, ts)) = line.rsplit_once(' ') else { continue };
            let ms = match ts.split_once('.') {
                Some((sec, frac)) => format!("{sec}{:0<3}", &frac[..frac.len().min(3)]),
                None => format!("{ts}000"),
            };
            chunk.push_str(sample);
            chunk.push(' ');
            chunk.push_str(&ms);
            chunk.push('\n');
            if chunk.len() > (1 << 20) {
                flush(&mut chunk, &mut s);
            }
        }
        flush(&mut chunk, &mut s);
        s.write_all(b"0\r\n\r\n").expect("send");
        let mut reply = String::new();
        let _ = std::io::Read::read_to_string(&mut s, &mut reply);
        assert!(
            reply.starts_with("HTTP/1.1 204") || reply.starts_with("HTTP/1.1 200"),
            "import failed: {reply}"
        );
        // Make what was imported searchable now.
        assert!(http_get(self.port, "/internal/force_flush").is_some_and(|(s, _)| s == 200));
    }
}
