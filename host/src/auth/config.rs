//! `[auth]` of the configuration: the strategy, its credentials and the limits of logins
//! and token reviews, with the checks of its own values (`crate::config` runs them).

use std::{fmt, time::Duration};

use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, HumanDuration, invalid};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthStrategy {
    Login,
    Anonymous,
    /// The caller's own Kubernetes token (TokenReview); namespaces follow RBAC.
    Token,
    /// Like `token`, with the Kubernetes token in `auth.header_name` (set by a proxy).
    Header,
}

impl AuthStrategy {
    /// The name as written in the config (`/status` shows it).
    pub fn name(self) -> &'static str {
        match self {
            AuthStrategy::Login => "login",
            AuthStrategy::Anonymous => "anonymous",
            AuthStrategy::Token => "token",
            AuthStrategy::Header => "header",
        }
    }

    /// Whether callers are Kubernetes users whose namespaces follow RBAC.
    pub fn per_user(self) -> bool {
        matches!(self, AuthStrategy::Token | AuthStrategy::Header)
    }
}

/// `auth.signing_key`: one key, or several (the first signs, all verify: key rotation).
#[derive(Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SigningKeys {
    One(String),
    Many(Vec<String>),
}

impl SigningKeys {
    pub fn keys(&self) -> Vec<&str> {
        match self {
            SigningKeys::One(k) => vec![k.as_str()],
            SigningKeys::Many(ks) => ks.iter().map(String::as_str).collect(),
        }
    }
}

/// `[auth.namespace_access]`: the right that makes a namespace visible to a user.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NamespaceAccess {
    pub verb: String,
    pub resource: String,
    /// API group of `resource` (`""`: the core group).
    pub group: String,
}

impl Default for NamespaceAccess {
    fn default() -> Self {
        NamespaceAccess { verb: "list".into(), resource: "pods".into(), group: String::new() }
    }
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    pub strategy: AuthStrategy,
    pub username: String,
    pub password: Option<String>,
    /// Argon2 PHC string (`$argon2id$v=19$...`), instead of `password`.
    pub password_hash: Option<String>,
    pub signing_key: Option<SigningKeys>,
    pub token_lifetime: HumanDuration,
    /// `iss` of issued tokens, required on presented ones (`aud` is always "meshlens").
    pub issuer: String,
    /// Failed logins allowed per client address per minute; then 429.
    pub max_failed_logins: u32,
    /// Failed logins allowed from all addresses together per minute; beyond it, addresses
    /// that have failed in the minute are refused (others still get their password checked).
    pub max_failed_logins_total: u32,
    /// Argon2 password checks running at once; more answer 429 (plain passwords need no slot).
    pub login_concurrency: usize,
    /// Peers (CIDRs) whose `X-Forwarded-For` names the client, for the failed-login limits.
    pub trusted_proxies: Vec<String>,
    pub header_name: String,
    pub review_cache_ttl: HumanDuration,
    /// TokenReview answers kept (each of accepted and refused tokens), least recently used out.
    pub review_cache_entries: usize,
    /// TokenReviews sent at once; the rest wait.
    pub review_concurrency: usize,
    /// TokenReviews per second (sustained) and at once after a quiet time (burst); more: 429.
    pub review_rate: u32,
    pub review_burst: u32,
    /// Sent with every TokenReview when not empty; the token must be meant for one of them.
    pub audiences: Vec<String>,
    pub namespace_access: NamespaceAccess,
}

/// The largest Argon2 memory cost (KiB) a `password_hash` may ask for: each check
/// allocates it, and `login_concurrency` checks run at once.
pub const MAX_ARGON2_MEMORY_KIB: u32 = 65_536;

// Secrets stay out of logs and error messages.
impl fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthConfig")
            .field("strategy", &self.strategy)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<set>"))
            .field("password_hash", &self.password_hash.as_ref().map(|_| "<set>"))
            .field("signing_key", &self.signing_key.as_ref().map(|_| "<set>"))
            .field("token_lifetime", &self.token_lifetime)
            .field("issuer", &self.issuer)
            .field("max_failed_logins", &self.max_failed_logins)
            .field("max_failed_logins_total", &self.max_failed_logins_total)
            .field("login_concurrency", &self.login_concurrency)
            .field("trusted_proxies", &self.trusted_proxies)
            .field("header_name", &self.header_name)
            .field("review_cache_ttl", &self.review_cache_ttl)
            .field("review_cache_entries", &self.review_cache_entries)
            .field("review_concurrency", &self.review_concurrency)
            .field("review_rate", &self.review_rate)
            .field("review_burst", &self.review_burst)
            .field("audiences", &self.audiences)
            .field("namespace_access", &self.namespace_access)
            .finish()
    }
}

impl AuthConfig {
    /// The first problem of `[auth]` serde cannot find, naming its key (one at a time).
    pub(crate) fn first_problem(&self) -> Result<(), ConfigError> {
        let a = self;
        let password = !a.password.as_deref().unwrap_or("").is_empty();
        if a.strategy == AuthStrategy::Login {
            if !password && a.password_hash.is_none() {
                return Err(invalid(
                    "auth.password",
                    "strategy \"login\" needs a password or auth.password_hash (or set auth.strategy = \"anonymous\")",
                ));
            }
            if a.username.is_empty() {
                return Err(invalid("auth.username", "must not be empty"));
            }
        }
        if password && a.password_hash.is_some() {
            return Err(invalid(
                "auth.password_hash",
                "set either auth.password or auth.password_hash, not both",
            ));
        }
        if let Some(hash) = &a.password_hash {
            let phc = argon2::PasswordHash::new(hash)
                .ok()
                .filter(|h| h.algorithm.as_str().starts_with("argon2"))
                .ok_or_else(|| invalid("auth.password_hash", "expected an Argon2 PHC string such as $argon2id$v=19$m=19456,t=2,p=1$...$..."))?;
            let params = argon2::Params::try_from(&phc)
                .map_err(|_| invalid("auth.password_hash", "its Argon2 parameters are invalid"))?;
            if params.m_cost() > MAX_ARGON2_MEMORY_KIB {
                return Err(invalid(
                    "auth.password_hash",
                    format!(
                        "its memory cost m={} KiB is above {MAX_ARGON2_MEMORY_KIB} KiB: every login would allocate that much; hash again with a smaller m (19456 is the suggested value)",
                        params.m_cost()
                    ),
                ));
            }
        }
        if a.login_concurrency == 0 {
            return Err(invalid("auth.login_concurrency", "must be above zero"));
        }
        if a.max_failed_logins_total == 0 {
            return Err(invalid("auth.max_failed_logins_total", "must be above zero"));
        }
        if let Some(bad) = a.trusted_proxies.iter().find(|c| parse_cidr(c).is_none()) {
            return Err(invalid(
                "auth.trusted_proxies",
                format!("{bad:?} is not an address or CIDR such as 10.0.0.0/8 or fd00::/8"),
            ));
        }
        if a.review_cache_entries == 0 || a.review_concurrency == 0 {
            return Err(invalid(
                "auth.review_cache_entries",
                "review_cache_entries and review_concurrency must be above zero",
            ));
        }
        if a.review_rate == 0 || a.review_burst == 0 {
            return Err(invalid(
                "auth.review_rate",
                "review_rate and review_burst must be above zero",
            ));
        }
        if a.audiences.iter().any(String::is_empty) {
            return Err(invalid("auth.audiences", "an audience must not be empty"));
        }
        if let Some(keys) = &a.signing_key {
            let keys = keys.keys();
            if keys.is_empty() || keys.iter().any(|k| k.len() < 32) {
                return Err(invalid(
                    "auth.signing_key",
                    "must be at least 32 bytes long (each key, when a list is given)",
                ));
            }
        }
        if a.token_lifetime.0.is_zero() {
            return Err(invalid("auth.token_lifetime", "must be above zero"));
        }
        if a.issuer.is_empty() {
            return Err(invalid("auth.issuer", "must not be empty"));
        }
        if a.max_failed_logins == 0 {
            return Err(invalid("auth.max_failed_logins", "must be above zero"));
        }
        if warp::http::HeaderName::from_bytes(a.header_name.as_bytes()).is_err() {
            return Err(invalid("auth.header_name", "must be a valid HTTP header name"));
        }
        if a.review_cache_ttl.0.is_zero() {
            return Err(invalid("auth.review_cache_ttl", "must be above zero"));
        }
        if a.namespace_access.verb.is_empty() || a.namespace_access.resource.is_empty() {
            return Err(invalid("auth.namespace_access", "verb and resource must not be empty"));
        }
        Ok(())
    }
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            strategy: AuthStrategy::Login,
            username: "admin".into(),
            password: None,
            password_hash: None,
            signing_key: None,
            token_lifetime: HumanDuration(Duration::from_secs(86_400)),
            issuer: "meshlens".into(),
            max_failed_logins: 5,
            max_failed_logins_total: 100,
            login_concurrency: 2,
            trusted_proxies: Vec::new(),
            header_name: "X-Forwarded-Access-Token".into(),
            review_cache_ttl: HumanDuration(Duration::from_secs(60)),
            review_cache_entries: 10_000,
            review_concurrency: 4,
            review_rate: 10,
            review_burst: 20,
            audiences: Vec::new(),
            namespace_access: NamespaceAccess::default(),
        }
    }
}

/// An address or CIDR of `auth.trusted_proxies` (a bare address is one host).
pub fn parse_cidr(text: &str) -> Option<ipnet::IpNet> {
    let text = text.trim();
    text.parse::<ipnet::IpNet>()
        .ok()
        .or_else(|| text.parse::<std::net::IpAddr>().ok().map(ipnet::IpNet::from))
}
