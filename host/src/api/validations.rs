//! objectValidations, namespaceValidations and serviceValidations: the cluster model is
//! turned into a [`ValidationInput`] and handed to the validations crate.
//!
//! Several clusters (#32): the input is the model of the cluster the request names
//! (`ctx.cluster`) only, so hosts, namespaces, workloads and Gateways resolve within the
//! object's own cluster, as Kiali v2 validates each cluster against its own services,
//! namespaces and config (`business/istio_validations.go`, `Validate`, per-cluster
//! `clusterInfo`). Its one check that looks across clusters is the AuthorizationPolicy
//! principal check (`business/checkers/authorization/principals_checker.go`: a principal
//! whose ServiceAccount is in another cluster is KIA0107, not KIA0106), which meshlens does
//! not run at all (no ServiceAccounts are read: see the validations crate's `security`).

use std::{collections::BTreeSet, sync::Arc};

use meshlens_cluster::{ClusterState, MeshKind, NamespaceState, mesh::CONFIG_LIST_KINDS};
use meshlens_validations::{
    MeshObject, NamespaceInfo, ObjectKind, ServiceInfo, ValidationError, ValidationInput,
    WorkloadInfo, gateway_namespaces, referenced_namespaces, validate_namespace, validate_object,
    validate_service,
};

use crate::{
    error::ApiError,
    router::{Ctx, HandlerFuture, Reply, Route},
};

pub fn routes() -> Vec<Route> {
    vec![
        Route::get(
            "objectValidations",
            "/namespaces/{namespace}/mesh/{object_type}/{object}/mesh_validations",
            object_validations,
        )
        .expensive(),
        Route::get(
            "namespaceValidations",
            "/namespaces/{namespace}/mesh_validations",
            namespace_validations,
        )
        .expensive(),
        Route::get(
            "serviceValidations",
            "/namespaces/{namespace}/services/{service}/mesh_validations",
            service_validations,
        )
        .expensive(),
    ]
}

fn to_object(o: &meshlens_cluster::MeshObject) -> Option<MeshObject> {
    Some(MeshObject {
        kind: ObjectKind::from_plural(o.kind.plural())?,
        namespace: o.namespace().to_string(),
        name: o.name().to_string(),
        spec: o.spec.clone(),
    })
}

/// What validating namespace `ns` reads: its config objects, the Gateways (both kinds) and
/// ServiceEntries of every namespace, every namespace's name and labels, and the Services,
/// workloads, DestinationRules and ReferenceGrants of the namespaces its objects point to;
/// with an AuthorizationPolicy, every VirtualService (operation hosts may name theirs), and
/// with a PeerAuthentication, every DestinationRule with a wildcard host (namespace- and
/// mesh-wide mTLS). 404 when the namespace is not visible.
fn input_for(
    state: &ClusterState,
    ns: &str,
    hidden: BTreeSet<String>,
) -> Result<ValidationInput, ApiError> {
    let ns_state = state.namespace(ns).ok_or_else(|| ApiError::not_found("namespace not found"))?;
    let settings = state.settings();
    let mut input = ValidationInput {
        identity_domain: settings.identity_domain.clone(),
        app_label: settings.app_label.clone(),
        hidden_namespaces: hidden,
        ..ValidationInput::default()
    };
    input.objects = own_objects(state, ns);
    let related = referenced_namespaces(ns, &input.objects, &input.identity_domain);
    for other in related.iter().filter(|n| n.as_str() != ns) {
        for kind in [MeshKind::DestinationRule, MeshKind::K8sReferenceGrant] {
            input.objects.extend(state.mesh_objects(kind, other).filter_map(|o| to_object(o)));
        }
    }
    let has = |kind: MeshKind| ns_state.mesh.iter().any(|o| o.kind == kind);
    let (with_ap, with_pa) =
        (has(MeshKind::AuthorizationPolicy), has(MeshKind::PeerAuthentication));
    let everywhere = |kind| state.mesh_objects_everywhere(kind).filter_map(|o| to_object(o));
    input.objects.extend(everywhere(MeshKind::ServiceEntry).filter(|o| o.namespace != ns));
    if with_ap {
        input.objects.extend(everywhere(MeshKind::VirtualService).filter(|o| o.namespace != ns));
    }
    if with_pa {
        let wildcard = |o: &MeshObject| {
            o.namespace != ns
                && o.spec.get("host").and_then(|h| h.as_str()).is_some_and(|h| h.starts_with("*."))
        };
        input.objects.extend(everywhere(MeshKind::DestinationRule).filter(wildcard));
    }
    input.gateways =
        everywhere(MeshKind::Gateway).chain(everywhere(MeshKind::K8sGateway)).collect();
    input.namespaces = state
        .namespaces()
        .map(|n| NamespaceInfo { name: n.name.clone(), labels: n.labels.clone() })
        .collect();
    for n in related.iter().filter_map(|n| state.namespace(n)) {
        add_services_and_workloads(&mut input, n);
    }
    Ok(input)
}

/// The services and workloads of a namespace the validated objects refer to.
fn add_services_and_workloads(input: &mut ValidationInput, n: &NamespaceState) {
    for s in &n.services {
        let spec_selector = s.spec.as_ref().map(|sp| sp.selector.to_map()).unwrap_or_default();
        input.services.push(ServiceInfo {
            namespace: n.name.clone(),
            name: s.metadata.name.clone().unwrap_or_default(),
            labels: s.labels.to_map(),
            selector: spec_selector,
        });
    }
    for w in &n.workloads {
        input.workloads.push(WorkloadInfo {
            namespace: n.name.clone(),
            name: w.name.clone(),
            labels: w.labels.to_map(),
        });
    }
}

fn own_objects(state: &ClusterState, ns: &str) -> Vec<MeshObject> {
    let Some(ns_state) = state.namespace(ns) else { return Vec::new() };
    ns_state
        .mesh
        .iter()
        .filter(|o| CONFIG_LIST_KINDS.contains(&o.kind))
        .filter_map(|o| to_object(o))
        .collect()
}

/// The namespaces a validation of `ns` could look into that the caller may not list:
/// those its objects refer to and those holding Gateways. RBAC decides, not existence, so
/// a namespace that does not exist reads like one that does. Empty when answers are not
/// filtered per user.
async fn hidden_namespaces(ctx: &Ctx, ns: &str) -> Result<BTreeSet<String>, ApiError> {
    if !ctx.access.restricted() {
        return Ok(BTreeSet::new());
    }
    let state: Arc<ClusterState> = ctx.cluster.cluster.state().await?;
    let objects = own_objects(&state, ns);
    let domain = state.settings().identity_domain.clone();
    let mut candidates = referenced_namespaces(ns, &objects, &domain);
    candidates.extend(gateway_namespaces(ns, &objects));
    for kind in [MeshKind::Gateway, MeshKind::K8sGateway] {
        candidates.extend(state.mesh_objects_everywhere(kind).map(|g| g.namespace().to_string()));
    }
    candidates.remove(ns);
    let names: Vec<&str> = candidates.iter().map(String::as_str).collect();
    let visible = ctx.access.visible(&names).await?;
    Ok(candidates.iter().zip(visible).filter(|(_, v)| !v).map(|(n, _)| n.clone()).collect())
}

/// Runs `f` on the cluster model off the async workers: a large namespace takes
/// milliseconds of CPU.
async fn with_state<T, F>(ctx: &Ctx, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&ClusterState) -> Result<T, ApiError> + Send + 'static,
{
    let state: Arc<ClusterState> = ctx.cluster.cluster.state().await?;
    tokio::task::spawn_blocking(move || f(&state))
        .await
        .map_err(|e| ApiError::internal(format!("Error checking mesh object consistency: {e}")))?
}

fn namespace_validations(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let ns = ctx.path("namespace")?.to_string();
        let hidden = hidden_namespaces(&ctx, &ns).await?;
        let out = with_state(&ctx, move |state| {
            Ok(validate_namespace(&ns, &input_for(state, &ns, hidden)?))
        })
        .await?;
        Reply::json(&out)
    })
}

fn object_validations(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let ns = ctx.path("namespace")?.to_string();
        let object_type = ctx.path("object_type")?.to_string();
        let object = ctx.path("object")?.to_string();
        // A wrong type is a malformed request, whatever the namespace.
        if ObjectKind::from_plural(&object_type).is_none() {
            return Err(ValidationError::UnknownType {
                given: object_type,
                known: ObjectKind::known_plurals(),
            }
            .into());
        }
        let hidden = hidden_namespaces(&ctx, &ns).await?;
        let out = with_state(&ctx, move |state| {
            Ok(validate_object(&ns, &object_type, &object, &input_for(state, &ns, hidden)?)?)
        })
        .await?;
        Reply::json(&out)
    })
}

fn service_validations(ctx: Ctx) -> HandlerFuture {
    Box::pin(async move {
        let ns = ctx.path("namespace")?.to_string();
        let service = ctx.path("service")?.to_string();
        let hidden = hidden_namespaces(&ctx, &ns).await?;
        let out = with_state(&ctx, move |state| {
            Ok(validate_service(&ns, &service, &input_for(state, &ns, hidden)?)?)
        })
        .await?;
        Reply::json(&out)
    })
}
