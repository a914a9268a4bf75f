//! The state built over hand-made seams (#27): a cluster view whose remote is lost and a
//! reviewer that allows one namespace, with the router called in-process. What a user sees
//! must come from those seams alone: no cluster source, no API server, no plugin.

use std::sync::Arc;

use futures::future::BoxFuture;
use meshlens_cluster::{
    ClusterConfig, ClusterError, ClusterState, Settings, raw::RawObjects, snapshot,
};
use serde_json::Value;
use warp::http::{HeaderMap, Method, StatusCode};

use crate::{
    access::{AccessReview, KubeUser, TokenAnswer},
    access::{RemoteReviewers, Reviews},
    clusters::{ClusterSet, ClusterView},
    config::{AuthStrategy, Config},
    error::ApiError,
    plugins::Registry,
    router::Router,
    state::{AppState, Seams},
};

/// A cluster whose model is made here, and which is lost when `lost` says why.
#[derive(Debug)]
struct FakeView {
    model: Arc<ClusterState>,
    lost: Option<String>,
}

impl FakeView {
    fn view(yaml: &str, lost: Option<&str>) -> Arc<dyn ClusterView> {
        let (mut raw, mut warnings) = (RawObjects::default(), Vec::new());
        snapshot::load_text(yaml, "test", &mut raw, &mut warnings);
        assert!(warnings.is_empty(), "{warnings:?}");
        let settings = Arc::new(Settings::from_config(&ClusterConfig::default()).unwrap());
        let model = Arc::new(ClusterState::build(&raw, settings));
        Arc::new(FakeView { model, lost: lost.map(str::to_string) })
    }
}

impl ClusterView for FakeView {
    fn state(&self) -> BoxFuture<'_, Result<Arc<ClusterState>, ClusterError>> {
        let model = self.model.clone();
        Box::pin(async move { Ok(model) })
    }
    fn lost(&self) -> Option<String> {
        self.lost.clone()
    }
    fn synced(&self) -> bool {
        true
    }
    fn version(&self) -> String {
        "fake".into()
    }
    fn object_counts(&self) -> Vec<(&'static str, usize)> {
        Vec::new()
    }
    fn access_warnings(&self) -> Vec<String> {
        Vec::new()
    }
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
    fn kube_client(&self) -> Option<kube::Client> {
        None
    }
}

/// Knows one token (alice's) and lets her see `allowed` only.
struct FakeReviewer {
    allowed: &'static str,
}

impl AccessReview for FakeReviewer {
    fn authenticate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, TokenAnswer> {
        Box::pin(async move {
            if token != "alice-token" {
                return Err(ApiError::Unauthorized("not a token this test knows".into()));
            }
            Ok(Arc::new(KubeUser {
                username: "alice".into(),
                uid: String::new(),
                groups: Vec::new(),
                extra: Default::default(),
            }))
        })
    }
    fn visible<'a>(
        &'a self,
        _user: &'a Arc<KubeUser>,
        namespaces: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<bool>, ApiError>> {
        Box::pin(async move { Ok(namespaces.iter().map(|ns| *ns == self.allowed).collect()) })
    }
}

fn namespaces(names: &[&str], service_in: &str) -> String {
    let mut out: Vec<String> = names
        .iter()
        .map(|n| format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {n}\n"))
        .collect();
    out.push(format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: reviews\n  namespace: {service_in}\n\
         spec:\n  selector:\n    app: reviews\n  ports:\n  - name: http\n    port: 9080\n"
    ));
    out.join("---\n")
}

/// Home `east` (bookinfo, secret), remote `north` (shop), remote `west` (lost); alice may
/// see bookinfo at home and shop in north.
async fn state() -> Arc<AppState> {
    let clusters = ClusterSet::single(
        "east",
        FakeView::view(&namespaces(&["bookinfo", "secret"], "bookinfo"), None),
    )
    .with_remote("north", FakeView::view(&namespaces(&["shop"], "shop"), None))
    .with_remote(
        "west",
        FakeView::view(&namespaces(&["bookinfo"], "bookinfo"), Some("connection refused")),
    );
    let reviews = Reviews {
        home: Arc::new(FakeReviewer { allowed: "bookinfo" }),
        remotes: RemoteReviewers::default()
            .with("north", Arc::new(FakeReviewer { allowed: "shop" }))
            .with("west", Arc::new(FakeReviewer { allowed: "bookinfo" })),
    };
    let mut config = Config::default();
    config.auth.strategy = AuthStrategy::Token;
    let seams = Seams { backend: None, clusters: Some(clusters), reviews: Some(reviews) };
    Arc::new(AppState::assemble_with(config, Registry::default(), seams).await.unwrap())
}

async fn get(state: &Arc<AppState>, path_query: &str, token: Option<&str>) -> (StatusCode, Value) {
    let router = Arc::new(Router::new(crate::api::all_routes(), &state.config.server.web_root));
    let (path, query) = match path_query.split_once('?') {
        Some((p, q)) => (p, Some(q.to_string())),
        None => (path_query, None),
    };
    let mut headers = HeaderMap::new();
    if let Some(t) = token {
        headers.insert("authorization", format!("Bearer {t}").parse().unwrap());
    }
    let resp = router.handle(state.clone(), Method::GET, path, query, headers, None).await;
    let body = serde_json::from_slice(resp.body()).unwrap_or(Value::Null);
    (resp.status(), body)
}

#[tokio::test]
async fn handlers_answer_from_the_given_cluster_view_and_reviewer() {
    let st = state().await;
    let alice = Some("alice-token");

    // Every reachable cluster's namespaces alice may see, each with its cluster; west is lost.
    let (status, body) = get(&st, "/api/namespaces", alice).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let listed: Vec<(&str, &str)> = body
        .as_array()
        .expect("a list")
        .iter()
        .map(|n| (n["name"].as_str().unwrap_or(""), n["cluster"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(listed, [("bookinfo", "east"), ("shop", "north")]);

    // A namespace the reviewer does not allow is refused before the handler runs.
    let (status, body) = get(&st, "/api/namespaces/secret/services", alice).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["message"], "you may not see this namespace");

    // The lost remote answers 503 naming why; the same namespace at home answers.
    let (status, body) =
        get(&st, "/api/namespaces/bookinfo/services?clusterName=west", alice).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let message = body["message"].as_str().unwrap_or("");
    assert!(message.contains("\"west\"") && message.contains("connection refused"), "{message}");

    let (status, body) = get(&st, "/api/namespaces/bookinfo/services", alice).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let services = body["services"].as_array().expect("services");
    assert_eq!(services.len(), 1, "{body}");
    assert_eq!(
        (services[0]["name"].as_str(), services[0]["cluster"].as_str()),
        (Some("reviews"), Some("east"))
    );

    // A remote reads its own model under its own reviewer.
    let (status, body) = get(&st, "/api/namespaces/shop/services?clusterName=north", alice).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["services"][0]["cluster"], "north");

    // /status reads the views too: home's version, and the lost remote by name.
    let (status, body) = get(&st, "/api/status", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let kube = body["externalServices"]
        .as_array()
        .and_then(|s| s.iter().find(|e| e["name"] == "Kubernetes").map(|e| e["version"].clone()));
    assert_eq!(kube, Some(Value::from("fake")), "{body}");
    let warnings: Vec<&str> = body["warningMessages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        warnings.iter().any(|w| w.contains("\"west\" is not available: connection refused")),
        "{warnings:?}"
    );
    assert!(!warnings.iter().any(|w| w.contains("north")), "{warnings:?}");

    // A token the reviewer does not know is a 401; none at all too.
    assert_eq!(get(&st, "/api/namespaces", Some("mallory")).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(get(&st, "/api/namespaces", None).await.0, StatusCode::UNAUTHORIZED);
}
