//! The `Authorization` header: `Bearer <token>` or `Basic <base64 user:password>`.

use base64::{Engine, engine::general_purpose::STANDARD};
use warp::http::{HeaderMap, header};

use crate::error::ApiError;

pub enum Credentials {
    Bearer(String),
    Basic(String, String),
}

fn unauthorized(msg: &str) -> ApiError {
    ApiError::Unauthorized(msg.into())
}

pub fn credentials(headers: &HeaderMap) -> Result<Credentials, ApiError> {
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

/// Property tests of both parsers of untrusted credentials: the `Authorization` header
/// (above) and session tokens (`SessionKeys::verify`). Random and mutated inputs must end
/// in an answer or a clear 401, never a panic. `CASES` per property in the default run;
/// `cargo test -p meshlens --lib auth::parse -- --ignored` runs `LONG_CASES`.
#[cfg(test)]
mod props {
    use std::time::{Duration, Instant};

    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use proptest::prelude::*;
    use warp::http::HeaderValue;

    use super::*;
    use crate::auth::session::{SessionKeys, Subject};

    const CASES: u32 = 4_000;
    const LONG_CASES: u32 = 200_000;
    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn parse(value: &[u8]) -> Option<Result<Credentials, ApiError>> {
        let v = HeaderValue::from_bytes(value).ok()?;
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, v);
        Some(credentials(&h))
    }

    fn refused_clearly(r: &Result<Credentials, ApiError>) -> bool {
        match r {
            Ok(_) => true,
            Err(ApiError::Unauthorized(m)) => !m.is_empty(),
            Err(_) => false,
        }
    }

    /// Header values: random bytes, or a scheme with random, base64 or mutated base64.
    fn header_value() -> impl Strategy<Value = Vec<u8>> {
        let scheme = prop_oneof![
            Just("Basic".to_string()),
            Just("basic".to_string()),
            Just("Bearer".to_string()),
            "[A-Za-z]{0,8}",
        ];
        let pair = (".{0,40}", ".{0,40}").prop_map(|(u, p)| STANDARD.encode(format!("{u}:{p}")));
        let body = prop_oneof![
            pair.clone(),
            any::<Vec<u8>>().prop_map(|b| STANDARD.encode(b)),
            "[ -~]{0,80}",
            (pair, any::<usize>(), any::<u8>()).prop_map(|(mut s, i, b)| {
                if !s.is_empty() {
                    let i = i % s.len();
                    s.replace_range(i..=i, &char::from(b % 128).to_string());
                }
                s
            }),
        ];
        prop_oneof![
            any::<Vec<u8>>(),
            (scheme, " {0,3}", body).prop_map(|(s, sp, b)| format!("{s}{sp}{b}").into_bytes()),
        ]
    }

    /// Session tokens: a real one mutated (a byte flipped, parts swapped or cut), or junk.
    fn token() -> impl Strategy<Value = String> {
        let keys = SessionKeys::new(&[KEY.to_vec()], "meshlens");
        let subject = Subject { name: "alice", strategy: "login", kube_token: Some("k") };
        let real = keys.issue(&subject, Duration::from_secs(60), Instant::now()).map(|i| i.token);
        let real = real.unwrap_or_default();
        let r2 = real.clone();
        prop_oneof![
            "[A-Za-z0-9_.=-]{0,200}",
            (any::<usize>(), any::<u8>()).prop_map(move |(i, b)| {
                let mut bytes = real.clone().into_bytes();
                if !bytes.is_empty() {
                    let i = i % bytes.len();
                    bytes[i] = b;
                }
                String::from_utf8_lossy(&bytes).into_owned()
            }),
            (any::<Vec<u8>>(), any::<Vec<u8>>(), 0..3usize).prop_map(move |(h, c, which)| {
                let mut parts: Vec<String> = r2.split('.').map(str::to_string).collect();
                if parts.len() == 3 {
                    parts[which] = URL_SAFE_NO_PAD.encode(if which == 0 { h } else { c });
                }
                parts.join(".")
            }),
        ]
    }

    fn check_header(value: &[u8]) -> Result<(), TestCaseError> {
        if let Some(r) = parse(value) {
            prop_assert!(refused_clearly(&r));
            if let Ok(Credentials::Basic(user, _)) = &r {
                prop_assert!(!user.contains(':'), "the user ends at the first colon");
            }
        }
        Ok(())
    }

    fn check_token(keys: &SessionKeys, t: &str) -> Result<(), TestCaseError> {
        // A mutated token may still verify only when the mutation left it byte-identical
        // in meaning (base64 padding bits); then it is Alice's own token.
        if let Ok(c) = keys.verify(t) {
            prop_assert_eq!(c.sub, "alice");
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(CASES))]
        #[test]
        fn authorization_headers_never_panic(v in header_value()) { check_header(&v)?; }

        #[test]
        fn basic_credentials_round_trip(u in "[^:]{0,30}", p in ".{0,30}") {
            let v = format!("Basic {}", STANDARD.encode(format!("{u}:{p}")));
            match parse(v.as_bytes()) {
                Some(Ok(Credentials::Basic(a, b))) => { prop_assert_eq!(a, u); prop_assert_eq!(b, p); }
                _ => prop_assert!(false, "a well-formed pair is read back"),
            }
        }

        #[test]
        fn session_tokens_never_panic_nor_verify_when_forged(t in token()) {
            check_token(&SessionKeys::new(&[KEY.to_vec()], "meshlens"), &t)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(LONG_CASES))]
        #[test]
        #[ignore = "long run: LONG_CASES inputs per parser"]
        fn long_authorization_headers(v in header_value()) { check_header(&v)?; }

        #[test]
        #[ignore = "long run: LONG_CASES inputs per parser"]
        fn long_session_tokens(t in token()) {
            check_token(&SessionKeys::new(&[KEY.to_vec()], "meshlens"), &t)?;
        }
    }
}
