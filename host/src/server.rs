//! The HTTP server: one warp filter in front of the router, served by [`crate::listener`],
//! and the shutdown sequence.
//!
//! First SIGTERM/SIGINT: `/ready` answers 503 at once while the listener keeps accepting for
//! `server.shutdown_grace` (so the endpoint removal can reach every client), then accepting
//! stops and in-flight requests get `server.drain_timeout` to finish; idle connections are
//! closed at once. A second signal exits at once.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use meshlens_params::HumanDuration;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use warp::Filter;

use crate::{
    api,
    listener::{self, ClientAddr, Limits},
    router::Router,
    state::AppState,
};

/// `[server]`: the listener's address, timeouts and connection limits.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    pub address: String,
    pub port: u16,
    pub web_root: String,
    pub request_timeout: HumanDuration,
    pub metrics: ServerMetricsConfig,
    /// After SIGTERM: how long the listener keeps accepting while `/ready` answers 503.
    pub shutdown_grace: HumanDuration,
    /// After the grace period: the longest in-flight requests may take to finish.
    pub drain_timeout: HumanDuration,
    /// A connection must deliver a complete request head this soon after it opens or
    /// after its first byte arrives.
    pub header_read_timeout: HumanDuration,
    /// A keep-alive connection with no request in flight is closed after this long.
    pub idle_timeout: HumanDuration,
    /// Open connections at most; further clients wait in the kernel's accept queue. Each
    /// may hold up to `max_header_bytes` of buffer: 1,000 × 32 KiB = 32 MiB, which fits the
    /// Deployment's memory next to the answer cache.
    pub max_connections: usize,
    /// Open connections from one client address (IPv6: one /64) at most; more are
    /// answered 503 and closed at once.
    pub max_connections_per_address: usize,
    /// Largest request line plus headers, in bytes (431 above it).
    pub max_header_bytes: usize,
    /// Most header fields in one request (431 above it).
    pub max_headers: usize,
    /// Accept HTTP/2: prior-knowledge h2c in cleartext, ALPN `h2` with TLS.
    pub http2: bool,
    pub tls: TlsConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            address: "127.0.0.1".into(),
            port: 20001,
            web_root: "/".into(),
            request_timeout: HumanDuration(Duration::from_secs(30)),
            metrics: ServerMetricsConfig::default(),
            shutdown_grace: HumanDuration(Duration::from_secs(5)),
            drain_timeout: HumanDuration(Duration::from_secs(20)),
            header_read_timeout: HumanDuration(Duration::from_secs(10)),
            idle_timeout: HumanDuration(Duration::from_secs(60)),
            max_connections: 1_000,
            max_connections_per_address: 200,
            max_header_bytes: 32 * 1024,
            max_headers: 100,
            http2: false,
            tls: TlsConfig::default(),
        }
    }
}

impl ServerConfig {
    /// The checks of `[server]` serde cannot make, each reported to `fail` with its key.
    pub(crate) fn problems(&self, fail: &mut impl FnMut(&str, &str)) {
        if self.address.parse::<std::net::IpAddr>().is_err() {
            fail("server.address", "expected an IP address such as 127.0.0.1");
        }
        let wr = &self.web_root;
        if !wr.starts_with('/') || wr.contains("..") || wr.contains("//") {
            fail("server.web_root", "must start with `/` and contain no `..` or `//`");
        }
        for (key, d) in [
            ("server.request_timeout", self.request_timeout),
            ("server.drain_timeout", self.drain_timeout),
            ("server.header_read_timeout", self.header_read_timeout),
            ("server.idle_timeout", self.idle_timeout),
        ] {
            if d.0.is_zero() {
                fail(key, "must be above zero");
            }
        }
        for (key, n) in [
            ("server.max_connections", self.max_connections),
            ("server.max_connections_per_address", self.max_connections_per_address),
            ("server.max_header_bytes", self.max_header_bytes),
            ("server.max_headers", self.max_headers),
        ] {
            if n == 0 {
                fail(key, "must be above zero");
            }
        }
        // hyper's read buffer (which bounds the head) refuses anything smaller.
        if self.max_header_bytes < 8192 {
            fail("server.max_header_bytes", "must be at least 8192");
        }
        match (&self.tls.cert, &self.tls.key) {
            (Some(_), None) => fail("server.tls.key", "is needed when server.tls.cert is set"),
            (None, Some(_)) => fail("server.tls.cert", "is needed when server.tls.key is set"),
            _ => {}
        }
        if self.metrics.port.is_some_and(|p| p != 0 && p == self.port) {
            fail("server.metrics.port", "must differ from server.port");
        }
    }
}

/// `[server.metrics]`: the self-metrics endpoint `GET {web_root}metrics`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerMetricsConfig {
    /// Served on the main port at all.
    pub enabled: bool,
    /// Served without authentication on the main port.
    pub public: bool,
    /// Also served (always without authentication) at `/metrics` on this port, on `server.address`.
    pub port: Option<u16>,
}

impl Default for ServerMetricsConfig {
    fn default() -> Self {
        ServerMetricsConfig { enabled: true, public: true, port: None }
    }
}

/// `[server.tls]`: both set serves HTTPS only; both unset serves plain HTTP.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsConfig {
    /// PEM file: the certificate chain, leaf first.
    pub cert: Option<String>,
    /// PEM file: the private key (PKCS#8, PKCS#1 or SEC1).
    pub key: Option<String>,
}

/// Binds, logs the bound address on one line, and serves until SIGINT/SIGTERM.
pub async fn serve(state: Arc<AppState>) -> std::io::Result<()> {
    let ip: std::net::IpAddr = state.config.server.address.parse().map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "server.address is not an IP address")
    })?;
    // Handlers go in before the port opens: a signal that arrives early must still shut
    // down gracefully, not kill the process.
    let mut signals = Signals::install()?;
    let tls = listener::tls_acceptor(&state.config.server)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    let tcp = listener::bind(SocketAddr::new(ip, state.config.server.port))?;
    let addr = tcp.local_addr()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    tracing::info!("meshlens listening on {scheme}://{addr}");
    state.lifecycle.set_listening();
    if let Some(port) = state.config.server.metrics.port {
        let probes = crate::probe_port::start(state.clone(), ip, port)?;
        tracing::info!("meshlens metrics on http://{probes}/metrics (also /healthz and /ready)");
        announce(&state, &format!("meshlens metrics on http://{probes}/metrics"), "metrics");
    }
    // Also on stdout, one line, for scripts and tests that start the binary.
    announce(&state, &format!("meshlens listening on {scheme}://{addr}"), "listening");

    let running = start(state.clone(), tcp, tls);

    signals.next().await;
    state.lifecycle.begin_drain();
    let grace = state.config.server.shutdown_grace.0;
    tracing::info!(
        grace_ms = grace.as_millis() as u64,
        "shutting down: /ready answers 503; still accepting during the grace period"
    );
    // From here a second signal ends the process at once, whatever is still running.
    tokio::spawn(async move {
        signals.next().await;
        tracing::warn!("second signal: exiting now");
        crate::logwriter::flush(Duration::from_millis(200));
        std::process::exit(1);
    });
    tokio::time::sleep(grace).await;
    match running.stop().await {
        Ok(0) => tracing::info!("meshlens stopped: every connection closed"),
        Ok(open) => tracing::warn!(
            open,
            "meshlens stopped: drain deadline passed with connections still open"
        ),
        Err(e) => tracing::error!(error = %e, "the listener task failed"),
    }
    Ok(())
}

/// A line on stdout for scripts and tests: as it is with `log.format = "text"`, one JSON
/// object (`message`, `event`, and the `address` in the message) with `"json"`, so that
/// every line the process writes is JSON then.
fn announce(state: &AppState, message: &str, event: &str) {
    match state.config.log.format {
        crate::config::LogFormat::Text => println!("{message}"),
        crate::config::LogFormat::Json => {
            let address = message.rsplit(' ').next().unwrap_or_default();
            let line = serde_json::json!({
                "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                "level": "INFO",
                "target": "meshlens::server",
                "event": event,
                "message": message,
                "address": address,
            });
            println!("{line}");
        }
    }
}

/// The API being served; [`Running::stop`] stops accepting and drains.
pub struct Running {
    stop: watch::Sender<bool>,
    listening: tokio::task::JoinHandle<usize>,
}

impl Running {
    /// Stops accepting; waits for the drain (`server.drain_timeout`). The connections still
    /// open when it ended.
    pub async fn stop(self) -> Result<usize, tokio::task::JoinError> {
        let _ = self.stop.send(true);
        self.listening.await
    }
}

/// Serves the API on `tcp` with the state's background jobs (backend status probe, health
/// export), until [`Running::stop`]. No signals, no stdout: what tests running the service
/// inside their own process call, and what [`serve`] calls once it has bound.
pub fn start(
    state: Arc<AppState>,
    tcp: tokio::net::TcpListener,
    tls: Option<TlsAcceptor>,
) -> Running {
    state.lifecycle.set_listening();
    state.spawn_status_refresh();
    crate::health_export::spawn(state.clone());
    let router = Arc::new(Router::new(api::all_routes(), &state.config.server.web_root));
    let handler_state = state.clone();
    let filter = warp::method()
        .and(warp::path::full())
        .and(warp::query::raw().map(Some).or(warp::any().map(|| None)).unify())
        .and(warp::header::headers_cloned())
        .and(warp::ext::optional::<ClientAddr>())
        .then(
            move |method,
                  path: warp::path::FullPath,
                  query,
                  headers,
                  client: Option<ClientAddr>| {
                let router = router.clone();
                let state = handler_state.clone();
                async move {
                    router
                        .handle(state, method, path.as_str(), query, headers, client.map(|c| c.0))
                        .await
                }
            },
        );
    let service = hyper_util::service::TowerToHyperService::new(warp::service(filter));
    let limits = Arc::new(Limits::from_config(&state.config.server));
    let (stop, stop_rx) = watch::channel(false);
    let listening = tokio::spawn(listener::run(tcp, tls, limits, service, stop_rx));
    Running { stop, listening }
}

/// SIGINT and SIGTERM, as one stream.
struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    #[cfg(unix)]
    fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    #[cfg(not(unix))]
    fn install() -> std::io::Result<Signals> {
        Ok(Signals {})
    }

    #[cfg(unix)]
    async fn next(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {},
            _ = self.terminate.recv() => {},
        }
    }

    #[cfg(not(unix))]
    async fn next(&mut self) {
        if tokio::signal::ctrl_c().await.is_err() {
            // No signal handling: never shut down from here.
            std::future::pending::<()>().await;
        }
    }
}

/// How long after the listener returns the runtime may take to wind down: long enough for
/// log lines, short enough that a backend call stuck on the blocking pool cannot hold the exit.
pub const RUNTIME_SHUTDOWN: Duration = Duration::from_millis(500);
