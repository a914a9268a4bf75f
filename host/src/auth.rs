//! Authentication per `auth.strategy`: who the caller is ([`Identity`]).
//!
//! - `anonymous`: everyone is let in and sees everything.
//! - `login`: HTTP Basic with `auth.username` and `auth.password` (or an Argon2
//!   `auth.password_hash`), or a session token from `/token`. Failed logins are limited per
//!   client address.
//! - `token` / `header`: the caller's own Kubernetes token (in `Authorization: Bearer`, or in
//!   `auth.header_name` behind a proxy), checked by a TokenReview, or a session token from
//!   `/token` that carries the reviewed user.
//!
//! Session tokens are HS256 JWTs with `iss` = `auth.issuer` and `aud` = "meshlens"; the
//! first of `auth.signing_key` signs, every one verifies (key rotation).

use std::{
    collections::HashMap,
    net::{IpAddr, Ipv4Addr},
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use argon2::{Argon2, PasswordHash, PasswordVerifier};
use base64::{Engine, engine::general_purpose::STANDARD};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, errors::ErrorKind};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use warp::http::{HeaderMap, header};

use crate::{
    access::{Identity, KubeUser, Reviewer},
    config::{AuthConfig, AuthStrategy},
    error::ApiError,
};

/// `aud` of every session token.
pub const AUDIENCE: &str = "meshlens";
/// The window failed logins are counted in.
const FAILURE_WINDOW: Duration = Duration::from_secs(60);

/// Everything authentication needs, built once at start-up.
pub struct Auth {
    strategy: AuthStrategy,
    header_name: String,
    keys: SessionKeys,
    login: LoginCheck,
    failures: FailedLogins,
    pub reviewer: Arc<Reviewer>,
}

impl Auth {
    /// `Ok((auth, generated))`: `generated` when no key was configured and a random one is used.
    pub fn new(
        cfg: &AuthConfig,
        reviewer: Arc<Reviewer>,
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
            failures: FailedLogins::new(cfg.max_failed_logins),
            reviewer,
        };
        Ok((auth, generated))
    }

    /// Who the caller of a protected route is, or why they may not call it.
    pub async fn check(
        &self,
        headers: &HeaderMap,
        client: Option<IpAddr>,
    ) -> Result<Identity, ApiError> {
        match self.strategy {
            AuthStrategy::Anonymous => Ok(Identity::Everyone),
            AuthStrategy::Login => match credentials(headers)? {
                Credentials::Bearer(token) => self
                    .keys
                    .verify(&token)
                    .map(|_| Identity::Everyone)
                    .map_err(VerifyError::into_api),
                Credentials::Basic(user, pass) => {
                    self.basic(client, user, pass).await.map(|_| Identity::Everyone)
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

    /// `/token`: the user to issue a session token for, from the strategy's credentials
    /// (Basic for `login`, a Kubernetes token for `token` and `header`).
    pub async fn token_user(
        &self,
        headers: &HeaderMap,
        client: Option<IpAddr>,
    ) -> Result<(String, Option<KubeUser>), ApiError> {
        match self.strategy {
            AuthStrategy::Anonymous => Ok(("anonymous".into(), None)),
            AuthStrategy::Login => match credentials(headers)? {
                Credentials::Basic(user, pass) => {
                    self.basic(client, user.clone(), pass).await?;
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
                let user = self.reviewer.authenticate(&token).await?;
                Ok((user.username.clone(), Some((*user).clone())))
            }
        }
    }

    /// Issues a session token for `subject` (and the Kubernetes user it stands for).
    pub fn issue(
        &self,
        subject: &str,
        kube: Option<KubeUser>,
        lifetime: Duration,
        process_start: Instant,
    ) -> Result<Issued, ApiError> {
        self.keys.issue(subject, kube, lifetime, process_start)
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

    /// A session token from `/token` names its user; anything else goes to a TokenReview.
    async fn kube_user(&self, token: &str) -> Result<Arc<KubeUser>, ApiError> {
        match self.keys.verify(token) {
            Ok(claims) => claims.kube.map(Arc::new).ok_or_else(|| unauthorized("invalid token")),
            Err(VerifyError::Expired) => Err(unauthorized("token expired")),
            Err(VerifyError::Invalid) => self.reviewer.authenticate(token).await,
        }
    }

    async fn basic(
        &self,
        client: Option<IpAddr>,
        user: String,
        pass: String,
    ) -> Result<(), ApiError> {
        let ip = client.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        if let Some(wait) = self.failures.blocked(ip) {
            return Err(ApiError::TooManyRequests {
                message: "too many failed logins from this address; try again later".into(),
                retry_after: wait,
            });
        }
        let check = self.login.clone();
        // Argon2 takes tens of milliseconds of CPU: keep it off the async workers.
        let ok = tokio::task::spawn_blocking(move || check.matches(&user, &pass))
            .await
            .map_err(|e| ApiError::internal(format!("login check failed: {e}")))?;
        if ok {
            Ok(())
        } else {
            self.failures.record(ip);
            Err(unauthorized("invalid user or password"))
        }
    }
}

enum Credentials {
    Bearer(String),
    Basic(String, String),
}

fn unauthorized(msg: &str) -> ApiError {
    ApiError::Unauthorized(msg.into())
}

fn credentials(headers: &HeaderMap) -> Result<Credentials, ApiError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| {
            unauthorized("missing credentials: send a Bearer token or HTTP Basic user and password")
        })?
        .to_str()
        .map_err(|_| unauthorized("malformed Authorization header"))?;
    let (scheme, rest) = value
        .trim()
        .split_once(' ')
        .ok_or_else(|| unauthorized("malformed Authorization header"))?;
    if scheme.eq_ignore_ascii_case("bearer") {
        return Ok(Credentials::Bearer(rest.trim().to_string()));
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let raw = STANDARD
            .decode(rest.trim())
            .map_err(|_| unauthorized("malformed Basic credentials"))?;
        let text =
            String::from_utf8(raw).map_err(|_| unauthorized("malformed Basic credentials"))?;
        let (user, pass) =
            text.split_once(':').ok_or_else(|| unauthorized("malformed Basic credentials"))?;
        return Ok(Credentials::Basic(user.to_string(), pass.to_string()));
    }
    Err(unauthorized("unsupported authorization scheme"))
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

/// Failed logins per client address in a one-minute window.
struct FailedLogins {
    limit: u32,
    seen: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl FailedLogins {
    fn new(limit: u32) -> FailedLogins {
        FailedLogins { limit, seen: Mutex::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, (Instant, u32)>> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Seconds until `ip` may try again, when it is over the limit.
    fn blocked(&self, ip: IpAddr) -> Option<u64> {
        let seen = self.lock();
        let (start, n) = seen.get(&ip)?;
        let left = FAILURE_WINDOW.checked_sub(start.elapsed())?;
        (*n >= self.limit).then(|| left.as_secs_f64().ceil().max(1.0) as u64)
    }

    fn record(&self, ip: IpAddr) {
        let mut seen = self.lock();
        // Addresses come and go: forget finished windows before the map grows large.
        if seen.len() > 10_000 {
            seen.retain(|_, (start, _)| start.elapsed() < FAILURE_WINDOW);
        }
        let entry = seen.entry(ip).or_insert((Instant::now(), 0));
        if entry.0.elapsed() >= FAILURE_WINDOW {
            *entry = (Instant::now(), 0);
        }
        entry.1 += 1;
    }
}

/// The claims of a session token.
#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    /// The same as `sub`, for clients of the reference system's token.
    username: String,
    iss: String,
    aud: String,
    exp: u64,
    iat: u64,
    /// The reviewed Kubernetes user (`token` and `header` strategies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kube: Option<KubeUser>,
}

#[derive(Debug)]
enum VerifyError {
    Expired,
    Invalid,
}

impl VerifyError {
    fn into_api(self) -> ApiError {
        match self {
            VerifyError::Expired => unauthorized("token expired"),
            VerifyError::Invalid => unauthorized("invalid token"),
        }
    }
}

/// Signing and verifying keys of session tokens.
struct SessionKeys {
    signing: EncodingKey,
    verifying: Vec<DecodingKey>,
    validation: Validation,
    issuer: String,
}

impl SessionKeys {
    fn new(keys: &[Vec<u8>], issuer: &str) -> SessionKeys {
        // Only HS256: refuses `none` and algorithm-confusion tokens.
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = 0;
        SessionKeys {
            signing: EncodingKey::from_secret(keys.first().map(Vec::as_slice).unwrap_or_default()),
            verifying: keys.iter().map(|k| DecodingKey::from_secret(k)).collect(),
            validation,
            issuer: issuer.to_string(),
        }
    }

    fn issue(
        &self,
        subject: &str,
        kube: Option<KubeUser>,
        lifetime: Duration,
        process_start: Instant,
    ) -> Result<Issued, ApiError> {
        let now = SystemTime::now();
        let exp_time = now + lifetime;
        let secs = |t: SystemTime| t.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let claims = Claims {
            sub: subject.to_string(),
            username: subject.to_string(),
            iss: self.issuer.clone(),
            aud: AUDIENCE.to_string(),
            exp: secs(exp_time),
            iat: secs(now),
            kube,
        };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.signing)
            .map_err(|e| ApiError::internal(format!("cannot sign the token: {e}")))?;
        Ok(Issued {
            token,
            expired_at: go_time_string(exp_time, process_start.elapsed() + lifetime),
        })
    }

    /// Checks algorithm, signature (against every key), `exp`, `iss` and `aud`.
    fn verify(&self, token: &str) -> Result<Claims, VerifyError> {
        for key in &self.verifying {
            match jsonwebtoken::decode::<Claims>(token, key, &self.validation) {
                Ok(data) => return Ok(data.claims),
                // The signature is checked before the claims: an expired token was ours.
                Err(e) if *e.kind() == ErrorKind::ExpiredSignature => {
                    return Err(VerifyError::Expired);
                }
                Err(e) if *e.kind() == ErrorKind::InvalidSignature => continue,
                Err(_) => return Err(VerifyError::Invalid),
            }
        }
        Err(VerifyError::Invalid)
    }
}

/// An issued token and its expiry text.
pub struct Issued {
    pub token: String,
    pub expired_at: String,
}

/// Go's `time.Time.String()` of a UTC time with a monotonic reading:
/// `2026-11-23 10:04:05.123456789 +0000 UTC m=+86400.000000001`.
pub fn go_time_string(t: SystemTime, monotonic: Duration) -> String {
    let dt: chrono::DateTime<chrono::Utc> = t.into();
    let nanos = dt.timestamp_subsec_nanos();
    let frac = if nanos == 0 {
        String::new()
    } else {
        format!(".{nanos:09}").trim_end_matches('0').to_string()
    };
    format!(
        "{}{} +0000 UTC m=+{}.{:09}",
        dt.format("%Y-%m-%d %H:%M:%S"),
        frac,
        monotonic.as_secs(),
        monotonic.subsec_nanos()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
    const OLD: &[u8] = b"an older key, still accepted for a while";

    fn keys(list: &[&[u8]], issuer: &str) -> SessionKeys {
        SessionKeys::new(&list.iter().map(|k| k.to_vec()).collect::<Vec<_>>(), issuer)
    }

    fn claims_of(token: &str) -> serde_json::Value {
        let part = token.split('.').nth(1).unwrap();
        serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part).unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn issued_tokens_carry_iss_and_aud_and_verify_until_they_expire() {
        let k = keys(&[KEY], "meshlens");
        let t = k.issue("alice", None, Duration::from_secs(60), Instant::now()).unwrap();
        let c = claims_of(&t.token);
        assert_eq!(
            (c["iss"].as_str(), c["aud"].as_str(), c["sub"].as_str()),
            (Some("meshlens"), Some("meshlens"), Some("alice"))
        );
        assert_eq!(k.verify(&t.token).unwrap().sub, "alice");
        let gone = k.issue("alice", None, Duration::ZERO, Instant::now()).unwrap();
        std::thread::sleep(Duration::from_millis(1100));
        assert!(matches!(k.verify(&gone.token), Err(VerifyError::Expired)));
    }

    #[test]
    fn every_configured_key_verifies_and_the_first_signs() {
        let old = keys(&[OLD], "meshlens")
            .issue("bob", None, Duration::from_secs(60), Instant::now())
            .unwrap();
        let rotated = keys(&[KEY, OLD], "meshlens");
        assert_eq!(rotated.verify(&old.token).unwrap().sub, "bob");
        let new = rotated.issue("bob", None, Duration::from_secs(60), Instant::now()).unwrap();
        assert!(keys(&[KEY], "meshlens").verify(&new.token).is_ok(), "the first key signs");
        assert!(matches!(
            keys(&[b"a third key that nobody configured!!"], "meshlens").verify(&old.token),
            Err(VerifyError::Invalid)
        ));
    }

    #[test]
    fn tokens_of_another_issuer_or_audience_or_without_them_are_refused() {
        let other = keys(&[KEY], "someone-else")
            .issue("eve", None, Duration::from_secs(60), Instant::now())
            .unwrap();
        assert!(matches!(keys(&[KEY], "meshlens").verify(&other.token), Err(VerifyError::Invalid)));
        let exp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 60;
        let enc = EncodingKey::from_secret(KEY);
        let no_aud = serde_json::json!({"sub": "eve", "iss": "meshlens", "exp": exp});
        let t = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &no_aud, &enc).unwrap();
        assert!(matches!(keys(&[KEY], "meshlens").verify(&t), Err(VerifyError::Invalid)));
        let wrong_aud = serde_json::json!({"sub": "eve", "iss": "meshlens", "aud": "kubernetes", "exp": exp, "username": "eve", "iat": 0});
        let t = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &wrong_aud, &enc).unwrap();
        assert!(matches!(keys(&[KEY], "meshlens").verify(&t), Err(VerifyError::Invalid)));
    }

    #[test]
    fn tampered_and_unsigned_tokens_are_refused() {
        let k = keys(&[KEY], "meshlens");
        let t = k.issue("alice", None, Duration::from_secs(60), Instant::now()).unwrap().token;
        let parts: Vec<&str> = t.split('.').collect();
        let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"sub":"root","username":"root","iss":"meshlens","aud":"meshlens","exp":9999999999,"iat":0}"#);
        assert!(k.verify(&format!("{}.{}.{}", parts[0], forged, parts[2])).is_err());
        let none = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"alg":"none","typ":"JWT"}"#);
        assert!(k.verify(&format!("{none}.{}.", parts[1])).is_err());
        assert!(k.verify("not-a-token").is_err());
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

    #[test]
    fn failed_logins_block_an_address_after_the_limit() {
        let f = FailedLogins::new(3);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..3 {
            assert_eq!(f.blocked(a), None);
            f.record(a);
        }
        let wait = f.blocked(a).expect("blocked after three failures");
        assert!((1..=60).contains(&wait), "{wait}");
        assert_eq!(f.blocked(b), None, "other addresses are not affected");
    }

    #[test]
    fn go_time_format() {
        let t = UNIX_EPOCH + Duration::new(1_795_428_245, 123_456_789);
        let s = go_time_string(t, Duration::new(86_400, 1));
        assert_eq!(s, "2026-11-23 10:04:05.123456789 +0000 UTC m=+86400.000000001");
        let whole =
            go_time_string(UNIX_EPOCH + Duration::from_secs(1_795_428_245), Duration::from_secs(5));
        assert_eq!(whole, "2026-11-23 10:04:05 +0000 UTC m=+5.000000000");
    }
}
