//! A loopback Kubernetes API server for tests: discovery, list (label and field selectors,
//! `limit`/`continue`), get, and watch (bookmarks, `timeoutSeconds`, 410 for an expired
//! resourceVersion), in the API's own JSON. Objects can be added and removed while it runs.
//!
//! Like a real server it leaves `apiVersion`/`kind` off list items and ends every watch
//! after its timeout (capped by [`Options::watch_max`]), so clients must resume.

mod requests;
mod resources;
mod watch;

use std::{
    collections::{BTreeMap, HashMap},
    convert::Infallible,
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use tokio::sync::broadcast;
use warp::Filter;

use requests::handle;
use resources::def_by_kind;
pub use resources::{RESOURCES, ResourceDef, without_todays_kinds};

/// Server behaviour knobs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The longest a watch stays open, whatever `timeoutSeconds` asks.
    pub watch_max: Duration,
    /// How often a watch that allows bookmarks gets one.
    pub bookmark_every: Duration,
    /// `gitVersion` of `/version`.
    pub git_version: String,
    /// Users and rights for TokenReview and SubjectAccessReview (`None`: not served).
    pub reviews: Option<Arc<crate::kube_reviews::Reviews>>,
    /// The kinds served ([`RESOURCES`] by default).
    pub resources: &'static [ResourceDef],
    /// When set, requests are authenticated and authorized as `crate::rbac` describes.
    pub rbac: Option<Arc<crate::rbac::Rbac>>,
}

impl Default for Options {
    fn default() -> Self {
        let (watch_max, bookmark_every) = (Duration::from_secs(5), Duration::from_secs(1));
        Options {
            watch_max,
            bookmark_every,
            git_version: "v1.33.2".into(),
            resources: RESOURCES,
            rbac: None,
            reviews: None,
        }
    }
}

#[derive(Clone, Debug)]
struct Event {
    rv: u64,
    plural: &'static str,
    group: &'static str,
    kind: &'static str, // ADDED, MODIFIED, DELETED
    object: Value,
}

type Key = (&'static str, &'static str, String, String); // group, plural, namespace, name

#[derive(Default)]
struct Store {
    rv: u64,
    objects: BTreeMap<Key, Value>,
    log: Vec<Event>,
    /// Watches from a resourceVersion below this get 410 Gone.
    log_start: u64,
}

struct Shared {
    store: Mutex<Store>,
    events: broadcast::Sender<Event>,
    opts: Options,
    available: AtomicBool,
    /// Every connection is silent, both ways (a hung server, a partition) until a restart.
    hung: AtomicBool,
    /// Plurals every list and watch of answers 403 (an RBAC rule the client lacks).
    forbidden: Mutex<Vec<String>>,
    addr: Mutex<Option<SocketAddr>>,
    watches: AtomicUsize,
    expired: AtomicUsize,
    bookmarks: AtomicUsize,
}

/// A running loopback API server; stops when dropped.
pub struct KubeApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// The accept loop, which owns every connection (`None` while stopped).
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for KubeApi {
    fn drop(&mut self) {
        if let Some(t) = self.task.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            t.abort();
        }
    }
}

/// A connection that goes silent both ways, and stays so, once its server hangs: the
/// client sees neither an answer nor an error, only its own timeouts.
struct Conn {
    io: tokio::net::TcpStream,
    shared: Arc<Shared>,
}

impl Conn {
    fn hung(&self) -> bool {
        self.shared.hung.load(Ordering::SeqCst)
    }
}

impl tokio::io::AsyncRead for Conn {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.hung() {
            return std::task::Poll::Pending;
        }
        std::pin::Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Conn {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.hung() {
            return std::task::Poll::Pending;
        }
        std::pin::Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.hung() {
            return std::task::Poll::Pending;
        }
        std::pin::Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.hung() {
            return std::task::Poll::Pending;
        }
        std::pin::Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Serves `shared` on `listener`. Connections are tasks of the accept loop's own set, so
/// aborting the loop cuts them too (open watches included), as a server that goes away does.
fn serve(shared: Arc<Shared>, listener: tokio::net::TcpListener) -> tokio::task::JoinHandle<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let s2 = shared.clone();
    let route = warp::any()
        .and(warp::path::full())
        .and(warp::query::<HashMap<String, String>>())
        .and(warp::any().map(move || s2.clone()))
        .and_then(
            |path: warp::path::FullPath, q: HashMap<String, String>, s: Arc<Shared>| async move {
                Ok::<_, Infallible>(handle(path.as_str(), &q, &s))
            },
        );
    // With RBAC on, a request the role does not allow is answered here, before any route.
    let s3 = shared.clone();
    let gate = warp::method()
        .and(warp::header::optional::<String>("authorization"))
        .and(warp::path::full())
        .and(warp::query())
        .and_then(
            move |m: warp::http::Method,
                  auth: Option<String>,
                  path: warp::path::FullPath,
                  q: HashMap<String, String>| {
                let denied = s3
                    .opts
                    .rbac
                    .as_ref()
                    .and_then(|r| r.deny(m.as_str(), path.as_str(), &q, auth.as_deref()));
                async move { denied.ok_or_else(warp::reject::not_found) }
            },
        );
    let route = gate.or(crate::kube_reviews::routes(shared.opts.reviews.clone())).or(route);
    let service = hyper_util::service::TowerToHyperService::new(warp::service(route));
    tokio::spawn(async move {
        let mut conns = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((io, _)) = accepted else { continue };
                    let (svc, conn) = (service.clone(), Conn { io, shared: shared.clone() });
                    conns.spawn(async move {
                        let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                        let _ = builder.http1_only().serve_connection(TokioIo::new(conn), svc).await;
                    });
                }
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
            }
        }
    })
}

fn meta_str<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or("")
}

fn key_of(defs: &'static [ResourceDef], v: &Value) -> Result<(Key, &'static ResourceDef), String> {
    let av = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    let group = av.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
    let def = def_by_kind(defs, group, kind).ok_or_else(|| format!("not served: {av} {kind}"))?;
    let name = meta_str(v, "name");
    if name.is_empty() {
        return Err(format!("{kind} without metadata.name"));
    }
    let ns = if def.namespaced { meta_str(v, "namespace") } else { "" };
    let ns = if def.namespaced && ns.is_empty() { "default" } else { ns };
    Ok(((def.group, def.plural, ns.to_string(), name.to_string()), def))
}

impl KubeApi {
    /// Starts a server on 127.0.0.1 (OS-picked port) serving `objects`. Their own
    /// `metadata.resourceVersion`s are kept (like a restored cluster); missing ones are assigned.
    pub async fn start(objects: Vec<Value>, opts: Options) -> KubeApi {
        let (events, _) = broadcast::channel(16384);
        let shared = Arc::new(Shared {
            store: Mutex::new(Store::default()),
            events,
            opts,
            available: AtomicBool::new(true),
            hung: AtomicBool::new(false),
            forbidden: Mutex::new(Vec::new()),
            addr: Mutex::new(None),
            watches: AtomicUsize::new(0),
            expired: AtomicUsize::new(0),
            bookmarks: AtomicUsize::new(0),
        });
        {
            let mut st = shared.store.lock().unwrap();
            for mut o in objects {
                let (key, def) = key_of(shared.opts.resources, &o).unwrap();
                let rv = meta_str(&o, "resourceVersion").parse::<u64>().ok();
                let rv = rv.unwrap_or(st.rv + 1);
                st.rv = st.rv.max(rv);
                normalize(&mut o, def, &key.2, rv);
                st.objects.insert(key, o);
            }
            st.log_start = st.rv;
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        *shared.addr.lock().unwrap() = Some(addr);
        let task = Mutex::new(Some(serve(shared.clone(), listener)));
        KubeApi { addr, shared, task }
    }

    /// Goes away as a stopped API server does: the port refuses connections and every open
    /// connection, watches included, is cut. Objects and history are kept for [`Self::restart`].
    pub async fn stop(&self) {
        let task = self.task.lock().unwrap().take();
        if let Some(t) = task {
            t.abort();
            let _ = t.await;
        }
    }

    /// Hangs as a wedged server or a partition does: connections stay open, new ones are
    /// accepted, but nothing is read or written any more, until [`Self::restart`].
    pub fn hang(&self) {
        self.shared.hung.store(true, Ordering::SeqCst);
    }

    /// Serves again on the same address with the same objects and history, as a restarted
    /// API server over the same etcd (stops it first if it runs, cutting every connection).
    pub async fn restart(&self) {
        self.stop().await;
        self.shared.hung.store(false, Ordering::SeqCst);
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        // The cut connections' ports linger in TIME_WAIT.
        socket.set_reuseaddr(true).unwrap();
        socket.bind(self.addr).unwrap();
        let listener = socket.listen(1024).unwrap();
        *self.task.lock().unwrap() = Some(serve(self.shared.clone(), listener));
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Writes a kubeconfig (context `loopback`) that points at this server.
    pub fn write_kubeconfig(&self, dir: &Path) -> PathBuf {
        let path = dir.join("kubeconfig");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: loopback\n  cluster:\n    server: {}\nusers:\n- name: tester\n  user:\n    token: test-token\ncontexts:\n- name: loopback\n  context:\n    cluster: loopback\n    user: tester\ncurrent-context: loopback\n",
            self.url()
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Makes every request answer 503 (`false`) or normally (`true`).
    pub fn set_available(&self, up: bool) {
        self.shared.available.store(up, Ordering::SeqCst);
    }

    /// Makes every request for resource `plural` (e.g. `cronjobs`) answer 403 Forbidden.
    pub fn forbid(&self, plural: &str) {
        self.shared.forbidden.lock().unwrap().push(plural.to_string());
    }

    /// Creates or replaces an object (new resourceVersion; ADDED or MODIFIED event).
    pub fn apply(&self, mut obj: Value) {
        let (key, def) = key_of(self.shared.opts.resources, &obj).unwrap();
        let mut st = self.shared.store.lock().unwrap();
        st.rv += 1;
        let rv = st.rv;
        normalize(&mut obj, def, &key.2, rv);
        let kind = if st.objects.contains_key(&key) { "MODIFIED" } else { "ADDED" };
        st.objects.insert(key, obj.clone());
        let ev = Event { rv, plural: def.plural, group: def.group, kind, object: obj };
        st.log.push(ev.clone());
        let _ = self.shared.events.send(ev);
    }

    /// Deletes an object (DELETED event); false if it did not exist.
    pub fn delete(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> bool {
        let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        let Some(def) = def_by_kind(self.shared.opts.resources, group, kind) else { return false };
        let key = (
            def.group,
            def.plural,
            if def.namespaced { namespace.to_string() } else { String::new() },
            name.to_string(),
        );
        let mut st = self.shared.store.lock().unwrap();
        let Some(mut obj) = st.objects.remove(&key) else { return false };
        st.rv += 1;
        let rv = st.rv;
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        let ev = Event { rv, plural: def.plural, group: def.group, kind: "DELETED", object: obj };
        st.log.push(ev.clone());
        let _ = self.shared.events.send(ev);
        true
    }

    /// Forgets the event history: watches resuming from an older version get 410 Gone.
    pub fn compact(&self) {
        let mut st = self.shared.store.lock().unwrap();
        st.log.clear();
        st.log_start = st.rv;
    }

    /// Counters of what was served: (watch requests, 410 Gone answers, bookmarks sent).
    pub fn served(&self) -> (usize, usize, usize) {
        let s = &self.shared;
        (
            s.watches.load(Ordering::SeqCst),
            s.expired.load(Ordering::SeqCst),
            s.bookmarks.load(Ordering::SeqCst),
        )
    }

    /// Number of objects held.
    pub fn len(&self) -> usize {
        self.shared.store.lock().unwrap().objects.len()
    }

    /// Whether it holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn normalize(o: &mut Value, def: &ResourceDef, ns: &str, rv: u64) {
    let meta = &mut o["metadata"];
    meta["resourceVersion"] = json!(rv.to_string());
    if def.namespaced {
        meta["namespace"] = json!(ns);
    }
    if meta.get("uid").is_none() {
        meta["uid"] = json!(format!("uid-{rv}"));
    }
    if meta.get("creationTimestamp").is_none() {
        meta["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
}

pub use crate::fixtures::read_fixtures;
