//! Per-cluster rights (#32). With strategies `token` and `header` the caller's own token is
//! reviewed by the API server of the cluster being read: a remote's TokenReview names the
//! user there and its SubjectAccessReviews decide which of its namespaces they see, each
//! remote with its own review caches. With the other strategies nobody is reviewed and each
//! cluster is read with its own credentials (its `[[cluster.remotes]]` kubeconfig). The home
//! cluster keeps the reviewer `auth` was built with, so its path is unchanged.

use std::{collections::HashMap, sync::Arc};

use warp::http::HeaderMap;

use crate::{
    access::{Access, AccessReview, Identity, Reviewer},
    clusters::{ClusterSet, Member},
    config::AuthConfig,
    error::ApiError,
    state::AppState,
};

/// One reviewer per remote, asking that remote's API server (with its own credentials).
#[derive(Default)]
pub struct RemoteReviewers {
    by_name: HashMap<String, Arc<dyn AccessReview>>,
}

impl RemoteReviewers {
    /// The real ones: a [`Reviewer`] over each remote's own client.
    pub fn new(clusters: &ClusterSet, cfg: &AuthConfig) -> RemoteReviewers {
        let by_name = clusters
            .members()
            .iter()
            .filter(|m| m.remote)
            .map(|m| {
                let r: Arc<dyn AccessReview> =
                    Arc::new(Reviewer::new(m.cluster.kube_client(), cfg));
                (m.name.clone(), r)
            })
            .collect();
        RemoteReviewers { by_name }
    }

    /// These reviewers and `reviewer` for the remote `name` (tests give their own).
    pub fn with(mut self, name: &str, reviewer: Arc<dyn AccessReview>) -> RemoteReviewers {
        self.by_name.insert(name.to_string(), reviewer);
        self
    }
}

/// Who reviews access: the home cluster's reviewer (what `auth` authenticates with) and
/// each remote's.
pub struct Reviews {
    pub home: Arc<dyn AccessReview>,
    pub remotes: RemoteReviewers,
}

impl Reviews {
    /// The real ones, from the clusters' own clients ([`Reviewer`]).
    pub fn new(clusters: &ClusterSet, cfg: &AuthConfig) -> Reviews {
        Reviews {
            home: Arc::new(Reviewer::new(clusters.home().cluster.kube_client(), cfg)),
            remotes: RemoteReviewers::new(clusters, cfg),
        }
    }
}

/// The caller's access in `member`: the home cluster's is `access` itself; in a remote, a
/// Kubernetes user is whoever that remote's TokenReview names for the same token, and `None`
/// when the remote does not accept the token (the caller sees nothing there).
pub async fn access_in(
    state: &AppState,
    access: &Access,
    member: &Member,
    headers: &HeaderMap,
) -> Result<Option<Access>, ApiError> {
    if !member.remote || !matches!(access.identity, Identity::Kube(_)) {
        return Ok(Some(access.clone()));
    }
    let reviewer =
        state.remote_reviewers.by_name.get(&member.name).ok_or_else(|| {
            ApiError::internal(format!("no reviewer for cluster {:?}", member.name))
        })?;
    // `check` accepted the request, so the token is there (or a session token holding it).
    let token = state
        .auth
        .kube_token(headers)
        .ok_or_else(|| ApiError::Unauthorized("no Kubernetes token to review".into()))?;
    match reviewer.authenticate(&token).await {
        Ok(user) => Ok(Some(Access::new(Identity::Kube(user), reviewer.clone()))),
        Err(ApiError::Unauthorized(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// [`access_in`] for an operation on one namespace of `member`: 403 when that cluster does
/// not accept the caller's token (authenticated at home, but nobody there).
pub async fn require_in(
    state: &AppState,
    access: Access,
    member: &Member,
    headers: &HeaderMap,
) -> Result<Access, ApiError> {
    if !member.remote {
        return Ok(access);
    }
    access_in(state, &access, member, headers).await?.ok_or_else(|| {
        ApiError::Forbidden(format!("cluster {:?} does not accept your token", member.name))
    })
}
