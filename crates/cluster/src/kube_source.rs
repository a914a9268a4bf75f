//! The `kube` source: one reflector (list + watch) per kind keeps an in-memory cache
//! current, so requests never wait on the API server once the caches are synced.

use std::{
    hash::Hash,
    sync::{
        Arc, OnceLock,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use k8s_openapi::api::{
    apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet},
    autoscaling::v2::HorizontalPodAutoscaler,
    batch::v1::{CronJob, Job},
    core::v1::{Namespace, ReplicationController},
};
use kube::{
    Api, Client, Resource,
    api::{ApiResource, DynamicObject, GroupVersionKind},
    config::{
        AuthInfo, Cluster, Context, KubeConfigOptions, Kubeconfig, NamedAuthInfo, NamedCluster,
        NamedContext,
    },
    runtime::reflector::Store,
};
use meshlens_telemetry::Metrics;
use tokio::sync::watch;

use crate::{
    ClusterConfig, ClusterError,
    liveness::{Liveness, RETRY_MAX},
    mesh::{ALL_MESH_KINDS, MeshKind, MeshObject, TODAYS_KINDS},
    raw::{Autoscaler, RawObjects},
    records::{PodRecord, ServiceRecord, WorkloadRecord},
    watches::{Forbidden, Shared, kind_name, reflect, reflect_typed},
};

/// The caches, created once discovery has run.
struct Stores {
    namespaces: Store<Namespace>,
    pods: Store<PodRecord>,
    services: Store<ServiceRecord>,
    deployments: Store<WorkloadRecord<Deployment>>,
    replica_sets: Store<WorkloadRecord<ReplicaSet>>,
    replication_controllers: Store<WorkloadRecord<ReplicationController>>,
    stateful_sets: Store<WorkloadRecord<StatefulSet>>,
    daemon_sets: Store<WorkloadRecord<DaemonSet>>,
    jobs: Store<WorkloadRecord<Job>>,
    cron_jobs: Store<WorkloadRecord<CronJob>>,
    hpas: Store<HorizontalPodAutoscaler>,
    mesh: Vec<(MeshKind, Store<DynamicObject>)>,
}

/// The running `kube` source.
pub(crate) struct KubeSource {
    stores: Arc<OnceLock<Stores>>,
    forbidden: Arc<Forbidden>,
    ready: watch::Receiver<bool>,
    generation: Arc<AtomicU64>,
    version: Arc<OnceLock<String>>,
    tasks: Vec<tokio::task::AbortHandle>,
    /// The kinds of [`TODAYS_KINDS`] discovery did not find (their CRDs are not installed).
    absent: Arc<OnceLock<Vec<MeshKind>>>,
    /// The service's own client, for requests beyond the caches (access reviews).
    client: Client,
    live: Arc<Liveness>,
}

impl Drop for KubeSource {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// The client and the API server's URL (for messages). Builds the configuration only: no
/// request reaches the server here, so a source whose server is down still starts.
async fn client(cfg: &ClusterConfig) -> Result<(Client, String), ClusterError> {
    let opts = KubeConfigOptions { context: cfg.context.clone(), ..Default::default() };
    let config = match &cfg.kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path).map_err(|e| {
                ClusterError::BadConfig(format!("cluster.kubeconfig {}: {e}", path.display()))
            })?;
            kube::Config::from_custom_kubeconfig(kc, &opts)
                .await
                .map_err(|e| ClusterError::BadConfig(e.to_string()))?
        }
        None if cfg.context.is_some() => kube::Config::from_kubeconfig(&opts)
            .await
            .map_err(|e| ClusterError::BadConfig(e.to_string()))?,
        // In a pod: the service account, whatever kubeconfig the image may carry.
        None if std::env::var_os(SERVICE_HOST).is_some() => {
            in_cluster(&cfg.service_account_dir).await?
        }
        None => kube::Config::infer().await.map_err(|e| ClusterError::BadConfig(e.to_string()))?,
    };
    // The server's URL for messages, without any user information it might carry.
    let url = &config.cluster_url;
    let server = format!(
        "{}://{}{}{}",
        url.scheme_str().unwrap_or("https"),
        url.host().unwrap_or("?"),
        url.port_u16().map(|p| format!(":{p}")).unwrap_or_default(),
        url.path().trim_end_matches('/')
    );
    let client = Client::try_from(config).map_err(|e| ClusterError::Kube(e.to_string()))?;
    Ok((client, server))
}

const SERVICE_HOST: &str = "KUBERNETES_SERVICE_HOST";
const SERVICE_PORT: &str = "KUBERNETES_SERVICE_PORT";

/// The in-cluster configuration `kube` would make (`https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`,
/// the account's token file re-read as it rotates, its CA), with the account folder from
/// `cluster.service_account_dir` instead of kube's fixed path.
async fn in_cluster(dir: &std::path::Path) -> Result<kube::Config, ClusterError> {
    let bad = |m: String| ClusterError::BadConfig(m);
    let host = std::env::var(SERVICE_HOST).map_err(|e| bad(format!("{SERVICE_HOST}: {e}")))?;
    let port: u16 = std::env::var(SERVICE_PORT)
        .map_err(|e| bad(format!("{SERVICE_PORT}: {e}")))?
        .parse()
        .map_err(|e| bad(format!("{SERVICE_PORT}: {e}")))?;
    let host = if host.parse::<std::net::Ipv6Addr>().is_ok() { format!("[{host}]") } else { host };
    let file = |name: &str| {
        let p = dir.join(name);
        if p.is_file() {
            Ok(p.display().to_string())
        } else {
            Err(bad(format!(
                "in-cluster: {} is missing (cluster.service_account_dir)",
                p.display()
            )))
        }
    };
    let (token, ca) = (file("token")?, file("ca.crt")?);
    let namespace =
        std::fs::read_to_string(dir.join("namespace")).ok().map(|n| n.trim().to_string());
    let kc = Kubeconfig {
        clusters: vec![NamedCluster {
            name: "in-cluster".into(),
            cluster: Some(Cluster {
                server: Some(format!("https://{host}:{port}")),
                certificate_authority: Some(ca),
                ..Default::default()
            }),
            ..Default::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: "service-account".into(),
            auth_info: Some(AuthInfo { token_file: Some(token), ..Default::default() }),
            ..Default::default()
        }],
        contexts: vec![NamedContext {
            name: "in-cluster".into(),
            context: Some(Context {
                cluster: "in-cluster".into(),
                user: Some("service-account".into()),
                namespace,
                ..Default::default()
            }),
            ..Default::default()
        }],
        current_context: Some("in-cluster".into()),
        ..Default::default()
    };
    kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| bad(format!("in-cluster: {e}")))
}

/// Finds the served version of each mesh kind; a kind whose CRD is absent is skipped.
async fn discover(client: &Client) -> Result<Vec<(MeshKind, ApiResource)>, kube::Error> {
    let mut found = Vec::new();
    for kind in ALL_MESH_KINDS {
        for version in kind.versions() {
            let gv = format!("{}/{}", kind.group(), version);
            let list = match client.list_api_group_resources(&gv).await {
                Ok(l) => l,
                Err(kube::Error::Api(s)) if s.code == 404 => continue,
                // Not allowed to see that group: as good as absent, and not worth blocking the sync.
                Err(kube::Error::Api(s)) if s.code == 403 => {
                    tracing::warn!(
                        "no access to {gv}: {} objects are treated as absent",
                        kind.kind()
                    );
                    continue;
                }
                Err(e) => return Err(e),
            };
            if let Some(r) = list.resources.iter().find(|r| r.name == kind.resource()) {
                let gvk = GroupVersionKind::gvk(kind.group(), version, &r.kind);
                found.push((kind, ApiResource::from_gvk_with_plural(&gvk, kind.resource())));
                break;
            }
        }
    }
    Ok(found)
}

impl KubeSource {
    /// Connects (config only, no I/O) and starts discovery and the reflectors in the background.
    pub(crate) async fn start(
        cfg: &ClusterConfig,
        telemetry: Arc<Metrics>,
    ) -> Result<KubeSource, ClusterError> {
        let (client, server) = client(cfg).await?;
        let live = Liveness::new(server);
        let stores: Arc<OnceLock<Stores>> = Arc::new(OnceLock::new());
        let generation = Arc::new(AtomicU64::new(0));
        let forbidden = Arc::new(Forbidden::default());
        let version: Arc<OnceLock<String>> = Arc::new(OnceLock::new());
        let (ready_tx, ready) = watch::channel(false);
        let (s2, g2, v2) = (stores.clone(), generation.clone(), version.clone());
        let absent: Arc<OnceLock<Vec<MeshKind>>> = Arc::new(OnceLock::new());
        let absent2 = absent.clone();
        let sh = Shared {
            generation: generation.clone(),
            forbidden: forbidden.clone(),
            live: live.clone(),
            telemetry,
        };
        let (own_client, live2) = (client.clone(), live.clone());
        let probe = tokio::spawn(live.clone().run(client.clone(), version.clone()));
        let main = tokio::spawn(async move {
            let mut delay = Duration::from_millis(200);
            let mesh = loop {
                match discover(&client).await {
                    Ok(found) => break found,
                    // Said once by the probe while the server is lost, not every retry.
                    Err(e) if live2.lost().is_some() => {
                        tracing::debug!(
                            "Kubernetes discovery failed (will retry in {delay:?}): {e}"
                        );
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(RETRY_MAX);
                    }
                    Err(e) => {
                        tracing::warn!(
                            "Kubernetes discovery failed (will retry in {delay:?}): {e}"
                        );
                        tokio::time::sleep(delay).await;
                        // The same cap as the watches: a server that appears late is used soon.
                        delay = (delay * 2).min(RETRY_MAX);
                    }
                }
            };
            let missing: Vec<MeshKind> =
                TODAYS_KINDS.into_iter().filter(|k| !mesh.iter().any(|(m, _)| m == k)).collect();
            let _ = absent2.set(missing);
            match client.apiserver_version().await {
                Ok(info) => {
                    let _ = v2.set(info.git_version);
                }
                Err(e) => tracing::warn!("cannot read the Kubernetes version: {e}"),
            }
            let mut tasks = Vec::new();
            let c = &client;
            let t = &mut tasks;
            // Each cache's kind follows from its field's type.
            let built = Stores {
                namespaces: reflect_typed(c, &sh, t),
                pods: reflect_typed(c, &sh, t),
                services: reflect_typed(c, &sh, t),
                deployments: reflect_typed(c, &sh, t),
                replica_sets: reflect_typed(c, &sh, t),
                replication_controllers: reflect_typed(c, &sh, t),
                stateful_sets: reflect_typed(c, &sh, t),
                daemon_sets: reflect_typed(c, &sh, t),
                jobs: reflect_typed(c, &sh, t),
                cron_jobs: reflect_typed(c, &sh, t),
                hpas: reflect_typed(c, &sh, t),
                mesh: mesh
                    .iter()
                    .map(|(k, ar)| {
                        let api = Api::<DynamicObject>::all_with(c.clone(), ar);
                        (*k, reflect(api, ar.clone(), k.display_name().to_string(), &sh, t))
                    })
                    .collect(),
            };
            let waits = built.wait_all(&sh.forbidden);
            let _ = s2.set(built);
            if waits.await {
                live2.synced();
                g2.fetch_add(1, Ordering::SeqCst);
                let _ = ready_tx.send(true);
                tracing::info!("Kubernetes caches synced");
            }
            // The reflectors live as long as this task; aborting it (on drop) ends them.
            let _guard = AbortAll(tasks.iter().map(|t| t.abort_handle()).collect());
            futures::future::join_all(tasks).await;
        });
        Ok(KubeSource {
            stores,
            forbidden,
            ready,
            generation,
            version,
            tasks: vec![main.abort_handle(), probe.abort_handle()],
            absent,
            client: own_client,
            live,
        })
    }

    /// Why the API server cannot be used now (see [`Liveness`]).
    pub(crate) fn lost(&self) -> Option<String> {
        self.live.lost()
    }

    /// Whether the first sync is done (never waits).
    pub(crate) fn synced(&self) -> bool {
        *self.ready.borrow()
    }

    /// The kinds the service account may not list or watch, by kind name.
    pub(crate) fn forbidden_kinds(&self) -> Vec<String> {
        self.forbidden.list()
    }

    /// The kinds added after the seed whose CRDs discovery did not find (empty before it ran).
    pub(crate) fn absent_kinds(&self) -> Vec<MeshKind> {
        self.absent.get().cloned().unwrap_or_default()
    }

    /// Waits for the first sync, up to `deadline`.
    pub(crate) async fn wait_synced(&self, deadline: Duration) -> Result<(), ClusterError> {
        let mut rx = self.ready.clone();
        match tokio::time::timeout(deadline, rx.wait_for(|r| *r)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(ClusterError::NotSynced(format!(
                "the Kubernetes caches are not synced yet (waited {deadline:?})"
            ))),
        }
    }

    /// Changes since start (any watch event bumps it).
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// The service's own client.
    pub(crate) fn client(&self) -> Client {
        self.client.clone()
    }

    /// The API server's version, once known.
    pub(crate) fn version(&self) -> Option<String> {
        self.version.get().cloned()
    }

    /// Objects in each cache, by kind (empty before discovery).
    pub(crate) fn object_counts(&self) -> Vec<(&'static str, usize)> {
        let Some(s) = self.stores.get() else { return Vec::new() };
        let mut counts = vec![
            ("Namespace", s.namespaces.state().len()),
            ("Pod", s.pods.state().len()),
            ("Service", s.services.state().len()),
            ("Deployment", s.deployments.state().len()),
            ("ReplicaSet", s.replica_sets.state().len()),
            ("ReplicationController", s.replication_controllers.state().len()),
            ("StatefulSet", s.stateful_sets.state().len()),
            ("DaemonSet", s.daemon_sets.state().len()),
            ("Job", s.jobs.state().len()),
            ("CronJob", s.cron_jobs.state().len()),
            ("HorizontalPodAutoscaler", s.hpas.state().len()),
        ];
        counts.extend(s.mesh.iter().map(|(k, st)| (k.display_name(), st.state().len())));
        counts
    }

    /// The current contents of every cache.
    pub(crate) fn raw(&self) -> Option<RawObjects> {
        let s = self.stores.get()?;
        let f = &self.forbidden;
        // A forbidden kind is absent, even if an earlier list had filled its cache.
        fn read<K: Resource<DynamicType = ()> + Clone>(
            f: &Forbidden,
            store: &Store<K>,
        ) -> Vec<Arc<K>> {
            if f.has(&kind_name::<K>()) { Vec::new() } else { store.state() }
        }
        let mesh = s
            .mesh
            .iter()
            .filter(|(k, _)| !f.has(k.display_name()))
            .flat_map(|(k, st)| {
                st.state().into_iter().map(move |o| {
                    let spec = match o.data.get("spec") {
                        Some(v @ serde_json::Value::Object(_)) => v.clone(),
                        _ => serde_json::Value::Object(Default::default()),
                    };
                    Arc::new(MeshObject { kind: *k, metadata: o.metadata.clone(), spec })
                })
            })
            .collect();
        Some(RawObjects {
            namespaces: read(f, &s.namespaces),
            pods: read(f, &s.pods),
            services: read(f, &s.services),
            deployments: read(f, &s.deployments),
            replica_sets: read(f, &s.replica_sets),
            replication_controllers: read(f, &s.replication_controllers),
            stateful_sets: read(f, &s.stateful_sets),
            daemon_sets: read(f, &s.daemon_sets),
            jobs: read(f, &s.jobs),
            cron_jobs: read(f, &s.cron_jobs),
            autoscalers: read(f, &s.hpas).iter().map(|h| Autoscaler::from_v2(h)).collect(),
            mesh,
        })
    }
}

struct AbortAll(Vec<tokio::task::AbortHandle>);

impl Drop for AbortAll {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

impl Stores {
    /// Resolves once every cache has seen its first complete list or is forbidden (false if
    /// a writer died).
    fn wait_all(&self, f: &Arc<Forbidden>) -> impl std::future::Future<Output = bool> + 'static {
        let typed = [
            typed_waiter(&self.namespaces, f),
            typed_waiter(&self.pods, f),
            typed_waiter(&self.services, f),
            typed_waiter(&self.deployments, f),
            typed_waiter(&self.replica_sets, f),
            typed_waiter(&self.replication_controllers, f),
            typed_waiter(&self.stateful_sets, f),
            typed_waiter(&self.daemon_sets, f),
            typed_waiter(&self.jobs, f),
            typed_waiter(&self.cron_jobs, f),
            typed_waiter(&self.hpas, f),
        ];
        let mesh: Vec<_> = self
            .mesh
            .iter()
            .map(|(k, s)| waiter(s, f.wait_for(k.display_name().to_string())))
            .collect();
        async move {
            let all = futures::future::join_all(typed.into_iter().chain(mesh)).await;
            all.into_iter().all(|ok| ok)
        }
    }
}

type Waiter = std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>>;

/// The waiter of a kind with a static type.
fn typed_waiter<K>(s: &Store<K>, f: &Arc<Forbidden>) -> Waiter
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    waiter(s, f.wait_for(kind_name::<K>()))
}

fn waiter<K>(
    s: &Store<K>,
    forbidden: impl std::future::Future<Output = ()> + Send + 'static,
) -> Waiter
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
{
    let s = s.clone();
    Box::pin(async move {
        tokio::select! {
            r = s.wait_until_ready() => r.is_ok(),
            _ = forbidden => true,
        }
    })
}
