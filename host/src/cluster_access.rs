//! Per-cluster rights (#32). With strategies `token` and `header` the caller's own token is
//! reviewed by the API server of the cluster being read: a remote's TokenReview names the
//! user there and its SubjectAccessReviews decide which of its namespaces they see, each
//! remote with its own review caches. With the other strategies nobody is reviewed and each
//! cluster is read with its own credentials (its `[[cluster.remotes]]` kubeconfig). The home
//! cluster keeps the reviewer `auth` was built with, so its path is unchanged.

use std::sync::Arc;

use warp::http::HeaderMap;

// Made with the state (which holds them); kept nameable here, where they are used.
pub use crate::access::{RemoteReviewers, Reviews};
use crate::{
    access::{Access, AccessReview, Identity},
    clusters::Member,
    error::ApiError,
    state::AppState,
};

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
    let reviewer = state
        .remote_reviewers
        .get(&member.name)
        .ok_or_else(|| ApiError::internal(format!("no reviewer for cluster {:?}", member.name)))?;
    reviewed_by(state, reviewer.clone(), headers).await
}

/// The caller's access as `reviewer`'s API server sees the request's Kubernetes token: the
/// user its TokenReview names, or `None` when it does not accept the token.
pub async fn reviewed_by(
    state: &AppState,
    reviewer: Arc<dyn AccessReview>,
    headers: &HeaderMap,
) -> Result<Option<Access>, ApiError> {
    // `check` accepted the request, so the token is there (or a session token holding it).
    let token = state
        .auth
        .kube_token(headers)
        .ok_or_else(|| ApiError::Unauthorized("no Kubernetes token to review".into()))?;
    match reviewer.authenticate(&token).await {
        Ok(user) => Ok(Some(Access::new(Identity::Kube(user), reviewer))),
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
