//! The listener: hyper underneath the warp filter, so that timeouts, the connection cap,
//! header limits, HTTP/2 and TLS are ours to set (`warp::serve` exposes none of them).
//!
//! hyper's own header-read timer also runs while a keep-alive connection waits for its
//! next request, so it cannot give a 10 s head deadline next to a 60 s idle allowance;
//! each connection gets a small watchdog ([`Activity`]) instead.

use std::{
    collections::HashMap,
    convert::Infallible,
    io,
    net::{IpAddr, SocketAddr},
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::{Duration, Instant},
};

use hyper::{Request, Response, body::Incoming};
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::conn::auto,
};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::TcpListener,
    sync::{Semaphore, watch},
};
use tokio_rustls::TlsAcceptor;

use crate::config::ServerConfig;

/// The client's address, as a request extension (read it with `warp::ext::optional`).
#[derive(Clone, Copy, Debug)]
pub struct ClientAddr(pub SocketAddr);

/// What the listener was told to enforce.
pub struct Limits {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
    pub max_connections_per_address: usize,
    pub drain_timeout: Duration,
    builder: auto::Builder<TokioExecutor>,
}

impl Limits {
    pub fn from_config(cfg: &ServerConfig) -> Limits {
        let mut builder = auto::Builder::new(TokioExecutor::new());
        if !cfg.http2 {
            builder = builder.http1_only();
        }
        builder
            .http1()
            .timer(TokioTimer::new())
            // The watchdog enforces it (see the module comment).
            .header_read_timeout(None)
            .keep_alive(true)
            .max_buf_size(cfg.max_header_bytes)
            .max_headers(cfg.max_headers);
        builder
            .http2()
            .timer(TokioTimer::new())
            .max_header_list_size(u32::try_from(cfg.max_header_bytes).unwrap_or(u32::MAX));
        Limits {
            header_read_timeout: cfg.header_read_timeout.0,
            idle_timeout: cfg.idle_timeout.0,
            max_connections: cfg.max_connections,
            max_connections_per_address: cfg.max_connections_per_address,
            drain_timeout: cfg.drain_timeout.0,
            builder,
        }
    }
}

/// Why the TLS settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("invalid configuration: `server.tls.cert`: {0}")]
    Cert(String),
    #[error("invalid configuration: `server.tls.key`: {0}")]
    Key(String),
}

/// The TLS acceptor for `[server.tls]`, or `None` when TLS is off.
pub fn tls_acceptor(cfg: &ServerConfig) -> Result<Option<TlsAcceptor>, TlsError> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
    let (Some(cert), Some(key)) = (&cfg.tls.cert, &cfg.tls.key) else { return Ok(None) };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError::Cert(format!("{cert}: {e}")))?;
    if certs.is_empty() {
        return Err(TlsError::Cert(format!("{cert}: no PEM certificate in the file")));
    }
    let key =
        PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Key(format!("{key}: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Cert(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| TlsError::Key(format!("does not fit the certificate: {e}")))?;
    config.alpn_protocols = if cfg.http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(Some(TlsAcceptor::from(Arc::new(config))))
}

/// Binds the service's port with the longest accept queue the kernel allows (it caps the
/// request at `net.core.somaxconn`, as Go's servers ask). A plain bind asked for 128
/// places: a burst of a few thousand new connections, as a load balancer's reconnects are,
/// overflowed it while the accept loop was busy, and the clients past it waited for SYN
/// retries, or were reset when SYN cookies had answered them.
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As a plain bind does on Unix: a restart need not wait for the old port's TIME_WAITs.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(65_535)
}

/// Accepts connections until `stop` turns true, then stops accepting, asks every
/// connection to finish what it is serving and close, and returns once all have closed or
/// `limits.drain_timeout` has passed (the number still open then).
pub async fn run<S, B>(
    tcp: TcpListener,
    tls: Option<TlsAcceptor>,
    limits: Arc<Limits>,
    service: S,
    mut stop: watch::Receiver<bool>,
) -> usize
where
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let per_address = Arc::new(PerAddress::new(limits.max_connections_per_address));
    loop {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            _ = stop.wait_for(|s| *s) => break,
        };
        let accepted = tokio::select! {
            a = tcp.accept() => a,
            _ = stop.wait_for(|s| *s) => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Some(address_slot) = per_address.enter(peer.ip()) else {
            tracing::debug!(%peer, "refused: server.max_connections_per_address reached");
            drop(permit);
            if tls.is_none() {
                tokio::spawn(refuse(stream));
            }
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (tls, limits, service, stop) =
            (tls.clone(), limits.clone(), service.clone(), stop.clone());
        tokio::spawn(async move {
            let activity = Arc::new(Activity::new());
            let io = Watched { inner: stream, activity: activity.clone() };
            match tls {
                None => serve(io, peer, activity, &limits, service, stop).await,
                Some(acceptor) => {
                    // A client that never finishes the handshake must not keep its slot.
                    match tokio::time::timeout(limits.header_read_timeout, acceptor.accept(io))
                        .await
                    {
                        Ok(Ok(tls_io)) => {
                            // The watchdog sees ciphertext; ALPN says whether it is HTTP/2.
                            if tls_io.get_ref().1.alpn_protocol() == Some(b"h2") {
                                activity.lock().h2 = true;
                            }
                            serve(tls_io, peer, activity, &limits, service, stop).await
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                }
            }
            drop(address_slot);
            drop(permit);
        });
    }
    drop(tcp);
    let open = limits.max_connections - slots.available_permits();
    tracing::info!(open, "listener closed; draining connections");
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    match tokio::time::timeout(limits.drain_timeout, slots.acquire_many(all)).await {
        Ok(_) => 0,
        Err(_) => limits.max_connections - slots.available_permits(),
    }
}

/// Answers a connection past `server.max_connections_per_address` with a 503 and closes it,
/// within 200 ms whatever the client does. The request is read and dropped first: closing
/// with it unread would reset the connection, and the client would never see the answer.
async fn refuse(mut stream: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = tokio::time::timeout(Duration::from_millis(200), async {
        stream.write_all(REFUSED_PER_ADDRESS).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 1024];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<(), io::Error>(())
    })
    .await;
}

/// Serves one connection until it ends, its watchdog fires, or the drain closes it.
async fn serve<IO, S, B>(
    io: IO,
    peer: SocketAddr,
    activity: Arc<Activity>,
    limits: &Limits,
    service: S,
    mut stop: watch::Receiver<bool>,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let tracker = activity.clone();
    let svc = hyper::service::service_fn(move |mut req: Request<Incoming>| {
        req.extensions_mut().insert(ClientAddr(peer));
        let guard = tracker.request_started();
        let fut = service.call(req);
        async move {
            let r = fut.await;
            drop(guard);
            r
        }
    });
    let conn = limits.builder.serve_connection(TokioIo::new(io), svc);
    tokio::pin!(conn);
    let watchdog = activity.clone().watchdog(limits.header_read_timeout, limits.idle_timeout);
    tokio::pin!(watchdog);
    let mut closing = false;
    loop {
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
                return;
            }
            why = &mut watchdog => {
                tracing::debug!(%peer, why, "closing connection");
                return;
            }
            _ = stop.wait_for(|s| *s), if !closing => {
                if activity.idle() {
                    return;
                }
                // Answer what is in flight, then close (HTTP/1 `Connection: close`, HTTP/2 GOAWAY).
                conn.as_mut().graceful_shutdown();
                closing = true;
            }
        }
    }
}

const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0";

/// The whole answer to a connection past `server.max_connections_per_address`.
const REFUSED_PER_ADDRESS: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 72\r\n\r\n{\"code\":503,\"message\":\"too many connections from this client's address\"}";

/// Open connections per client address, so that one client cannot take every slot of
/// `server.max_connections`. IPv6 clients are counted by /64 (one host gets a whole /64
/// and can pick any address in it). Entries exist only while connections are open, so the
/// map holds at most `max_connections` of them.
struct PerAddress {
    cap: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection's place in [`PerAddress`]; gives it back when dropped.
struct AddressSlot {
    table: Arc<PerAddress>,
    key: IpAddr,
}

impl PerAddress {
    fn new(cap: usize) -> PerAddress {
        PerAddress { cap, open: Mutex::new(HashMap::new()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, usize>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn enter(self: &Arc<Self>, ip: IpAddr) -> Option<AddressSlot> {
        let key = address_key(ip);
        let mut open = self.lock();
        let n = open.entry(key).or_insert(0);
        if *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(AddressSlot { table: self.clone(), key })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self.table.lock();
        if let Some(n) = open.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// The key a client address is counted under: IPv4 as is (also when mapped into IPv6),
/// IPv6 by its /64.
pub fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
    }
}

/// What a connection is doing, for its watchdog.
struct Activity {
    opened: Instant,
    state: Mutex<ActivityState>,
    /// Wakes the watchdog when its deadline may have moved earlier.
    changed: tokio::sync::Notify,
}

struct ActivityState {
    /// Requests being answered.
    active: usize,
    /// Requests started so far.
    served: u64,
    /// When the last request finished or the last bytes were written.
    idle_since: Instant,
    /// First byte of a request head not yet complete (HTTP/1).
    head_started: Option<Instant>,
    /// Whether the bytes read so far are an HTTP/2 connection.
    h2: bool,
    bytes_read: u64,
}

struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.active = s.active.saturating_sub(1);
        s.idle_since = Instant::now();
        drop(s);
        self.0.changed.notify_one();
    }
}

impl Activity {
    fn new() -> Activity {
        let now = Instant::now();
        Activity {
            opened: now,
            state: Mutex::new(ActivityState {
                active: 0,
                served: 0,
                idle_since: now,
                head_started: None,
                h2: false,
                bytes_read: 0,
            }),
            changed: tokio::sync::Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ActivityState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn request_started(self: &Arc<Self>) -> RequestGuard {
        let mut s = self.lock();
        s.active += 1;
        s.served += 1;
        s.head_started = None;
        RequestGuard(self.clone())
    }

    /// No request in flight.
    fn idle(&self) -> bool {
        self.lock().active == 0
    }

    fn on_read(&self, bytes: &[u8]) {
        let mut s = self.lock();
        if s.bytes_read == 0 && bytes.starts_with(H2_PREFACE) {
            s.h2 = true;
        }
        s.bytes_read += bytes.len() as u64;
        if s.active == 0 && s.head_started.is_none() && !s.h2 {
            s.head_started = Some(Instant::now());
            drop(s);
            self.changed.notify_one();
        }
    }

    fn on_write(&self) {
        self.lock().idle_since = Instant::now();
    }

    /// When the connection is to be closed if nothing changes, and why; `None` while a
    /// request is being answered (the request timeout bounds that).
    fn deadline(&self, head: Duration, idle: Duration) -> Option<(Instant, &'static str)> {
        let s = self.lock();
        if s.active > 0 {
            return None;
        }
        Some(if let Some(t) = s.head_started {
            (t + head, "request head not complete within server.header_read_timeout")
        } else if s.served == 0 {
            (self.opened + head, "no request within server.header_read_timeout")
        } else {
            (s.idle_since + idle, "idle for server.idle_timeout")
        })
    }

    /// Resolves (with the reason) when the connection has overstayed.
    async fn watchdog(self: Arc<Self>, head: Duration, idle: Duration) -> &'static str {
        loop {
            let wait = match self.deadline(head, idle) {
                None => None,
                Some((at, why)) if at <= Instant::now() => return why,
                Some((at, _)) => Some(at),
            };
            tokio::select! {
                _ = async { match wait { Some(at) => tokio::time::sleep_until(at.into()).await, None => std::future::pending().await } } => {}
                _ = self.changed.notified() => {}
            }
        }
    }
}

/// A stream that reports reads and writes to its connection's [`Activity`].
struct Watched<T> {
    inner: T,
    activity: Arc<Activity>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.on_read(&buf.filled()[before..]);
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.on_write();
        }
        r
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.on_write();
        }
        r
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
#[path = "listener_reference.rs"]
mod reference;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_is_a_complete_answer() {
        let text = std::str::from_utf8(REFUSED_PER_ADDRESS).expect("ASCII");
        let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .and_then(|v| v.parse().ok())
            .expect("Content-Length");
        assert_eq!(length, body.len());
        let v: serde_json::Value = serde_json::from_str(body).expect("JSON body");
        assert_eq!(v["code"], 503);
    }

    #[test]
    fn ipv6_clients_count_by_slash_64_and_slots_are_given_back() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key(other));
        let mapped: IpAddr = "::ffff:127.0.0.2".parse().unwrap();
        assert_eq!(address_key(mapped), "127.0.0.2".parse::<IpAddr>().unwrap());

        let table = Arc::new(PerAddress::new(2));
        let one = table.enter(a).expect("first");
        let _two = table.enter(b).expect("second");
        assert!(table.enter(a).is_none(), "a third from the same /64");
        assert!(table.enter(other).is_some(), "another /64 has its own count");
        drop(one);
        assert!(table.enter(a).is_some(), "a closed connection gives its place back");
    }
}
