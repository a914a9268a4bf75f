//! Authentication: HS256 tokens issued by `/token`, HTTP Basic with the configured user.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD, engine::general_purpose::STANDARD};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;
use warp::http::{HeaderMap, header};

use crate::{config::AuthStrategy, error::ApiError, state::AppState};

type HmacSha256 = Hmac<Sha256>;

/// The signing key: configured, or 32 random bytes made at start (tokens then die with the process).
pub fn signing_key(configured: Option<&str>) -> Result<(Vec<u8>, bool), getrandom::Error> {
    match configured {
        Some(k) => Ok((k.as_bytes().to_vec(), false)),
        None => {
            let mut key = vec![0u8; 32];
            getrandom::fill(&mut key)?;
            Ok((key, true))
        }
    }
}

/// Lets the request through, or says why not.
pub fn check(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    if state.config.auth.strategy == AuthStrategy::Anonymous {
        return Ok(());
    }
    match credentials(headers)? {
        Credentials::Bearer(token) => verify_token(&state.signing_key, &token, unix_now()).map(|_| ()),
        Credentials::Basic(user, pass) => check_basic(state, &user, &pass),
    }
}

/// The user a `/token` request authenticated as (Basic credentials only).
pub fn token_user(state: &AppState, headers: &HeaderMap) -> Result<String, ApiError> {
    if state.config.auth.strategy == AuthStrategy::Anonymous {
        return Ok("anonymous".into());
    }
    match credentials(headers)? {
        Credentials::Basic(user, pass) => check_basic(state, &user, &pass).map(|_| user),
        Credentials::Bearer(_) => Err(unauthorized("a token is issued for user and password (HTTP Basic) only")),
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
        .ok_or_else(|| unauthorized("missing credentials: send a Bearer token or HTTP Basic user and password"))?
        .to_str()
        .map_err(|_| unauthorized("malformed Authorization header"))?;
    let (scheme, rest) = value.trim().split_once(' ').ok_or_else(|| unauthorized("malformed Authorization header"))?;
    if scheme.eq_ignore_ascii_case("bearer") {
        return Ok(Credentials::Bearer(rest.trim().to_string()));
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let raw = STANDARD.decode(rest.trim()).map_err(|_| unauthorized("malformed Basic credentials"))?;
        let text = String::from_utf8(raw).map_err(|_| unauthorized("malformed Basic credentials"))?;
        let (user, pass) = text.split_once(':').ok_or_else(|| unauthorized("malformed Basic credentials"))?;
        return Ok(Credentials::Basic(user.to_string(), pass.to_string()));
    }
    Err(unauthorized("unsupported authorization scheme"))
}

fn check_basic(state: &AppState, user: &str, pass: &str) -> Result<(), ApiError> {
    let cfg = &state.config.auth;
    let want_pass = cfg.password.as_deref().unwrap_or("");
    // Compare both fields in constant time; `&` (not `&&`) so timing does not reveal which failed.
    let ok = bool::from(user.as_bytes().ct_eq(cfg.username.as_bytes())) & bool::from(pass.as_bytes().ct_eq(want_pass.as_bytes()));
    if ok && !want_pass.is_empty() { Ok(()) } else { Err(unauthorized("invalid user or password")) }
}

fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// An issued token and its expiry text.
pub struct Issued {
    pub token: String,
    pub expired_at: String,
}

/// Issues an HS256 JWT with claims `username` and `exp`.
pub fn issue(key: &[u8], username: &str, lifetime: Duration, process_start: Instant) -> Issued {
    let now = SystemTime::now();
    let exp_time = now + lifetime;
    let exp = exp_time.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let claims = URL_SAFE_NO_PAD.encode(serde_json::json!({ "username": username, "exp": exp }).to_string());
    let signing_input = format!("{header}.{claims}");
    let sig = URL_SAFE_NO_PAD.encode(sign(key, signing_input.as_bytes()));
    let monotonic = process_start.elapsed() + lifetime;
    Issued { token: format!("{signing_input}.{sig}"), expired_at: go_time_string(exp_time, monotonic) }
}

fn sign(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC accepts keys of any length; new_from_slice cannot fail for it.
    let mut mac = match HmacSha256::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => return Vec::new(),
    };
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// Checks signature, algorithm and expiry; returns the username.
pub fn verify_token(key: &[u8], token: &str, now: i64) -> Result<String, ApiError> {
    let bad = || unauthorized("invalid token");
    let mut parts = token.split('.');
    let (Some(h), Some(c), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let header: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(h).map_err(|_| bad())?).map_err(|_| bad())?;
    // Only HS256: refuses `none` and algorithm-confusion tokens.
    if header.get("alg").and_then(|a| a.as_str()) != Some("HS256") {
        return Err(bad());
    }
    let sig = URL_SAFE_NO_PAD.decode(s).map_err(|_| bad())?;
    let mut mac = HmacSha256::new_from_slice(key).map_err(|_| bad())?;
    mac.update(format!("{h}.{c}").as_bytes());
    mac.verify_slice(&sig).map_err(|_| bad())?;
    let claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(c).map_err(|_| bad())?).map_err(|_| bad())?;
    let exp = claims.get("exp").and_then(|e| e.as_i64()).ok_or_else(bad)?;
    if exp <= now {
        return Err(unauthorized("token expired"));
    }
    claims.get("username").and_then(|u| u.as_str()).map(str::to_string).ok_or_else(bad)
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

    #[test]
    fn issued_tokens_verify_until_they_expire() {
        let t = issue(KEY, "alice", Duration::from_secs(60), Instant::now());
        assert_eq!(verify_token(KEY, &t.token, unix_now()).unwrap(), "alice");
        assert!(verify_token(KEY, &t.token, unix_now() + 61).is_err());
        assert!(verify_token(b"another key another key another k", &t.token, unix_now()).is_err());
    }

    #[test]
    fn tampered_and_unsigned_tokens_are_refused() {
        let t = issue(KEY, "alice", Duration::from_secs(60), Instant::now()).token;
        let parts: Vec<&str> = t.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(br#"{"username":"root","exp":9999999999}"#);
        assert!(verify_token(KEY, &format!("{}.{}.{}", parts[0], forged, parts[2]), unix_now()).is_err());
        let none = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        assert!(verify_token(KEY, &format!("{none}.{}.", parts[1]), unix_now()).is_err());
        assert!(verify_token(KEY, "not-a-token", unix_now()).is_err());
    }

    #[test]
    fn go_time_format() {
        let t = UNIX_EPOCH + Duration::new(1_795_428_245, 123_456_789);
        let s = go_time_string(t, Duration::new(86_400, 1));
        assert_eq!(s, "2026-11-23 10:04:05.123456789 +0000 UTC m=+86400.000000001");
        let whole = go_time_string(UNIX_EPOCH + Duration::from_secs(1_795_428_245), Duration::from_secs(5));
        assert_eq!(whole, "2026-11-23 10:04:05 +0000 UTC m=+5.000000000");
    }
}
