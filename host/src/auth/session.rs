//! Session tokens: HS256 JWTs with `iss` = `auth.issuer`, `aud` = "meshlens" and the
//! strategy that issued them. The first of `auth.signing_key` signs, every one verifies.
//!
//! A token minted from a Kubernetes token (`token`, `header`) carries that token's SHA-256
//! (`ktd`, the review cache's key) and the token itself encrypted (`ktk`), so that once the
//! cached review expires the next request reviews it again, on any replica with the same
//! keys: a revoked Kubernetes token ends its session tokens too. Kiali keeps the user's
//! token in its session the same way, encrypted (kiali `business/authentication/
//! session_persistor.go`, AES-GCM cookie); here ChaCha20-Poly1305 from `ring`.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, errors::ErrorKind};
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ApiError;

/// `aud` of every session token.
pub const AUDIENCE: &str = "meshlens";

/// The claims of a session token.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Claims {
    pub sub: String,
    /// The same as `sub`, for clients of the reference system's token.
    pub username: String,
    pub iss: String,
    pub aud: String,
    pub exp: u64,
    pub iat: u64,
    /// The `auth.strategy` that issued it; another strategy refuses it.
    #[serde(default)]
    pub strategy: String,
    /// SHA-256 (base64url) of the Kubernetes token it was minted from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ktd: Option<String>,
    /// That Kubernetes token, encrypted: nonce and sealed bytes, base64url.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ktk: Option<String>,
}

#[derive(Debug)]
pub(super) enum VerifyError {
    Expired,
    Invalid,
}

impl VerifyError {
    pub fn into_api(self) -> ApiError {
        match self {
            VerifyError::Expired => ApiError::Unauthorized("token expired".into()),
            VerifyError::Invalid => ApiError::Unauthorized("invalid token".into()),
        }
    }
}

/// Signing and verifying keys of session tokens, and the keys that seal Kubernetes tokens.
pub(super) struct SessionKeys {
    signing: EncodingKey,
    verifying: Vec<DecodingKey>,
    /// One per signing key, derived from it; the first seals, every one opens.
    sealing: Vec<LessSafeKey>,
    validation: Validation,
    issuer: String,
}

/// What a session token is issued for.
pub(super) struct Subject<'a> {
    pub name: &'a str,
    pub strategy: &'static str,
    /// The Kubernetes token it stands for (`token`, `header`).
    pub kube_token: Option<&'a str>,
}

impl SessionKeys {
    pub fn new(keys: &[Vec<u8>], issuer: &str) -> SessionKeys {
        // Only HS256: refuses `none` and algorithm-confusion tokens.
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = 0;
        SessionKeys {
            signing: EncodingKey::from_secret(keys.first().map(Vec::as_slice).unwrap_or_default()),
            verifying: keys.iter().map(|k| DecodingKey::from_secret(k)).collect(),
            sealing: keys.iter().filter_map(|k| sealing_key(k)).collect(),
            validation,
            issuer: issuer.to_string(),
        }
    }

    /// A token for `subject`, valid for `lifetime` but never past the Kubernetes token's
    /// own `exp` (when it is a JWT that names one).
    pub fn issue(
        &self,
        subject: &Subject<'_>,
        lifetime: Duration,
        process_start: Instant,
    ) -> Result<Issued, ApiError> {
        let now = SystemTime::now();
        let secs = |t: SystemTime| t.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let mut exp_time = now + lifetime;
        let (mut ktd, mut ktk) = (None, None);
        if let Some(kube) = subject.kube_token {
            if let Some(kube_exp) = jwt_expiry(kube) {
                let kube_exp = UNIX_EPOCH + Duration::from_secs(kube_exp);
                if kube_exp <= now {
                    return Err(ApiError::Unauthorized("the Kubernetes token has expired".into()));
                }
                exp_time = exp_time.min(kube_exp);
            }
            ktd = Some(URL_SAFE_NO_PAD.encode(token_digest(kube)));
            ktk = Some(self.seal(kube)?);
        }
        let claims = Claims {
            sub: subject.name.to_string(),
            username: subject.name.to_string(),
            iss: self.issuer.clone(),
            aud: AUDIENCE.to_string(),
            exp: secs(exp_time),
            iat: secs(now),
            strategy: subject.strategy.to_string(),
            ktd,
            ktk,
        };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.signing)
            .map_err(|e| ApiError::internal(format!("cannot sign the token: {e}")))?;
        let left = exp_time.duration_since(now).unwrap_or_default();
        Ok(Issued { token, expired_at: go_time_string(exp_time, process_start.elapsed() + left) })
    }

    /// Checks algorithm, signature (against every key), `exp`, `iss` and `aud`.
    pub fn verify(&self, token: &str) -> Result<Claims, VerifyError> {
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

    fn seal(&self, secret: &str) -> Result<String, ApiError> {
        let key = self.sealing.first().ok_or_else(|| ApiError::internal("no sealing key"))?;
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|e| ApiError::internal(format!("no random: {e}")))?;
        let mut data = secret.as_bytes().to_vec();
        key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut data)
            .map_err(|_| ApiError::internal("cannot seal the token"))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        Ok(URL_SAFE_NO_PAD.encode(out))
    }

    /// The Kubernetes token in `ktk`, when one of the keys opens it.
    pub fn open(&self, sealed: &str) -> Option<String> {
        let raw = URL_SAFE_NO_PAD.decode(sealed).ok()?;
        if raw.len() < NONCE_LEN {
            return None;
        }
        let (nonce, body) = raw.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().ok()?;
        self.sealing.iter().find_map(|key| {
            let mut data = body.to_vec();
            let plain = key
                .open_in_place(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut data)
                .ok()?;
            String::from_utf8(plain.to_vec()).ok()
        })
    }
}

/// The review cache's key of a Kubernetes token.
pub fn token_digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

// A key for sealing, derived from a signing key (never the signing key itself).
fn sealing_key(signing: &[u8]) -> Option<LessSafeKey> {
    let mut h = Sha256::new();
    h.update(b"meshlens: seal the Kubernetes token of a session token\0");
    h.update(signing);
    let bytes: [u8; 32] = h.finalize().into();
    UnboundKey::new(&CHACHA20_POLY1305, &bytes).ok().map(LessSafeKey::new)
}

/// `exp` of a JWT, read without verifying it (the TokenReview vouched for the token).
pub fn jwt_expiry(token: &str) -> Option<u64> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || payload.len() > 16 * 1024 {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("exp")?.as_u64()
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
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    fn subj(name: &str) -> Subject<'_> {
        Subject { name, strategy: "login", kube_token: None }
    }

    #[test]
    fn issued_tokens_carry_iss_and_aud_and_verify_until_they_expire() {
        let k = keys(&[KEY], "meshlens");
        let t = k.issue(&subj("alice"), Duration::from_secs(60), Instant::now()).unwrap();
        let c = claims_of(&t.token);
        assert_eq!(
            (c["iss"].as_str(), c["aud"].as_str(), c["sub"].as_str()),
            (Some("meshlens"), Some("meshlens"), Some("alice"))
        );
        assert_eq!(k.verify(&t.token).unwrap().sub, "alice");
        let gone = k.issue(&subj("alice"), Duration::ZERO, Instant::now()).unwrap();
        std::thread::sleep(Duration::from_millis(1100));
        assert!(matches!(k.verify(&gone.token), Err(VerifyError::Expired)));
    }

    #[test]
    fn every_configured_key_verifies_and_the_first_signs() {
        let old = keys(&[OLD], "meshlens")
            .issue(&subj("bob"), Duration::from_secs(60), Instant::now())
            .unwrap();
        let rotated = keys(&[KEY, OLD], "meshlens");
        assert_eq!(rotated.verify(&old.token).unwrap().sub, "bob");
        let new = rotated.issue(&subj("bob"), Duration::from_secs(60), Instant::now()).unwrap();
        assert!(keys(&[KEY], "meshlens").verify(&new.token).is_ok(), "the first key signs");
        assert!(matches!(
            keys(&[b"a third key that nobody configured!!"], "meshlens").verify(&old.token),
            Err(VerifyError::Invalid)
        ));
    }

    #[test]
    fn tokens_of_another_issuer_or_audience_or_without_them_are_refused() {
        let other = keys(&[KEY], "someone-else")
            .issue(&subj("eve"), Duration::from_secs(60), Instant::now())
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
        let t = k.issue(&subj("alice"), Duration::from_secs(60), Instant::now()).unwrap().token;
        let parts: Vec<&str> = t.split('.').collect();
        let forged = URL_SAFE_NO_PAD
            .encode(br#"{"sub":"root","username":"root","iss":"meshlens","aud":"meshlens","exp":9999999999,"iat":0}"#);
        assert!(k.verify(&format!("{}.{}.{}", parts[0], forged, parts[2])).is_err());
        let none = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        assert!(k.verify(&format!("{none}.{}.", parts[1])).is_err());
        assert!(k.verify("not-a-token").is_err());
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

    #[test]
    fn kube_tokens_are_sealed_digested_and_cap_the_lifetime() {
        let k = keys(&[KEY], "meshlens");
        let jwt = |exp: u64| {
            let payload = URL_SAFE_NO_PAD.encode(format!(r#"{{"exp":{exp},"sub":"sa"}}"#));
            format!("eyJhbGciOiJSUzI1NiJ9.{payload}.c2ln")
        };
        let exp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 30;
        let kube = jwt(exp);
        let s = Subject { name: "alice", strategy: "token", kube_token: Some(&kube) };
        let c = k
            .verify(&k.issue(&s, Duration::from_secs(86_400), Instant::now()).unwrap().token)
            .unwrap();
        assert_eq!(c.exp, exp, "never past the Kubernetes token's expiry");
        assert_eq!(c.strategy, "token");
        assert_eq!(c.ktd, Some(URL_SAFE_NO_PAD.encode(token_digest(&kube))));
        let sealed = c.ktk.unwrap();
        assert!(!sealed.contains(&kube[20..40]), "the token is not readable in the claims");
        assert_eq!(k.open(&sealed).as_deref(), Some(kube.as_str()));
        // Rotation: a list holding the key still opens it; another key or tampering does not.
        assert_eq!(keys(&[OLD, KEY], "meshlens").open(&sealed).as_deref(), Some(kube.as_str()));
        assert_eq!(keys(&[OLD], "meshlens").open(&sealed), None);
        let mut raw = URL_SAFE_NO_PAD.decode(&sealed).unwrap();
        let last = raw.len() - 1;
        raw[last] ^= 1;
        assert_eq!(k.open(&URL_SAFE_NO_PAD.encode(raw)), None);
        // An opaque token: the configured lifetime; an expired JWT: refused.
        let opaque = Subject { name: "bob", strategy: "token", kube_token: Some("opaque") };
        let t = k.issue(&opaque, Duration::from_secs(60), Instant::now()).unwrap();
        assert!(k.verify(&t.token).unwrap().exp > exp);
        let old = jwt(exp - 60);
        let gone = Subject { name: "bob", strategy: "token", kube_token: Some(&old) };
        assert!(k.issue(&gone, Duration::from_secs(60), Instant::now()).is_err());
    }
}
