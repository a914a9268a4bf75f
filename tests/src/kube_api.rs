//! A loopback Kubernetes API server for tests: discovery, list (label and field selectors,
//! `limit`/`continue`), get, and watch (bookmarks, `timeoutSeconds`, 410 for an expired
//! resourceVersion), in the API's own JSON. Objects can be added and removed while it runs.
//!
//! Like a real server it leaves `apiVersion`/`kind` off list items and ends every watch
//! after its timeout (capped by [`Options::watch_max`]), so clients must resume.

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

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use warp::{Filter, http::StatusCode};

/// A resource the server serves.
#[derive(Clone, Debug)]
pub struct ResourceDef {
    /// API group (`""` for core).
    pub group: &'static str,
    /// Versions served, preferred first.
    pub versions: &'static [&'static str],
    /// Kind.
    pub kind: &'static str,
    /// Plural name.
    pub plural: &'static str,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
}

/// The resources served. `config.istio.io` is missing on purpose: a cluster without those CRDs.
pub const RESOURCES: &[ResourceDef] = &[
    ResourceDef {
        group: "",
        versions: &["v1"],
        kind: "Namespace",
        plural: "namespaces",
        namespaced: false,
    },
    ResourceDef { group: "", versions: &["v1"], kind: "Pod", plural: "pods", namespaced: true },
    ResourceDef {
        group: "",
        versions: &["v1"],
        kind: "Service",
        plural: "services",
        namespaced: true,
    },
    ResourceDef {
        group: "",
        versions: &["v1"],
        kind: "ReplicationController",
        plural: "replicationcontrollers",
        namespaced: true,
    },
    ResourceDef {
        group: "apps",
        versions: &["v1"],
        kind: "Deployment",
        plural: "deployments",
        namespaced: true,
    },
    ResourceDef {
        group: "apps",
        versions: &["v1"],
        kind: "ReplicaSet",
        plural: "replicasets",
        namespaced: true,
    },
    ResourceDef {
        group: "apps",
        versions: &["v1"],
        kind: "StatefulSet",
        plural: "statefulsets",
        namespaced: true,
    },
    ResourceDef {
        group: "apps",
        versions: &["v1"],
        kind: "DaemonSet",
        plural: "daemonsets",
        namespaced: true,
    },
    ResourceDef {
        group: "batch",
        versions: &["v1"],
        kind: "Job",
        plural: "jobs",
        namespaced: true,
    },
    ResourceDef {
        group: "batch",
        versions: &["v1"],
        kind: "CronJob",
        plural: "cronjobs",
        namespaced: true,
    },
    ResourceDef {
        group: "autoscaling",
        versions: &["v2"],
        kind: "HorizontalPodAutoscaler",
        plural: "horizontalpodautoscalers",
        namespaced: true,
    },
    ResourceDef {
        group: "networking.istio.io",
        versions: &["v1beta1", "v1alpha3"],
        kind: "VirtualService",
        plural: "virtualservices",
        namespaced: true,
    },
    ResourceDef {
        group: "networking.istio.io",
        versions: &["v1beta1", "v1alpha3"],
        kind: "DestinationRule",
        plural: "destinationrules",
        namespaced: true,
    },
    ResourceDef {
        group: "networking.istio.io",
        versions: &["v1beta1", "v1alpha3"],
        kind: "Gateway",
        plural: "gateways",
        namespaced: true,
    },
    ResourceDef {
        group: "networking.istio.io",
        versions: &["v1beta1", "v1alpha3"],
        kind: "ServiceEntry",
        plural: "serviceentries",
        namespaced: true,
    },
    ResourceDef {
        group: "monitoring.kiali.io",
        versions: &["v1alpha1"],
        kind: "MonitoringDashboard",
        plural: "monitoringdashboards",
        namespaced: true,
    },
];

fn def_by_kind(
    defs: &'static [ResourceDef],
    group: &str,
    kind: &str,
) -> Option<&'static ResourceDef> {
    defs.iter().find(|d| d.group == group && d.kind == kind)
}

fn def_by_plural(
    defs: &'static [ResourceDef],
    group: &str,
    version: &str,
    plural: &str,
) -> Option<&'static ResourceDef> {
    defs.iter().find(|d| d.group == group && d.plural == plural && d.versions.contains(&version))
}

fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() { version.to_string() } else { format!("{group}/{version}") }
}

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
    task: tokio::task::JoinHandle<()>,
}

impl Drop for KubeApi {
    fn drop(&mut self) {
        self.task.abort();
    }
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
        let (s2, s3) = (shared.clone(), shared.clone());
        let route = warp::any()
            .and(warp::path::full())
            .and(warp::query::<HashMap<String, String>>())
            .and(warp::any().map(move || s2.clone()))
            .and_then(|path: warp::path::FullPath, q: HashMap<String, String>, s: Arc<Shared>| async move {
                Ok::<_, Infallible>(handle(path.as_str(), &q, &s))
            });
        // With RBAC on, a request the role does not allow is answered here, before any route.
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
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        *shared.addr.lock().unwrap() = Some(addr);
        let task = tokio::spawn(warp::serve(route).incoming(listener).run());
        KubeApi { addr, shared, task }
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

fn reply(code: StatusCode, body: &Value) -> warp::reply::Response {
    let mut r = warp::reply::Response::new(body.to_string().into());
    *r.status_mut() = code;
    r.headers_mut()
        .insert("content-type", warp::http::HeaderValue::from_static("application/json"));
    r
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code})
}

fn not_found(msg: &str) -> warp::reply::Response {
    reply(StatusCode::NOT_FOUND, &status(404, "NotFound", msg))
}

fn resource_list(defs: &[ResourceDef], group: &str, version: &str) -> Value {
    let resources: Vec<Value> = defs
        .iter()
        .filter(|d| d.group == group && d.versions.contains(&version))
        .map(|d| {
            json!({"name": d.plural, "singularName": d.kind.to_lowercase(), "namespaced": d.namespaced, "kind": d.kind,
                   "verbs": ["get", "list", "watch"], "shortNames": short_names(d.plural)})
        })
        .collect();
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": api_version(group, version), "resources": resources})
}

/// What kubectl users type (`deploy`, `po`, ...).
fn short_names(plural: &str) -> Vec<&'static str> {
    match plural {
        "namespaces" => vec!["ns"],
        "pods" => vec!["po"],
        "services" => vec!["svc"],
        "replicationcontrollers" => vec!["rc"],
        "deployments" => vec!["deploy"],
        "replicasets" => vec!["rs"],
        "statefulsets" => vec!["sts"],
        "daemonsets" => vec!["ds"],
        "cronjobs" => vec!["cj"],
        "horizontalpodautoscalers" => vec!["hpa"],
        "virtualservices" => vec!["vs"],
        "destinationrules" => vec!["dr"],
        "gateways" => vec!["gw"],
        "serviceentries" => vec!["se"],
        _ => vec![],
    }
}

fn groups(defs: &[ResourceDef]) -> Vec<Value> {
    let mut names: Vec<&str> = Vec::new();
    for g in defs.iter().map(|d| d.group).filter(|g| !g.is_empty()) {
        if !names.contains(&g) {
            names.push(g);
        }
    }
    names
        .into_iter()
        .map(|g| {
            let mut versions: Vec<&str> = Vec::new();
            for v in defs.iter().filter(|d| d.group == g).flat_map(|d| d.versions.iter().copied()) {
                if !versions.contains(&v) {
                    versions.push(v);
                }
            }
            let vs: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
                .collect();
            json!({"name": g, "versions": vs, "preferredVersion": vs[0]})
        })
        .collect()
}

fn handle(path: &str, q: &HashMap<String, String>, s: &Arc<Shared>) -> warp::reply::Response {
    if !s.available.load(Ordering::SeqCst) {
        return reply(
            StatusCode::SERVICE_UNAVAILABLE,
            &status(503, "ServiceUnavailable", "the server is not ready"),
        );
    }
    let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|x| !x.is_empty()).collect();
    let (group, version, rest): (&str, &str, &[&str]) = match segs.as_slice() {
        ["version"] => {
            let v = s.opts.git_version.trim_start_matches('v');
            let mut parts = v.split('.');
            let major = parts.next().unwrap_or("1");
            let minor = parts.next().unwrap_or("0");
            return reply(
                StatusCode::OK,
                &json!({"major": major, "minor": minor, "gitVersion": s.opts.git_version,
                "gitCommit": "0000000", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
                "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64"}),
            );
        }
        ["api"] => {
            let addr = s.addr.lock().unwrap().map(|a| a.to_string()).unwrap_or_default();
            return reply(
                StatusCode::OK,
                &json!({"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr}]}),
            );
        }
        ["apis"] => {
            return reply(
                StatusCode::OK,
                &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups(s.opts.resources)}),
            );
        }
        ["apis", g] => {
            return match groups(s.opts.resources).into_iter().find(|x| x["name"] == *g) {
                Some(mut grp) => {
                    grp["kind"] = json!("APIGroup");
                    grp["apiVersion"] = json!("v1");
                    reply(StatusCode::OK, &grp)
                }
                None => not_found("the server could not find the requested resource"),
            };
        }
        ["api", "v1"] => return reply(StatusCode::OK, &resource_list(s.opts.resources, "", "v1")),
        ["apis", g, v] => {
            let list = resource_list(s.opts.resources, g, v);
            return if list["resources"].as_array().is_some_and(|a| !a.is_empty()) {
                reply(StatusCode::OK, &list)
            } else {
                not_found("the server could not find the requested resource")
            };
        }
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (g, v, rest),
        _ => return not_found("the server could not find the requested resource"),
    };
    // rest: [plural] | [plural, name] | [namespaces, ns, plural] | [namespaces, ns, plural, name]
    let (ns, plural, name) = match rest {
        [p] => (None, *p, None),
        ["namespaces", n] if group.is_empty() => (None, "namespaces", Some(*n)),
        [p, n] => (None, *p, Some(*n)),
        ["namespaces", ns, p] => (Some(*ns), *p, None),
        ["namespaces", ns, p, n] => (Some(*ns), *p, Some(*n)),
        _ => return not_found("the server could not find the requested resource"),
    };
    let Some(def) = def_by_plural(s.opts.resources, group, version, plural) else {
        return not_found("the server could not find the requested resource");
    };
    if s.forbidden.lock().unwrap().iter().any(|p| p == def.plural) {
        let msg = format!(
            "{}.{} is forbidden: User \"tester\" cannot list resource \"{}\" in API group \"{}\"",
            def.plural, def.group, def.plural, def.group
        );
        return reply(StatusCode::FORBIDDEN, &status(403, "Forbidden", &msg));
    }
    let av = api_version(def.group, version);
    if let Some(name) = name {
        let st = s.store.lock().unwrap();
        let key = (def.group, def.plural, ns.unwrap_or("").to_string(), name.to_string());
        return match st.objects.get(&key) {
            Some(o) => {
                let mut o = o.clone();
                o["apiVersion"] = json!(av);
                reply(StatusCode::OK, &o)
            }
            None => not_found(&format!("{}.{} \"{name}\" not found", def.plural, def.group)),
        };
    }
    let filter = match Filter_::parse(ns, q) {
        Ok(f) => f,
        Err(e) => return reply(StatusCode::BAD_REQUEST, &status(400, "BadRequest", &e)),
    };
    if q.get("watch").is_some_and(|w| w == "true" || w == "1") {
        return watch(s, def, av, filter, q);
    }
    let st = s.store.lock().unwrap();
    let mut items: Vec<Value> = st
        .objects
        .iter()
        .filter(|((g, p, _, _), o)| *g == def.group && *p == def.plural && filter.matches(o))
        .map(|(_, o)| {
            let mut o = o.clone();
            // Real servers leave the type fields off the items of built-in kinds' lists.
            if let Value::Object(m) = &mut o {
                if def.group.is_empty() || !def.group.contains('.') {
                    m.remove("apiVersion");
                    m.remove("kind");
                } else {
                    m.insert("apiVersion".into(), json!(av));
                }
            }
            o
        })
        .collect();
    let start: usize = q.get("continue").and_then(|c| c.parse().ok()).unwrap_or(0);
    let limit: usize =
        q.get("limit").and_then(|l| l.parse().ok()).filter(|l| *l > 0).unwrap_or(usize::MAX);
    let total = items.len();
    let page: Vec<Value> = items.drain(start.min(total)..).take(limit).collect();
    let mut meta = json!({"resourceVersion": st.rv.to_string()});
    if start.saturating_add(limit) < total {
        meta["continue"] = json!((start + limit).to_string());
    }
    reply(
        StatusCode::OK,
        &json!({"kind": format!("{}List", def.kind), "apiVersion": av, "metadata": meta, "items": page}),
    )
}

/// Label (`a=b`, `a==b`, `a!=b`, `a`, `!a`) and field (`metadata.name`, `metadata.namespace`)
/// selectors plus the namespace of the path.
struct Filter_ {
    ns: Option<String>,
    labels: Vec<(String, String, String)>, // key, op, value
    fields: Vec<(String, bool, String)>,   // path, equal, value
}

impl Filter_ {
    fn parse(ns: Option<&str>, q: &HashMap<String, String>) -> Result<Filter_, String> {
        let mut labels = Vec::new();
        for term in q
            .get("labelSelector")
            .map(String::as_str)
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            if let Some((k, v)) = term.split_once("!=") {
                labels.push((k.trim().into(), "!=".into(), v.trim().into()));
            } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                labels.push((k.trim().into(), "=".into(), v.trim().into()));
            } else if let Some(k) = term.strip_prefix('!') {
                labels.push((k.trim().into(), "!".into(), String::new()));
            } else if term.contains(' ') {
                return Err(format!("unsupported label selector term {term:?}"));
            } else {
                labels.push((term.into(), "exists".into(), String::new()));
            }
        }
        let mut fields = Vec::new();
        for term in q
            .get("fieldSelector")
            .map(String::as_str)
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            let (k, eq, v) = if let Some((k, v)) = term.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (k, true, v)
            } else {
                return Err(format!("invalid field selector {term:?}"));
            };
            if !matches!(k, "metadata.name" | "metadata.namespace") {
                return Err(format!("field label not supported: {k}"));
            }
            fields.push((k.to_string(), eq, v.to_string()));
        }
        Ok(Filter_ { ns: ns.map(str::to_string), labels, fields })
    }

    fn matches(&self, o: &Value) -> bool {
        if self.ns.as_deref().is_some_and(|n| meta_str(o, "namespace") != n) {
            return false;
        }
        let labels = o.pointer("/metadata/labels");
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.labels.iter().all(|(k, op, v)| match op.as_str() {
            "=" => get(k) == Some(v.as_str()),
            "!=" => get(k) != Some(v.as_str()),
            "!" => get(k).is_none(),
            _ => get(k).is_some(),
        }) && self.fields.iter().all(|(k, eq, v)| {
            let actual = meta_str(o, k.trim_start_matches("metadata."));
            (actual == v) == *eq
        })
    }
}

fn line(ev_type: &str, object: &Value) -> Bytes {
    let mut s = json!({"type": ev_type, "object": object}).to_string();
    s.push('\n');
    Bytes::from(s)
}

fn watch(
    s: &Arc<Shared>,
    def: &'static ResourceDef,
    av: String,
    filter: Filter_,
    q: &HashMap<String, String>,
) -> warp::reply::Response {
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(s.opts.watch_max)
        .min(s.opts.watch_max);
    let bookmarks = q.get("allowWatchBookmarks").is_some_and(|b| b == "true");
    let from: Option<u64> =
        q.get("resourceVersion").and_then(|r| r.parse().ok()).filter(|r| *r > 0);
    s.watches.fetch_add(1, Ordering::SeqCst);
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(1024);
    // Subscribe before reading the history so nothing falls between the two.
    let mut live = s.events.subscribe();
    let stamp = |o: &Value| {
        let mut o = o.clone();
        o["apiVersion"] = json!(av);
        o["kind"] = json!(def.kind);
        o
    };
    let mut first: Vec<Bytes> = Vec::new();
    let mut expired = false;
    let mut seen;
    {
        let st = s.store.lock().unwrap();
        seen = st.rv;
        match from {
            Some(rv) if rv < st.log_start => {
                let gone = status(
                    410,
                    "Expired",
                    &format!("too old resource version: {rv} ({})", st.log_start),
                );
                first.push(line("ERROR", &gone));
                expired = true;
                s.expired.fetch_add(1, Ordering::SeqCst);
            }
            Some(rv) => {
                for e in st
                    .log
                    .iter()
                    .filter(|e| e.rv > rv && e.group == def.group && e.plural == def.plural)
                {
                    if filter.matches(&e.object) {
                        first.push(line(e.kind, &stamp(&e.object)));
                    }
                }
            }
            None => {
                for ((g, p, _, _), o) in &st.objects {
                    if *g == def.group && *p == def.plural && filter.matches(o) {
                        first.push(line("ADDED", &stamp(o)));
                    }
                }
            }
        }
    }
    let start_rv = seen;
    let every = s.opts.bookmark_every;
    let bookmark = move |rv: u64| {
        line(
            "BOOKMARK",
            &json!({"kind": def.kind, "apiVersion": api_version(def.group, def.versions[0]), "metadata": {"resourceVersion": rv.to_string()}}),
        )
    };
    let stamp_owned = {
        let av = av.clone();
        move |o: &Value| {
            let mut o = o.clone();
            o["apiVersion"] = json!(av);
            o["kind"] = json!(def.kind);
            o
        }
    };
    let shared = s.clone();
    tokio::spawn(async move {
        for b in first {
            if tx.send(Ok(b)).await.is_err() {
                return;
            }
        }
        if expired {
            return;
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let mut tick = tokio::time::interval(every);
        tick.tick().await;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return,
                _ = tick.tick(), if bookmarks => {
                    if tx.send(Ok(bookmark(seen))).await.is_err() { return; }
                    shared.bookmarks.fetch_add(1, Ordering::SeqCst);
                }
                ev = live.recv() => match ev {
                    Ok(e) => {
                        // Already sent from the history or the snapshot.
                        if e.rv <= start_rv { continue; }
                        seen = seen.max(e.rv);
                        if e.group == def.group
                            && e.plural == def.plural
                            && filter.matches(&e.object)
                            && tx.send(Ok(line(e.kind, &stamp_owned(&e.object)))).await.is_err()
                        {
                            return;
                        }
                    }
                    // Too slow a reader: end the watch, the client resumes with a list if needed.
                    Err(_) => return,
                }
            }
        }
    });
    let body =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
    let mut r = warp::reply::Reply::into_response(warp::reply::stream(body));
    r.headers_mut()
        .insert("content-type", warp::http::HeaderValue::from_static("application/json"));
    r
}

pub use crate::fixtures::read_fixtures;
