//! Strategy `login` under attack: failed logins limited per client address (429 with
//! Retry-After), an Argon2 `password_hash`, session tokens with `iss`/`aud`, key rotation
//! with several `signing_key`s, and `Cache-Control: no-store` on `/token`.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use integration_tests::server::{Meshlens, Response, basic_auth};
use serde_json::Value;

const KEY_A: &str = "key-a-0123456789abcdef0123456789abcdef";
const KEY_B: &str = "key-b-0123456789abcdef0123456789abcdef";

fn start(auth: &str) -> Meshlens {
    let plugins = tempfile::tempdir().unwrap();
    let cfg = format!(
        "[server]\nport = 0\n[auth]\n{auth}\n[plugins]\ndirs = [{:?}]\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n",
        plugins.path()
    );
    Meshlens::start(&cfg, &[], vec![plugins])
        .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"))
}

fn basic(m: &Meshlens, path: &str, user: &str, pass: &str) -> Response {
    m.get_with(path, &[("Authorization", &basic_auth(user, pass))])
}

fn bearer(m: &Meshlens, token: &str) -> Response {
    m.get_with("/api/namespaces", &[("Authorization", &format!("Bearer {token}"))])
}

fn token(m: &Meshlens, user: &str, pass: &str) -> String {
    let r = basic(m, "/api/token", user, pass);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["token"].as_str().unwrap().to_string()
}

fn claims(token: &str) -> Value {
    let part = token.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
}

#[test]
fn failed_logins_are_limited_per_address() {
    let m = start("username = \"admin\"\npassword = \"right-password\"\nmax_failed_logins = 5");
    for i in 0..5 {
        let r = basic(&m, "/api/namespaces", "admin", &format!("guess-{i}"));
        assert_eq!(r.status, 401, "attempt {i}: {}", r.text());
    }
    for path in ["/api/namespaces", "/api/token"] {
        let r = basic(&m, path, "admin", "guess-6");
        assert_eq!(r.status, 429, "{path}: {}", r.text());
        assert_eq!(r.json()["code"], 429);
        let wait: u64 = r.header("retry-after").expect("Retry-After").parse().expect("seconds");
        assert!((1..=60).contains(&wait), "{wait}");
    }
    // Over the limit even the right password waits: guessing gains nothing.
    assert_eq!(basic(&m, "/api/namespaces", "admin", "right-password").status, 429);
    // Session tokens are not logins: a token issued before keeps working.
    let m2 = start("username = \"admin\"\npassword = \"right-password\"\nmax_failed_logins = 2");
    let t = token(&m2, "admin", "right-password");
    for _ in 0..3 {
        basic(&m2, "/api/namespaces", "admin", "nope");
    }
    assert_eq!(basic(&m2, "/api/namespaces", "admin", "right-password").status, 429);
    assert_eq!(bearer(&m2, &t).status, 200);
}

#[test]
fn an_argon2_password_hash_is_accepted() {
    use argon2::{PasswordHasher, password_hash::SaltString};
    let salt = SaltString::from_b64("bWVzaGxlbnMtdGVzdC1zYWx0").unwrap();
    let phc = argon2::Argon2::default().hash_password(b"hashed secret", &salt).unwrap().to_string();
    assert!(phc.starts_with("$argon2id$"));
    let m = start(&format!("username = \"ops\"\npassword_hash = {phc:?}"));
    assert_eq!(basic(&m, "/api/namespaces", "ops", "hashed secret").status, 200);
    assert_eq!(basic(&m, "/api/namespaces", "ops", "hashed secreT").status, 401);
    assert_eq!(
        basic(&m, "/api/namespaces", "ops", &phc).status,
        401,
        "the hash itself is not the password"
    );
    let t = token(&m, "ops", "hashed secret");
    assert_eq!(bearer(&m, &t).status, 200);

    let bad = Meshlens::start(
        "[server]\nport = 0\n[auth]\npassword_hash = \"not-a-phc-string\"\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n",
        &[],
        vec![],
    );
    let err = bad.err().expect("a bad hash does not start");
    assert!(err.stderr.contains("auth.password_hash"), "{}", err.stderr);
}

#[test]
fn tokens_carry_and_require_issuer_and_audience_and_are_never_cached() {
    let m =
        start(&format!("password = \"pw\"\nissuer = \"meshlens-test\"\nsigning_key = {KEY_A:?}"));
    let r = basic(&m, "/api/token", "admin", "pw");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let t = r.json()["token"].as_str().unwrap().to_string();
    let c = claims(&t);
    assert_eq!(c["iss"], "meshlens-test");
    assert_eq!(c["aud"], "meshlens");
    assert_eq!(c["sub"], "admin");
    assert_eq!(bearer(&m, &t).status, 200);
    let refused = basic(&m, "/api/token", "admin", "wrong");
    assert_eq!(refused.status, 401);
    assert_eq!(refused.header("cache-control"), Some("no-store"));
    assert_eq!(m.get("/api/namespaces").header("cache-control"), None, "only /token is marked");

    // Same key, another issuer: its tokens are not ours.
    let other = start(&format!("password = \"pw\"\nsigning_key = {KEY_A:?}"));
    let foreign = token(&other, "admin", "pw");
    assert_eq!(claims(&foreign)["iss"], "meshlens", "the default issuer");
    let r = bearer(&m, &foreign);
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(bearer(&other, &t).status, 401);
}

#[test]
fn several_signing_keys_rotate() {
    let old = start(&format!("password = \"pw\"\nsigning_key = {KEY_B:?}"));
    let rotated = start(&format!("password = \"pw\"\nsigning_key = [{KEY_A:?}, {KEY_B:?}]"));
    let new_only = start(&format!("password = \"pw\"\nsigning_key = [{KEY_A:?}]"));
    let unknown =
        start("password = \"pw\"\nsigning_key = \"key-c-0123456789abcdef0123456789abcdef\"");

    // A token signed with the second key is accepted; the first key signs new ones.
    let from_old = token(&old, "admin", "pw");
    assert_eq!(bearer(&rotated, &from_old).status, 200);
    let from_rotated = token(&rotated, "admin", "pw");
    assert_eq!(bearer(&new_only, &from_rotated).status, 200);
    assert_eq!(
        bearer(&old, &from_rotated).status,
        401,
        "signed with the first key, not the second"
    );
    // An unknown key is refused.
    let r = bearer(&rotated, &token(&unknown, "admin", "pw"));
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["code"], 401);
}
