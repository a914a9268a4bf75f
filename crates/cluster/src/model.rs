//! The derived model: namespaces, workloads, apps, built once per change of the raw objects.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::Arc,
};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::{
    config::Settings,
    labels::Labels,
    mesh::{MeshKind, MeshObject},
    raw::{Autoscaler, RawObjects, time_text},
    records::{PodRecord, ServiceRecord, TemplateMeta},
};

/// The kind of a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkloadKind {
    /// apps/v1 Deployment.
    Deployment,
    /// A ReplicaSet not owned by a Deployment.
    ReplicaSet,
    /// v1 ReplicationController.
    ReplicationController,
    /// apps/v1 StatefulSet.
    StatefulSet,
    /// apps/v1 DaemonSet.
    DaemonSet,
    /// A Job not owned by a CronJob.
    Job,
    /// batch/v1 CronJob.
    CronJob,
    /// A Pod owned by none of the above.
    Pod,
}

impl WorkloadKind {
    /// The kind's name, as in `type` of the workload list.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::ReplicaSet => "ReplicaSet",
            WorkloadKind::ReplicationController => "ReplicationController",
            WorkloadKind::StatefulSet => "StatefulSet",
            WorkloadKind::DaemonSet => "DaemonSet",
            WorkloadKind::Job => "Job",
            WorkloadKind::CronJob => "CronJob",
            WorkloadKind::Pod => "Pod",
        }
    }
}

/// One workload with everything the operations show about it.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// Kind.
    pub kind: WorkloadKind,
    /// Creation time, ISO 8601 UTC (empty when unknown).
    pub created_at: String,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// Pod template labels (the pod's own labels for a bare pod).
    pub labels: Labels,
    /// Pod template annotations.
    pub template_annotations: Labels,
    /// Wanted replicas.
    pub replicas: i32,
    /// Available replicas.
    pub available_replicas: i32,
    /// Unavailable replicas.
    pub unavailable_replicas: i32,
    /// Its pods, by name.
    pub pods: Vec<Arc<PodRecord>>,
    /// Services whose selector selects it, by name.
    pub services: Vec<Arc<ServiceRecord>>,
    /// The HPA that targets it.
    pub autoscaler: Option<Autoscaler>,
    /// At least one pod, and every pod carries the sidecar annotation.
    pub has_sidecar: bool,
    /// Captured by the ambient data plane: at least one pod, and every pod carries
    /// `ambient.istio.io/redirection: enabled` (Kiali `models/pod.go` `AmbientEnabled`,
    /// `models/workload.go` `IsAmbient`), or it is a waypoint. The namespace label alone is
    /// not enough: a pod that opts out (`istio.io/dataplane-mode=none`) is not redirected.
    pub is_ambient: bool,
    /// A waypoint proxy: its pods are labelled `gateway.istio.io/managed:
    /// istio.io-mesh-controller` (the Deployment Istio makes for a Gateway of class
    /// `istio-waypoint`). Kiali (`models/workload.go` `IsWaypoint`) reads the same label;
    /// we read no Gateway API objects, so the RBAC does not grow for this.
    pub is_waypoint: bool,
}

impl Workload {
    /// The value of a template label.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels.get(name)
    }
}

/// One visible namespace.
#[derive(Clone, Debug, Default)]
pub struct NamespaceState {
    /// Name.
    pub name: String,
    /// Creation time of the Namespace object (empty for a namespace only implied by objects).
    pub created_at: String,
    /// Labels of the Namespace object (Gateway API `allowedRoutes` selectors read them).
    pub labels: BTreeMap<String, String>,
    /// Workloads by name.
    pub workloads: Vec<Workload>,
    /// Services by name.
    pub services: Vec<Arc<ServiceRecord>>,
    /// Pods by name.
    pub pods: Vec<Arc<PodRecord>>,
    /// Mesh objects by (kind, name).
    pub mesh: Vec<Arc<MeshObject>>,
    /// Labelled `istio.io/dataplane-mode=ambient` (Kiali `models/namespace.go` `IsAmbient`).
    pub is_ambient: bool,
}

/// An app: the workloads and services carrying one value of the app label.
#[derive(Clone, Debug)]
pub struct App<'a> {
    /// The app label's value.
    pub name: String,
    /// Its workloads, by name.
    pub workloads: Vec<&'a Workload>,
    /// Its services, by name.
    pub services: Vec<&'a ServiceRecord>,
}

impl App<'_> {
    /// At least one workload, and all have the sidecar.
    pub fn has_sidecar(&self) -> bool {
        !self.workloads.is_empty() && self.workloads.iter().all(|w| w.has_sidecar)
    }

    /// At least one workload, and all are ambient.
    pub fn is_ambient(&self) -> bool {
        !self.workloads.is_empty() && self.workloads.iter().all(|w| w.is_ambient)
    }
}

/// A consistent, immutable view of the cluster.
#[derive(Debug)]
pub struct ClusterState {
    settings: Arc<Settings>,
    namespaces: BTreeMap<String, NamespaceState>,
}

fn name_of(m: &ObjectMeta) -> &str {
    m.name.as_deref().unwrap_or("")
}

fn ns_of(m: &ObjectMeta) -> &str {
    m.namespace.as_deref().unwrap_or("default")
}

fn controller(m: &ObjectMeta) -> Option<&OwnerReference> {
    let refs = m.owner_references.as_deref()?;
    refs.iter().find(|r| r.controller == Some(true)).or_else(|| refs.first())
}

fn template_maps(meta: Option<&TemplateMeta>) -> (Labels, Labels) {
    (
        meta.map(|m| m.labels.clone()).unwrap_or_default(),
        meta.map(|m| m.annotations.clone()).unwrap_or_default(),
    )
}

/// A workload before its pods, services and HPA are attached.
fn shell(
    meta: &ObjectMeta,
    kind: WorkloadKind,
    t: Option<&TemplateMeta>,
    counts: (i32, i32, i32),
) -> Workload {
    let (labels, template_annotations) = template_maps(t);
    Workload {
        name: name_of(meta).to_string(),
        namespace: ns_of(meta).to_string(),
        kind,
        created_at: time_text(meta.creation_timestamp.as_ref()),
        resource_version: meta.resource_version.clone().unwrap_or_default(),
        labels,
        template_annotations,
        replicas: counts.0,
        available_replicas: counts.1,
        unavailable_replicas: counts.2,
        pods: Vec::new(),
        services: Vec::new(),
        autoscaler: None,
        has_sidecar: false,
        is_ambient: false,
        is_waypoint: false,
    }
}

/// Workloads of all namespaces with their owner maps, before pods are attached.
fn workloads(raw: &RawObjects) -> Vec<Workload> {
    let owned_by = |m: &ObjectMeta, kind: &str| controller(m).is_some_and(|o| o.kind == kind);
    let deployments: BTreeSet<(&str, &str)> =
        raw.deployments.iter().map(|d| (ns_of(&d.metadata), name_of(&d.metadata))).collect();
    let cron_jobs: BTreeSet<(&str, &str)> =
        raw.cron_jobs.iter().map(|c| (ns_of(&c.metadata), name_of(&c.metadata))).collect();
    let owner_exists = |m: &ObjectMeta, kind: &str, set: &BTreeSet<(&str, &str)>| {
        owned_by(m, kind)
            && controller(m).is_some_and(|o| set.contains(&(ns_of(m), o.name.as_str())))
    };
    let mut out = Vec::new();
    for d in &raw.deployments {
        let spec = d.spec.as_ref();
        let st = d.status.as_ref();
        let counts = (
            spec.and_then(|s| s.replicas).unwrap_or(1),
            st.and_then(|s| s.available_replicas).unwrap_or(0),
            st.and_then(|s| s.unavailable_replicas).unwrap_or(0),
        );
        out.push(shell(&d.metadata, WorkloadKind::Deployment, d.template_meta(), counts));
    }
    for r in
        raw.replica_sets.iter().filter(|r| !owner_exists(&r.metadata, "Deployment", &deployments))
    {
        let want = r.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let avail = r.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0);
        let t = r.template_meta();
        out.push(shell(
            &r.metadata,
            WorkloadKind::ReplicaSet,
            t,
            (want, avail, (want - avail).max(0)),
        ));
    }
    for r in &raw.replication_controllers {
        let want = r.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let avail = r.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0);
        let t = r.template_meta();
        out.push(shell(
            &r.metadata,
            WorkloadKind::ReplicationController,
            t,
            (want, avail, (want - avail).max(0)),
        ));
    }
    for s in &raw.stateful_sets {
        let want = s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let st = s.status.as_ref();
        let avail = st.and_then(|s| s.available_replicas.or(s.ready_replicas)).unwrap_or(0);
        let t = s.template_meta();
        out.push(shell(
            &s.metadata,
            WorkloadKind::StatefulSet,
            t,
            (want, avail, (want - avail).max(0)),
        ));
    }
    for d in &raw.daemon_sets {
        let st = d.status.as_ref();
        let counts = (
            st.and_then(|s| s.desired_number_scheduled).unwrap_or(0),
            st.and_then(|s| s.number_available).unwrap_or(0),
            st.and_then(|s| s.number_unavailable).unwrap_or(0),
        );
        out.push(shell(&d.metadata, WorkloadKind::DaemonSet, d.template_meta(), counts));
    }
    for j in raw.jobs.iter().filter(|j| !owner_exists(&j.metadata, "CronJob", &cron_jobs)) {
        let st = j.status.as_ref();
        let (active, ok, failed) = (
            st.and_then(|s| s.active).unwrap_or(0),
            st.and_then(|s| s.succeeded).unwrap_or(0),
            st.and_then(|s| s.failed).unwrap_or(0),
        );
        let t = j.template_meta();
        out.push(shell(
            &j.metadata,
            WorkloadKind::Job,
            t,
            (active + ok + failed, active + ok, failed),
        ));
    }
    for c in &raw.cron_jobs {
        let active = c.status.as_ref().and_then(|s| s.active).unwrap_or(0);
        out.push(shell(&c.metadata, WorkloadKind::CronJob, c.template_meta(), (active, active, 0)));
    }
    out
}

fn has_annotation(pod: &PodRecord, key: &str) -> bool {
    pod.annotations.contains_key(key)
}

/// Whether a pod carries the sidecar status annotation.
pub fn pod_has_sidecar(pod: &PodRecord, settings: &Settings) -> bool {
    has_annotation(pod, &settings.sidecar_annotation)
}

/// The annotation istio-cni sets on a pod whose traffic ztunnel captures.
pub const AMBIENT_REDIRECTION: &str = "ambient.istio.io/redirection";
/// The label Istio puts on the pods of the proxies it deploys for Gateway objects.
pub const GATEWAY_MANAGED: &str = "gateway.istio.io/managed";
/// [`GATEWAY_MANAGED`]'s value on waypoints (other Gateway API gateways have another).
pub const WAYPOINT_CONTROLLER: &str = "istio.io-mesh-controller";
/// The namespace label that enrols a namespace in ambient.
pub const DATAPLANE_MODE: &str = "istio.io/dataplane-mode";

/// Whether ztunnel captures a pod's traffic (Kiali `models/pod.go` `AmbientEnabled`).
pub fn pod_is_ambient(pod: &PodRecord) -> bool {
    pod.annotations.get(AMBIENT_REDIRECTION) == Some("enabled")
}

/// Whether a pod is a waypoint proxy (see [`Workload::is_waypoint`]).
pub fn pod_is_waypoint(pod: &PodRecord) -> bool {
    pod.labels.get(GATEWAY_MANAGED) == Some(WAYPOINT_CONTROLLER)
}

fn pod_workload(pod: &Arc<PodRecord>) -> Workload {
    let m = &pod.metadata;
    let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
    let mut w = shell(m, WorkloadKind::Pod, None, (1, i32::from(running), i32::from(!running)));
    w.labels = pod.labels.clone();
    w.template_annotations = pod.annotations.clone();
    w
}

impl ClusterState {
    /// Builds the model; objects of excluded namespaces are dropped here.
    pub fn build(raw: &RawObjects, settings: Arc<Settings>) -> ClusterState {
        let visible = |ns: &str| !settings.is_excluded(ns);
        let mut namespaces: BTreeMap<String, NamespaceState> = BTreeMap::new();
        let ensure = |ns: &str, namespaces: &mut BTreeMap<String, NamespaceState>| {
            if visible(ns) && !namespaces.contains_key(ns) {
                namespaces.insert(
                    ns.to_string(),
                    NamespaceState { name: ns.to_string(), ..Default::default() },
                );
            }
        };
        for n in &raw.namespaces {
            let name = name_of(&n.metadata);
            ensure(name, &mut namespaces);
            if let Some(s) = namespaces.get_mut(name) {
                s.created_at = time_text(n.metadata.creation_timestamp.as_ref());
                s.is_ambient = n
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(DATAPLANE_MODE))
                    .is_some_and(|v| v == "ambient");
                s.labels = n.metadata.labels.clone().unwrap_or_default();
            }
        }
        for p in &raw.pods {
            ensure(ns_of(&p.metadata), &mut namespaces);
            if let Some(s) = namespaces.get_mut(ns_of(&p.metadata)) {
                s.pods.push(p.clone());
            }
        }
        for svc in &raw.services {
            ensure(ns_of(&svc.metadata), &mut namespaces);
            if let Some(s) = namespaces.get_mut(ns_of(&svc.metadata)) {
                s.services.push(svc.clone());
            }
        }
        for m in &raw.mesh {
            ensure(m.namespace(), &mut namespaces);
            if let Some(s) = namespaces.get_mut(m.namespace()) {
                s.mesh.push(m.clone());
            }
        }
        let mut all_workloads = workloads(raw);
        all_workloads.retain(|w| visible(&w.namespace));
        for w in &all_workloads {
            ensure(&w.namespace, &mut namespaces);
        }
        let mut by_ns: HashMap<String, Vec<Workload>> = HashMap::new();
        for w in all_workloads {
            by_ns.entry(w.namespace.clone()).or_default().push(w);
        }
        // Ownership maps: which workload a ReplicaSet's or a Job's pods belong to.
        let rs_owner: HashMap<(&str, &str), &str> = raw
            .replica_sets
            .iter()
            .filter_map(|r| {
                let o = controller(&r.metadata).filter(|o| o.kind == "Deployment")?;
                Some(((ns_of(&r.metadata), name_of(&r.metadata)), o.name.as_str()))
            })
            .collect();
        let job_owner: HashMap<(&str, &str), &str> = raw
            .jobs
            .iter()
            .filter_map(|j| {
                let o = controller(&j.metadata).filter(|o| o.kind == "CronJob")?;
                Some(((ns_of(&j.metadata), name_of(&j.metadata)), o.name.as_str()))
            })
            .collect();
        for state in namespaces.values_mut() {
            let mut wls = by_ns.remove(&state.name).unwrap_or_default();
            state.pods.sort_by(|a, b| name_of(&a.metadata).cmp(name_of(&b.metadata)));
            state.services.sort_by(|a, b| name_of(&a.metadata).cmp(name_of(&b.metadata)));
            state.mesh.sort_by(|a, b| (a.kind, a.name()).cmp(&(b.kind, b.name())));
            let index: HashMap<(WorkloadKind, String), usize> =
                wls.iter().enumerate().map(|(i, w)| ((w.kind, w.name.clone()), i)).collect();
            let find =
                |kind: WorkloadKind, name: &str| index.get(&(kind, name.to_string())).copied();
            let ns = state.name.as_str();
            let mut bare = Vec::new();
            for pod in &state.pods {
                let owner = controller(&pod.metadata);
                let target = owner.and_then(|o| match o.kind.as_str() {
                    "ReplicaSet" => rs_owner
                        .get(&(ns, o.name.as_str()))
                        .and_then(|d| find(WorkloadKind::Deployment, d))
                        .or_else(|| find(WorkloadKind::ReplicaSet, &o.name))
                        // A dump without its ReplicaSets: `<deployment>-<hash>` still names it.
                        .or_else(|| {
                            o.name
                                .rsplit_once('-')
                                .and_then(|(d, _)| find(WorkloadKind::Deployment, d))
                        }),
                    "ReplicationController" => find(WorkloadKind::ReplicationController, &o.name),
                    "StatefulSet" => find(WorkloadKind::StatefulSet, &o.name),
                    "DaemonSet" => find(WorkloadKind::DaemonSet, &o.name),
                    "Job" => job_owner
                        .get(&(ns, o.name.as_str()))
                        .and_then(|c| find(WorkloadKind::CronJob, c))
                        .or_else(|| find(WorkloadKind::Job, &o.name)),
                    _ => None,
                });
                match target {
                    Some(i) => wls[i].pods.push(pod.clone()),
                    None => {
                        let mut b = pod_workload(pod);
                        b.pods.push(pod.clone());
                        bare.push(b);
                    }
                }
            }
            wls.extend(bare);
            for w in &mut wls {
                w.has_sidecar =
                    !w.pods.is_empty() && w.pods.iter().all(|p| pod_has_sidecar(p, &settings));
                w.is_waypoint = !w.pods.is_empty() && w.pods.iter().all(|p| pod_is_waypoint(p));
                w.is_ambient = w.is_waypoint
                    || (!w.pods.is_empty() && w.pods.iter().all(|p| pod_is_ambient(p)));
                w.services = state
                    .services
                    .iter()
                    .filter(|s| {
                        s.spec.as_ref().is_some_and(|sp| {
                            !sp.selector.is_empty()
                                && sp.selector.iter().all(|(k, v)| w.label(k) == Some(v))
                        })
                    })
                    .cloned()
                    .collect();
                w.autoscaler = raw
                    .autoscalers
                    .iter()
                    .find(|a| {
                        a.namespace == w.namespace
                            && a.target_kind == w.kind.as_str()
                            && a.target_name == w.name
                    })
                    .cloned();
            }
            wls.sort_by(|a, b| (&a.name, a.kind).cmp(&(&b.name, b.kind)));
            state.workloads = wls;
        }
        ClusterState { settings, namespaces }
    }

    /// The settings the model was built with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Visible namespaces, by name.
    pub fn namespaces(&self) -> impl Iterator<Item = &NamespaceState> {
        self.namespaces.values()
    }

    /// One visible namespace.
    pub fn namespace(&self, name: &str) -> Option<&NamespaceState> {
        self.namespaces.get(name)
    }

    /// One workload.
    pub fn workload(&self, namespace: &str, name: &str) -> Option<&Workload> {
        self.namespace(namespace)?.workloads.iter().find(|w| w.name == name)
    }

    /// One Service.
    pub fn service(&self, namespace: &str, name: &str) -> Option<&Arc<ServiceRecord>> {
        self.namespace(namespace)?.services.iter().find(|s| name_of(&s.metadata) == name)
    }

    /// The app label of a Service: its own label, else its selector's.
    pub fn service_app<'a>(&self, svc: &'a ServiceRecord) -> Option<&'a str> {
        let key = &self.settings.app_label;
        svc.labels.get(key).or_else(|| svc.spec.as_ref().and_then(|s| s.selector.get(key)))
    }

    /// Apps of a namespace, by name (empty for an unknown namespace).
    pub fn apps(&self, namespace: &str) -> Vec<App<'_>> {
        let Some(ns) = self.namespace(namespace) else { return Vec::new() };
        let mut apps: BTreeMap<String, App<'_>> = BTreeMap::new();
        let entry = |apps: &mut BTreeMap<String, App<'_>>, name: &str| {
            if !apps.contains_key(name) {
                apps.insert(
                    name.to_string(),
                    App { name: name.to_string(), workloads: Vec::new(), services: Vec::new() },
                );
            }
        };
        for w in &ns.workloads {
            if let Some(a) = w.label(&self.settings.app_label) {
                entry(&mut apps, a);
                if let Some(app) = apps.get_mut(a) {
                    app.workloads.push(w);
                }
            }
        }
        for s in &ns.services {
            if let Some(a) = self.service_app(s) {
                entry(&mut apps, a);
                if let Some(app) = apps.get_mut(a) {
                    app.services.push(s);
                }
            }
        }
        apps.into_values().collect()
    }

    /// Mesh objects of one kind in one namespace.
    pub fn mesh_objects(
        &self,
        kind: MeshKind,
        namespace: &str,
    ) -> impl Iterator<Item = &Arc<MeshObject>> {
        self.namespace(namespace)
            .into_iter()
            .flat_map(move |n| n.mesh.iter().filter(move |m| m.kind == kind))
    }

    /// Mesh objects of one kind in every visible namespace.
    pub fn mesh_objects_everywhere(
        &self,
        kind: MeshKind,
    ) -> impl Iterator<Item = &Arc<MeshObject>> {
        self.namespaces.values().flat_map(move |n| n.mesh.iter().filter(move |m| m.kind == kind))
    }
}
