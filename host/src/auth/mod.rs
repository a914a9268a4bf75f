//! Authentication per `auth.strategy`: who the caller is ([`Identity`]).
//!
//! - `anonymous`: everyone is let in and sees everything; no session tokens are issued.
//! - `login`: HTTP Basic with `auth.username` and `auth.password` (or an Argon2
//!   `auth.password_hash`), or a session token from `/token`. Password checks are limited
//!   ([`limiter`]): per client, in total, and in how many run at once.
//! - `token` / `header`: the caller's own Kubernetes token (in `Authorization: Bearer`, or in
//!   `auth.header_name` behind a proxy), checked by a TokenReview, or a session token from
//!   `/token` bound to that Kubernetes token ([`session`]).
//!
//! Public routes (`/status`) use [`Auth::check_public`]: never a password check, never a review.

pub mod config;
mod limiter;
mod parse;
mod session;

use std::{
    net::IpAddr,
    sync::Arc,
    time::{Duration, Instant},
};

use argon2::{Argon2, PasswordHash, PasswordVerifier};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use ipnet::IpNet;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use warp::http::HeaderMap;

use crate::{
    access::{AccessReview, Identity, KubeUser},
    config::{AuthConfig, AuthStrategy},
    error::ApiError,
};
use limiter::LoginGate;
use parse::{Credentials, credentials};
pub use session::{AUDIENCE, Issued, go_time_string};
use session::{Claims, SessionKeys, Subject, VerifyError, token_digest};

/// Everything authentication needs, built once at start-up.
pub struct Auth {
    strategy: AuthStrategy,
    header_name: String,
    keys: SessionKeys,
    login: LoginCheck,
    gate: LoginGate,
    trusted_proxies: Vec<IpNet>,
    pub reviewer: Arc<dyn AccessReview>,
}

impl Auth {
    /// `Ok((auth, generated))`: `generated` when no key was configured and a random one is used.
    pub fn new(
        cfg: &AuthConfig,
        reviewer: Arc<dyn AccessReview>,
    ) -> Result<(Auth, bool), getrandom::Error> {
        let (keys, generated) = match &cfg.signing_key {
            Some(k) => (k.keys().iter().map(|k| k.as_bytes().to_vec()).collect(), false),
            None => {
                let mut key = vec![0u8; 32];
                getrandom::fill(&mut key)?;
                (vec![key], true)
            }
        };
        let auth = Auth {
            strategy: cfg.strategy,
            header_name: cfg.header_name.clone(),
            keys: SessionKeys::new(&keys, &cfg.issuer),
            login: LoginCheck::new(cfg),
            gate: LoginGate::new(
                cfg.max_failed_logins,
                cfg.max_failed_logins_total,
                cfg.login_concurrency,
            ),
            // Validated at start: every entry parses.
            trusted_proxies: cfg
                .trusted_proxies
                .iter()
                .filter_map(|c| crate::config::parse_cidr(c))
                .collect(),
            reviewer,
        };
        Ok((auth, generated))
    }

    /// Who the caller of a protected route is, or why they may not call it.
    pub async fn check(
        &self,
        headers: &HeaderMap,
        peer: Option<IpAddr>,
    ) -> Result<Identity, ApiError> {
        match self.strategy {
            AuthStrategy::Anonymous => Ok(Identity::Everyone),
            AuthStrategy::Login => match credentials(headers)? {
                Credentials::Bearer(token) => {
                    self.session(&token).map(|_| Identity::Everyone).map_err(|e| e.into_api())
                }
                Credentials::Basic(user, pass) => {
                    self.basic(headers, peer, user, pass).await.map(|_| Identity::Everyone)
                }
            },
            AuthStrategy::Token => match credentials(headers)? {
                Credentials::Bearer(token) => self.kube_user(&token).await.map(Identity::Kube),
                Credentials::Basic(..) => Err(unauthorized(
                    "strategy \"token\" takes a Bearer token: a Kubernetes token or one from /token",
                )),
            },
            AuthStrategy::Header => {
                self.kube_user(self.header_token(headers)?).await.map(Identity::Kube)
            }
        }
    }

    /// The caller's own Kubernetes token (strategies `token` and `header`): the one sent, or
    /// the one a session token stands for. For the reviews of another cluster's API server,
    /// after [`Auth::check`] has accepted the request; `None` for the other strategies.
    pub fn kube_token(&self, headers: &HeaderMap) -> Option<String> {
        let sent = match self.strategy {
            AuthStrategy::Token => match credentials(headers) {
                Ok(Credentials::Bearer(t)) => t,
                _ => return None,
            },
            AuthStrategy::Header => self.header_token(headers).ok()?.to_string(),
            AuthStrategy::Anonymous | AuthStrategy::Login => return None,
        };
        match self.keys.verify(&sent) {
            Ok(claims) => claims.ktk.as_deref().and_then(|k| self.keys.open(k)),
            Err(VerifyError::Expired) => None,
            Err(VerifyError::Invalid) => Some(sent),
        }
    }

    /// Whether a public route's caller has shown valid credentials, judged from what costs
    /// nothing: a session token's signature, or a review answer already cached. Never a
    /// password check and never a review, so public routes cannot be used to flood either.
    pub fn check_public(&self, headers: &HeaderMap) -> bool {
        let bearer = || match credentials(headers) {
            Ok(Credentials::Bearer(t)) => Some(t),
            _ => None,
        };
        match self.strategy {
            AuthStrategy::Anonymous => true,
            AuthStrategy::Login => bearer().is_some_and(|t| self.session(&t).is_ok()),
            AuthStrategy::Token | AuthStrategy::Header => {
                let token = match self.strategy {
                    AuthStrategy::Header => self.header_token(headers).ok().map(str::to_string),
                    _ => bearer(),
                };
                let Some(token) = token else { return false };
                let digest = match self.session(&token) {
                    Ok(claims) => claim_digest(&claims),
                    Err(VerifyError::Expired) => None,
                    Err(VerifyError::Invalid) => Some(token_digest(&token)),
                };
                digest.is_some_and(|d| matches!(self.reviewer.cached(&d), Some(Ok(_))))
            }
        }
    }

    /// `/token`: the user to issue a session token for, from the strategy's credentials
    /// (Basic for `login`, a Kubernetes token for `token` and `header`), and that
    /// Kubernetes token. `anonymous` issues none: nothing would check it.
    pub async fn token_user(
        &self,
        headers: &HeaderMap,
        peer: Option<IpAddr>,
    ) -> Result<(String, Option<String>), ApiError> {
        match self.strategy {
            AuthStrategy::Anonymous => Err(ApiError::bad_request(
                "strategy \"anonymous\" issues no tokens: every request is let in without one",
            )),
            AuthStrategy::Login => match credentials(headers)? {
                Credentials::Basic(user, pass) => {
                    self.basic(headers, peer, user.clone(), pass).await?;
                    Ok((user, None))
                }
                Credentials::Bearer(_) => {
                    Err(unauthorized("a token is issued for user and password (HTTP Basic) only"))
                }
            },
            AuthStrategy::Token | AuthStrategy::Header => {
                let token = match self.strategy {
                    AuthStrategy::Header => self.header_token(headers)?.to_string(),
                    _ => match credentials(headers)? {
                        Credentials::Bearer(t) => t,
                        Credentials::Basic(..) => {
                            return Err(unauthorized(
                                "send your Kubernetes token as Authorization: Bearer",
                            ));
                        }
                    },
                };
                // A session token is not exchanged for another (its lifetime would grow).
                if self.keys.verify(&token).is_ok() {
                    return Err(unauthorized("send your Kubernetes token, not a session token"));
                }
                let user = self.reviewer.authenticate(&token).await?;
                Ok((user.username.clone(), Some(token)))
            }
        }
    }

    /// Issues a session token for `subject` (and the Kubernetes token it stands for).
    pub fn issue(
        &self,
        subject: &str,
        kube_token: Option<&str>,
        lifetime: Duration,
        process_start: Instant,
    ) -> Result<Issued, ApiError> {
        let subject = Subject { name: subject, strategy: self.strategy.name(), kube_token };
        self.keys.issue(&subject, lifetime, process_start)
    }

    fn header_token<'h>(&self, headers: &'h HeaderMap) -> Result<&'h str, ApiError> {
        headers
            .get(self.header_name.as_str())
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .map(|v| v.strip_prefix("Bearer ").unwrap_or(v))
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                unauthorized("missing credentials: the authenticating proxy sent no token")
            })
    }

    /// A session token of this strategy (signature, `exp`, `iss`, `aud`, strategy).
    fn session(&self, token: &str) -> Result<Claims, VerifyError> {
        let claims = self.keys.verify(token)?;
        if claims.strategy != self.strategy.name() {
            return Err(VerifyError::Invalid);
        }
        Ok(claims)
    }

    /// A session token stands for its Kubernetes token: the cached review of it while fresh,
    /// else a new review. Anything else goes to a TokenReview.
    async fn kube_user(&self, token: &str) -> Result<Arc<KubeUser>, ApiError> {
        let claims = match self.keys.verify(token) {
            Ok(claims) => claims,
            Err(VerifyError::Expired) => return Err(unauthorized("token expired")),
            Err(VerifyError::Invalid) => return self.reviewer.authenticate(token).await,
        };
        if claims.strategy != self.strategy.name() {
            return Err(unauthorized("invalid token: issued under another strategy"));
        }
        let digest = claim_digest(&claims).ok_or_else(|| unauthorized("invalid token"))?;
        if let Some(answer) = self.reviewer.cached(&digest) {
            return answer;
        }
        let kube = claims
            .ktk
            .as_deref()
            .and_then(|k| self.keys.open(k))
            .filter(|k| token_digest(k) == digest)
            .ok_or_else(|| unauthorized("invalid token"))?;
        self.reviewer.authenticate(&kube).await
    }

    async fn basic(
        &self,
        headers: &HeaderMap,
        peer: Option<IpAddr>,
        user: String,
        pass: String,
    ) -> Result<(), ApiError> {
        let client = limiter::client_key(peer, headers, &self.trusted_proxies);
        // Counted before the check, so parallel guesses cannot outrun the first failure.
        let costly = self.login.costly();
        let mut attempt = self.gate.begin(client, costly)?;
        let ok = if costly {
            let slot = attempt.slot();
            let check = self.login.clone();
            // Argon2 takes tens of milliseconds of CPU and m KiB: off the async workers, and
            // the slot goes with the check, so one that outlives its request still counts.
            tokio::task::spawn_blocking(move || {
                let _slot = slot;
                check.matches(&user, &pass)
            })
            .await
            .map_err(|e| ApiError::internal(format!("login check failed: {e}")))?
        } else {
            self.login.matches(&user, &pass)
        };
        if ok {
            attempt.succeeded();
            Ok(())
        } else {
            Err(unauthorized("invalid user or password"))
        }
    }
}

fn claim_digest(claims: &Claims) -> Option<[u8; 32]> {
    let raw = URL_SAFE_NO_PAD.decode(claims.ktd.as_deref()?).ok()?;
    raw.try_into().ok()
}

fn unauthorized(msg: &str) -> ApiError {
    ApiError::Unauthorized(msg.into())
}

/// The configured user and secret. Plain values are compared as SHA-256 digests in
/// constant time, so neither their content nor their length shows in the timing.
#[derive(Clone)]
struct LoginCheck {
    user: [u8; 32],
    secret: Secret,
}

#[derive(Clone)]
enum Secret {
    Plain([u8; 32]),
    Argon2(Arc<str>),
    Unset,
}

fn digest(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

impl LoginCheck {
    fn new(cfg: &AuthConfig) -> LoginCheck {
        let secret = match (&cfg.password_hash, cfg.password.as_deref()) {
            (Some(h), _) => Secret::Argon2(h.as_str().into()),
            (None, Some(p)) if !p.is_empty() => Secret::Plain(digest(p)),
            _ => Secret::Unset,
        };
        LoginCheck { user: digest(&cfg.username), secret }
    }

    /// Whether a check is an Argon2 verification (CPU and memory), not a digest compare.
    fn costly(&self) -> bool {
        matches!(self.secret, Secret::Argon2(_))
    }

    fn matches(&self, user: &str, pass: &str) -> bool {
        let user_ok = bool::from(digest(user).ct_eq(&self.user));
        // Both checks always run; `&` (not `&&`) so timing does not reveal which failed.
        let pass_ok = match &self.secret {
            Secret::Plain(d) => bool::from(digest(pass).ct_eq(d)),
            Secret::Argon2(phc) => PasswordHash::new(phc)
                .is_ok_and(|h| Argon2::default().verify_password(pass.as_bytes(), &h).is_ok()),
            Secret::Unset => false,
        };
        user_ok & pass_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Reviewer;

    fn bearer(token: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("authorization", format!("Bearer {token}").parse().unwrap());
        h
    }

    #[test]
    fn the_kubernetes_token_for_a_remote_is_the_one_sent_or_the_one_a_session_holds() {
        let cfg = AuthConfig { strategy: AuthStrategy::Token, ..AuthConfig::default() };
        let (auth, _) = Auth::new(&cfg, Arc::new(Reviewer::new(None, &cfg))).unwrap();
        assert_eq!(auth.kube_token(&bearer("kube-1")).as_deref(), Some("kube-1"));
        let session = auth
            .issue("alice", Some("kube-2"), Duration::from_secs(60), Instant::now())
            .unwrap()
            .token;
        assert_eq!(auth.kube_token(&bearer(&session)).as_deref(), Some("kube-2"));
        assert_eq!(auth.kube_token(&HeaderMap::new()), None);

        let cfg = AuthConfig { strategy: AuthStrategy::Header, ..AuthConfig::default() };
        let (auth, _) = Auth::new(&cfg, Arc::new(Reviewer::new(None, &cfg))).unwrap();
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-access-token", "kube-3".parse().unwrap());
        assert_eq!(auth.kube_token(&h).as_deref(), Some("kube-3"));
        // The header strategy never reads Authorization.
        assert_eq!(auth.kube_token(&bearer("kube-1")), None);

        let cfg = AuthConfig { strategy: AuthStrategy::Anonymous, ..AuthConfig::default() };
        let (auth, _) = Auth::new(&cfg, Arc::new(Reviewer::new(None, &cfg))).unwrap();
        assert_eq!(auth.kube_token(&bearer("kube-1")), None);
    }

    #[test]
    fn plain_and_argon2_secrets_match_only_the_right_pair() {
        let mut cfg = AuthConfig { password: Some("s3cret".into()), ..AuthConfig::default() };
        let plain = LoginCheck::new(&cfg);
        assert!(plain.matches("admin", "s3cret"));
        assert!(!plain.matches("admin", "s3cre"));
        assert!(!plain.matches("admin", "s3cret-and-more"));
        assert!(!plain.matches("root", "s3cret"));
        // `argon2` CLI-compatible PHC string for "s3cret", made with the crate's defaults.
        let salt = argon2::password_hash::SaltString::from_b64("c29tZXNhbHRzb21lc2FsdA").unwrap();
        let phc = argon2::PasswordHasher::hash_password(&Argon2::default(), b"s3cret", &salt)
            .unwrap()
            .to_string();
        cfg.password = None;
        cfg.password_hash = Some(phc);
        let hashed = LoginCheck::new(&cfg);
        assert!(hashed.matches("admin", "s3cret"));
        assert!(!hashed.matches("admin", "wrong"));
    }
}
