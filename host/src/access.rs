//! Who may see which namespace: the caller's [`Identity`], and for Kubernetes users
//! (strategies `token` and `header`) TokenReview and SubjectAccessReview against the
//! cluster source's API server, made with the service's own credentials and cached for
//! `auth.review_cache_ttl`. Concurrent identical reviews are shared ([`Flights`]); unseen
//! tokens are anyone's to send, so TokenReviews are also rate-limited (`auth.review_rate`,
//! `auth.review_burst`), bounded in number at once (`auth.review_concurrency`) and their
//! answers kept in bounded LRUs (`auth.review_cache_entries`).
//!
//! The cluster model itself is read once with the service account and shared; every
//! answer is filtered here, by the caller's rights, before it leaves (README "Identities").

use std::{
    collections::{BTreeMap, HashMap},
    num::{NonZeroU32, NonZeroUsize},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::{StreamExt, future::BoxFuture, stream};
use governor::{DefaultDirectRateLimiter, Quota, clock::Clock};
use k8s_openapi::api::{
    authentication::v1::{TokenReview, TokenReviewSpec},
    authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec},
};
use kube::{Api, api::PostParams};
use lru::LruCache;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

use crate::{
    clusters::ClusterSet,
    config::{AuthConfig, NamespaceAccess},
    error::ApiError,
    flights::Flights,
};

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
    /// The authenticator's extra attributes (scopes, ...), which RBAC webhooks may use.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
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

/// A token's SHA-256, the key its review is cached under.
pub type Digest32 = [u8; 32];
/// A token's user, or why it names none (401, 429, 503).
pub type TokenAnswer = Result<Arc<KubeUser>, ApiError>;

/// Who a Kubernetes token belongs to, and which namespaces a user may see, in one cluster.
/// The real one is a [`Reviewer`] (TokenReview and SubjectAccessReview, cached); tests give
/// a hand-made one to [`crate::state::AppState::assemble_with`].
pub trait AccessReview: Send + Sync {
    /// The user `token` names: 401 when it names none.
    fn authenticate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, TokenAnswer>;
    /// Whether `user` may see each of `namespaces` (same order).
    fn visible<'a>(
        &'a self,
        user: &'a Arc<KubeUser>,
        namespaces: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<bool>, ApiError>>;
    /// The fresh answer for a token digest, sending nothing (`None`: not known).
    fn cached(&self, _key: &Digest32) -> Option<TokenAnswer> {
        None
    }
}

impl AccessReview for Reviewer {
    fn authenticate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, TokenAnswer> {
        Box::pin(Reviewer::authenticate(self, token))
    }
    fn visible<'a>(
        &'a self,
        user: &'a Arc<KubeUser>,
        namespaces: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<bool>, ApiError>> {
        Box::pin(Reviewer::visible(self, user, namespaces))
    }
    fn cached(&self, key: &Digest32) -> Option<TokenAnswer> {
        Reviewer::cached(self, key)
    }
}
/// (user, namespace) → when decided, and whether allowed.
type DecisionCache = Mutex<HashMap<(Arc<KubeUser>, String), (Instant, bool)>>;

/// TokenReview answers by token digest: accepted and refused tokens apart, so a flood of
/// junk cannot push out the answers of real users. Both bounded, least recently used out.
struct TokenCache {
    accepted: LruCache<Digest32, (Instant, Arc<KubeUser>)>,
    refused: LruCache<Digest32, Instant>,
}

/// Reviews and their caches; one per service.
pub struct Reviewer {
    client: Option<kube::Client>,
    ttl: Duration,
    access: NamespaceAccess,
    audiences: Vec<String>,
    tokens: Mutex<TokenCache>,
    token_flights: Flights<Digest32, TokenAnswer>,
    /// TokenReviews at once, and per second: unseen tokens are anyone's to send.
    review_slots: Semaphore,
    review_rate: DefaultDirectRateLimiter,
    /// (user, namespace; `""` = every namespace) → allowed.
    decisions: DecisionCache,
    decision_flights: Flights<(Arc<KubeUser>, String), Result<bool, ApiError>>,
}

impl Reviewer {
    pub fn new(client: Option<kube::Client>, cfg: &AuthConfig) -> Reviewer {
        let entries = NonZeroUsize::new(cfg.review_cache_entries).unwrap_or(NonZeroUsize::MIN);
        let rate = NonZeroU32::new(cfg.review_rate).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(cfg.review_burst).unwrap_or(NonZeroU32::MIN);
        Reviewer {
            client,
            ttl: cfg.review_cache_ttl.0,
            access: cfg.namespace_access.clone(),
            audiences: cfg.audiences.clone(),
            tokens: Mutex::new(TokenCache {
                accepted: LruCache::new(entries),
                refused: LruCache::new(entries),
            }),
            token_flights: Flights::default(),
            review_slots: Semaphore::new(cfg.review_concurrency.max(1)),
            review_rate: DefaultDirectRateLimiter::direct(
                Quota::per_second(rate).allow_burst(burst),
            ),
            decisions: Mutex::default(),
            decision_flights: Flights::default(),
        }
    }

    fn client(&self) -> Result<kube::Client, ApiError> {
        // Config validation refuses per-user strategies without a kube source.
        self.client
            .clone()
            .ok_or_else(|| ApiError::internal("no Kubernetes API server to review tokens with"))
    }

    /// The cached answer for a token digest while fresh: its user, or 401 for a refused
    /// token. Sends nothing.
    pub fn cached(&self, key: &Digest32) -> Option<TokenAnswer> {
        let now = Instant::now();
        let mut cache = lock(&self.tokens);
        if let Some((t, user)) = cache.accepted.get(key)
            && now.duration_since(*t) < self.ttl
        {
            return Some(Ok(user.clone()));
        }
        match cache.refused.get(key) {
            Some(t) if now.duration_since(*t) < self.ttl => Some(Err(refused())),
            _ => None,
        }
    }

    /// The user a Kubernetes token belongs to (TokenReview, cached); 401 when it names none,
    /// 429 when too many unseen tokens are being reviewed.
    pub async fn authenticate(&self, token: &str) -> TokenAnswer {
        let key: Digest32 = Sha256::digest(token.as_bytes()).into();
        if let Some(answer) = self.cached(&key) {
            return answer;
        }
        // Concurrent requests with one unseen token share its review.
        self.token_flights
            .run(key, || async {
                if let Some(answer) = self.cached(&key) {
                    return answer;
                }
                // The rate is for tokens never accepted: one whose accepted answer merely went
                // stale (a session's periodic re-review) is a real user's, not a flood's.
                let known = lock(&self.tokens).accepted.contains(&key);
                if !known && let Err(wait) = self.review_rate.check() {
                    let secs = wait.wait_time_from(governor::clock::DefaultClock::default().now());
                    return Err(ApiError::TooManyRequests {
                        message: "too many unseen tokens to review; try again shortly".into(),
                        retry_after: secs.as_secs_f64().ceil().max(1.0) as u64,
                    });
                }
                let _slot = self
                    .review_slots
                    .acquire()
                    .await
                    .map_err(|_| ApiError::internal("the review slots are closed"))?;
                let user = self.review_token(token).await?;
                self.remember(key, user.clone());
                user.ok_or_else(refused)
            })
            .await
    }

    fn remember(&self, key: Digest32, user: Option<Arc<KubeUser>>) {
        let now = Instant::now();
        let mut cache = lock(&self.tokens);
        match user {
            Some(u) => {
                cache.refused.pop(&key);
                cache.accepted.put(key, (now, u));
            }
            None => {
                cache.accepted.pop(&key);
                cache.refused.put(key, now);
            }
        }
    }

    async fn review_token(&self, token: &str) -> Result<Option<Arc<KubeUser>>, ApiError> {
        let sent = (!self.audiences.is_empty()).then(|| self.audiences.clone());
        let review = TokenReview {
            spec: TokenReviewSpec { token: Some(token.to_string()), audiences: sent.clone() },
            ..Default::default()
        };
        let answer = Api::<TokenReview>::all(self.client()?)
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| review_failed("TokenReview", e))?;
        let status = answer.status.unwrap_or_default();
        // With audiences asked for, the API server must name one it checked (an
        // authenticator that ignores audiences would otherwise accept any token).
        let audience_ok = sent.as_ref().is_none_or(|want| {
            status.audiences.as_ref().is_some_and(|got| got.iter().any(|a| want.contains(a)))
        });
        Ok(status.user.filter(|_| status.authenticated == Some(true) && audience_ok).and_then(
            |u| {
                Some(Arc::new(KubeUser {
                    username: u.username.filter(|n| !n.is_empty())?,
                    uid: u.uid.unwrap_or_default(),
                    groups: u.groups.unwrap_or_default(),
                    extra: u.extra.unwrap_or_default(),
                }))
            },
        ))
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

    fn decided(&self, user: &Arc<KubeUser>, ns: &str, now: Instant) -> Option<bool> {
        lock(&self.decisions)
            .get(&(user.clone(), ns.to_string()))
            .filter(|(t, _)| now.duration_since(*t) < self.ttl)
            .map(|(_, a)| *a)
    }

    async fn allowed(
        &self,
        user: &Arc<KubeUser>,
        namespaces: &[&str],
    ) -> Result<Vec<bool>, ApiError> {
        let now = Instant::now();
        let mut out: Vec<Option<bool>> =
            namespaces.iter().map(|ns| self.decided(user, ns, now)).collect();
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
        // Concurrent requests asking the same (user, namespace) share one review.
        let answers: Vec<(String, Result<bool, ApiError>)> = stream::iter(missing)
            .map(|ns: String| {
                let (client, user) = (client.clone(), user.clone());
                async move {
                    let key = (user.clone(), ns.clone());
                    let a = self
                        .decision_flights
                        .run(key, || async {
                            if let Some(a) = self.decided(&user, &ns, Instant::now()) {
                                return Ok(a);
                            }
                            let a = self.review_access(client, &user, &ns).await?;
                            let mut map = lock(&self.decisions);
                            sweep(&mut map, Instant::now(), self.ttl);
                            map.insert((user.clone(), ns.clone()), (Instant::now(), a));
                            Ok(a)
                        })
                        .await;
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
                // The whole user, as the TokenReview named it (RBAC webhooks may use extra).
                extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
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

fn refused() -> ApiError {
    ApiError::Unauthorized("invalid or expired Kubernetes token".into())
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
    reviewer: Arc<dyn AccessReview>,
}

impl Access {
    pub fn new(identity: Identity, reviewer: Arc<dyn AccessReview>) -> Access {
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

    /// The reviewer of the remote `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn AccessReview>> {
        self.by_name.get(name)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str) -> Option<Arc<KubeUser>> {
        Some(Arc::new(KubeUser {
            username: name.into(),
            uid: String::new(),
            groups: vec![],
            extra: BTreeMap::new(),
        }))
    }

    #[test]
    fn token_answers_are_bounded_and_kept_apart() {
        let cfg = AuthConfig { review_cache_entries: 2, ..AuthConfig::default() };
        let r = Reviewer::new(None, &cfg);
        r.remember([1; 32], user("a"));
        r.remember([2; 32], user("b"));
        // A flood of refused tokens does not push out accepted ones.
        for i in 10..100 {
            r.remember([i; 32], None);
        }
        assert!(matches!(r.cached(&[1; 32]), Some(Ok(u)) if u.username == "a"));
        assert!(matches!(r.cached(&[99; 32]), Some(Err(ApiError::Unauthorized(_)))));
        assert!(r.cached(&[10; 32]).is_none(), "the least recently used refusal is gone");
        // Touching "a" keeps it; a third accepted token pushes out "b".
        r.remember([3; 32], user("c"));
        assert!(r.cached(&[2; 32]).is_none());
        assert!(r.cached(&[1; 32]).is_some() && r.cached(&[3; 32]).is_some());
        // A token refused after being accepted is refused.
        r.remember([1; 32], None);
        assert!(matches!(r.cached(&[1; 32]), Some(Err(_))));
    }
}
