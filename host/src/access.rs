//! Who may see which namespace: the caller's [`Identity`], and for Kubernetes users
//! (strategies `token` and `header`) TokenReview and SubjectAccessReview against the
//! cluster source's API server, made with the service's own credentials and cached for
//! `auth.review_cache_ttl`.
//!
//! The cluster model itself is read once with the service account and shared; every
//! answer is filtered here, by the caller's rights, before it leaves (README "Identities").

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::{StreamExt, stream};
use k8s_openapi::api::{
    authentication::v1::{TokenReview, TokenReviewSpec},
    authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec},
};
use kube::{Api, api::PostParams};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{config::NamespaceAccess, error::ApiError};

/// Reviews sent at once for one request; the rest wait their turn.
const CONCURRENT_REVIEWS: usize = 16;
/// Cache entries kept before expired ones are swept.
const SWEEP_ABOVE: usize = 50_000;

/// A user as the API server's TokenReview named them; SubjectAccessReviews ask about it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KubeUser {
    pub username: String,
    #[serde(default)]
    pub uid: String,
    #[serde(default)]
    pub groups: Vec<String>,
}

/// Who is asking.
#[derive(Clone, Debug)]
pub enum Identity {
    /// `anonymous`, or a `login` user: every namespace is visible.
    Everyone,
    /// A Kubernetes user: a namespace is visible when RBAC grants `auth.namespace_access` in it.
    Kube(Arc<KubeUser>),
    /// A public route (`/`, `/status`, `/token`): credentials not checked, no namespace visible.
    Unauthenticated,
}

/// Token digest → when reviewed, and the user it names (`None`: refused).
type TokenCache = Mutex<HashMap<[u8; 32], (Instant, Option<Arc<KubeUser>>)>>;
/// (user, namespace) → when decided, and whether allowed.
type DecisionCache = Mutex<HashMap<(Arc<KubeUser>, String), (Instant, bool)>>;

/// Reviews and their caches; one per service.
pub struct Reviewer {
    client: Option<kube::Client>,
    ttl: Duration,
    access: NamespaceAccess,
    /// SHA-256 of a token → the user it names, or `None` when the API server refused it.
    tokens: TokenCache,
    /// (user, namespace; `""` = every namespace) → allowed.
    decisions: DecisionCache,
}

impl Reviewer {
    pub fn new(client: Option<kube::Client>, ttl: Duration, access: NamespaceAccess) -> Reviewer {
        Reviewer { client, ttl, access, tokens: Mutex::default(), decisions: Mutex::default() }
    }

    fn client(&self) -> Result<kube::Client, ApiError> {
        // Config validation refuses per-user strategies without a kube source.
        self.client
            .clone()
            .ok_or_else(|| ApiError::internal("no Kubernetes API server to review tokens with"))
    }

    /// The user a Kubernetes token belongs to (TokenReview, cached); 401 when it names none.
    pub async fn authenticate(&self, token: &str) -> Result<Arc<KubeUser>, ApiError> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = Instant::now();
        let cached = lock(&self.tokens)
            .get(&key)
            .filter(|(t, _)| now.duration_since(*t) < self.ttl)
            .map(|(_, u)| u.clone());
        let user = match cached {
            Some(u) => u,
            None => {
                let review = TokenReview {
                    spec: TokenReviewSpec { token: Some(token.to_string()), audiences: None },
                    ..Default::default()
                };
                let answer = Api::<TokenReview>::all(self.client()?)
                    .create(&PostParams::default(), &review)
                    .await
                    .map_err(|e| review_failed("TokenReview", e))?;
                let status = answer.status.unwrap_or_default();
                let user =
                    status.user.filter(|_| status.authenticated == Some(true)).and_then(|u| {
                        Some(Arc::new(KubeUser {
                            username: u.username.filter(|n| !n.is_empty())?,
                            uid: u.uid.unwrap_or_default(),
                            groups: u.groups.unwrap_or_default(),
                        }))
                    });
                let mut map = lock(&self.tokens);
                sweep(&mut map, now, self.ttl);
                map.insert(key, (now, user.clone()));
                user
            }
        };
        user.ok_or_else(|| ApiError::Unauthorized("invalid or expired Kubernetes token".into()))
    }

    /// Whether `user` may see each of `namespaces` (same order). A user allowed everywhere
    /// (one namespace-less review) needs no per-namespace review; otherwise the namespaces
    /// without a fresh decision are reviewed concurrently, at most [`CONCURRENT_REVIEWS`] at once.
    pub async fn visible(
        &self,
        user: &Arc<KubeUser>,
        namespaces: &[&str],
    ) -> Result<Vec<bool>, ApiError> {
        if self.allowed(user, &[""]).await?[0] {
            return Ok(vec![true; namespaces.len()]);
        }
        self.allowed(user, namespaces).await
    }

    async fn allowed(
        &self,
        user: &Arc<KubeUser>,
        namespaces: &[&str],
    ) -> Result<Vec<bool>, ApiError> {
        let now = Instant::now();
        let mut out: Vec<Option<bool>> = {
            let map = lock(&self.decisions);
            namespaces
                .iter()
                .map(|ns| {
                    map.get(&(user.clone(), ns.to_string()))
                        .filter(|(t, _)| now.duration_since(*t) < self.ttl)
                        .map(|(_, a)| *a)
                })
                .collect()
        };
        let mut missing: Vec<String> = namespaces
            .iter()
            .zip(&out)
            .filter(|(_, d)| d.is_none())
            .map(|(ns, _)| ns.to_string())
            .collect();
        missing.sort_unstable();
        missing.dedup();
        if missing.is_empty() {
            return Ok(out.into_iter().map(|d| d.unwrap_or(false)).collect());
        }
        let client = self.client()?;
        let answers: Vec<(String, Result<bool, ApiError>)> = stream::iter(missing)
            .map(|ns: String| {
                let (client, user) = (client.clone(), user.clone());
                async move {
                    let a = self.review_access(client, &user, &ns).await;
                    (ns, a)
                }
            })
            .buffer_unordered(CONCURRENT_REVIEWS)
            .collect()
            .await;
        let mut fresh: HashMap<String, bool> = HashMap::with_capacity(answers.len());
        for (ns, a) in answers {
            fresh.insert(ns, a?);
        }
        {
            let mut map = lock(&self.decisions);
            sweep(&mut map, now, self.ttl);
            for (ns, a) in &fresh {
                map.insert((user.clone(), ns.clone()), (now, *a));
            }
        }
        for (d, ns) in out.iter_mut().zip(namespaces) {
            if d.is_none() {
                *d = fresh.get(*ns).copied();
            }
        }
        Ok(out.into_iter().map(|d| d.unwrap_or(false)).collect())
    }

    async fn review_access(
        &self,
        client: kube::Client,
        user: &KubeUser,
        namespace: &str,
    ) -> Result<bool, ApiError> {
        let a = &self.access;
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.username.clone()),
                uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
                groups: Some(user.groups.clone()),
                resource_attributes: Some(ResourceAttributes {
                    namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
                    verb: Some(a.verb.clone()),
                    resource: Some(a.resource.clone()),
                    group: Some(a.group.clone()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = Api::<SubjectAccessReview>::all(client)
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| review_failed("SubjectAccessReview", e))?;
        Ok(answer.status.is_some_and(|s| s.allowed && s.denied != Some(true)))
    }
}

fn review_failed(what: &str, e: kube::Error) -> ApiError {
    tracing::warn!("{what} failed: {e}");
    ApiError::unavailable(format!("the Kubernetes API server did not answer the {what}"))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves a cache, which stays usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn sweep<K, V>(map: &mut HashMap<K, (Instant, V)>, now: Instant, ttl: Duration) {
    if map.len() > SWEEP_ABOVE {
        map.retain(|_, (t, _)| now.duration_since(*t) < ttl);
    }
}

/// The caller's identity with the reviewer that answers for it; what handlers check.
#[derive(Clone)]
pub struct Access {
    pub identity: Identity,
    reviewer: Arc<Reviewer>,
}

impl Access {
    pub fn new(identity: Identity, reviewer: Arc<Reviewer>) -> Access {
        Access { identity, reviewer }
    }

    /// Whether the caller may see each namespace (same order).
    pub async fn visible(&self, namespaces: &[&str]) -> Result<Vec<bool>, ApiError> {
        match &self.identity {
            Identity::Everyone => Ok(vec![true; namespaces.len()]),
            Identity::Unauthenticated => Ok(vec![false; namespaces.len()]),
            Identity::Kube(user) => self.reviewer.visible(user, namespaces).await,
        }
    }

    /// 403 unless every namespace is visible (a multi-namespace graph is refused whole).
    /// The answer is the same whether the namespace exists or not: RBAC decides first.
    pub async fn require(&self, namespaces: &[&str]) -> Result<(), ApiError> {
        if self.visible(namespaces).await?.iter().all(|v| *v) {
            return Ok(());
        }
        Err(ApiError::Forbidden(if namespaces.len() == 1 {
            "you may not see this namespace".into()
        } else {
            "you may not see one or more of the requested namespaces".into()
        }))
    }

    /// The visible ones among `namespaces`, in their order.
    pub async fn filter<T>(
        &self,
        items: Vec<T>,
        namespace: impl Fn(&T) -> &str,
    ) -> Result<Vec<T>, ApiError> {
        let visible = {
            let names: Vec<&str> = items.iter().map(&namespace).collect();
            self.visible(&names).await?
        };
        Ok(items.into_iter().zip(visible).filter(|(_, v)| *v).map(|(i, _)| i).collect())
    }

    /// Whether answers must be filtered at all (false for `anonymous` and `login`).
    pub fn restricted(&self) -> bool {
        !matches!(self.identity, Identity::Everyone)
    }
}
