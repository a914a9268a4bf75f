//! Strategy `login` under attack: failed logins limited per client address (429 with
//! Retry-After) and in total, counted before the check, at most two password checks at once
//! (RSS read from /proc while 40 run), clients behind trusted proxies, an Argon2
//! `password_hash` and its memory bound, session tokens with `iss`/`aud`/strategy, key
//! rotation with several `signing_key`s, and `Cache-Control: no-store` on `/token`.
//!
//! Served in this process, except where the test measures the service's own memory (RSS of
//! its process).

use std::{
    sync::{
        Barrier,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use integration_tests::{
    from_address::{get_from, peak_rss_kib, rss_kib},
    inprocess::InProcess as Meshlens,
    server::{self, Response, basic_auth},
};
use serde_json::Value;

const KEY_A: &str = "key-a-0123456789abcdef0123456789abcdef";
const KEY_B: &str = "key-b-0123456789abcdef0123456789abcdef";

fn config(auth: &str, plugins: &tempfile::TempDir) -> String {
    format!(
        "[server]\nport = 0\n[auth]\n{auth}\n[plugins]\ndirs = [{:?}]\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n",
        plugins.path()
    )
}

fn start(auth: &str) -> Meshlens {
    let plugins = tempfile::tempdir().unwrap();
    Meshlens::start(&config(auth, &plugins), &[], vec![plugins])
        .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"))
}

/// The binary in a process of its own: for what reads the service's memory.
fn start_process(auth: &str) -> server::Meshlens {
    let plugins = tempfile::tempdir().unwrap();
    server::Meshlens::start(&config(auth, &plugins), &[], vec![plugins])
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

fn local(last: u8) -> std::net::IpAddr {
    std::net::IpAddr::from([127, 0, 0, last])
}

fn basic_from(addr: &str, from: u8, path: &str, pass: &str, extra: &[(&str, &str)]) -> Response {
    let auth = basic_auth("admin", pass);
    let mut h = vec![("Authorization", auth.as_str())];
    h.extend_from_slice(extra);
    get_from(local(from), addr, path, &h).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// 40 parallel wrong logins against an Argon2 hash at the suggested cost (m=19456 KiB each):
/// at most `login_concurrency` (2) checks run at once, the rest answer 429 at once, the
/// failures are counted before the checks, and the process's peak RSS grows by a few checks'
/// memory, not forty.
#[test]
fn parallel_wrong_logins_are_checked_two_at_a_time_in_bounded_memory() {
    use argon2::{PasswordHasher, password_hash::SaltString};
    let salt = SaltString::from_b64("bWVzaGxlbnMtdGVzdC1zYWx0").unwrap();
    // The crate's defaults are the configuration's hint: m=19456, t=2, p=1.
    let phc = argon2::Argon2::default().hash_password(b"right one", &salt).unwrap().to_string();
    assert!(phc.contains("m=19456"), "{phc}");
    let m = start_process(&format!("password_hash = {phc:?}"));
    // One right login first, so the baseline holds whatever a single check leaves behind.
    assert_eq!(basic_from(&m.addr, 3, "/api/namespaces", "right one", &[]).status, 200);
    let pid = m.pid();
    let before = peak_rss_kib(pid).expect("VmHWM");
    let base = rss_kib(pid).expect("VmRSS");

    let done = AtomicBool::new(false);
    let barrier = Barrier::new(40);
    let (answers, sampled) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut top = 0;
            let until = Instant::now() + Duration::from_secs(120);
            while !done.load(Ordering::SeqCst) && Instant::now() < until {
                top = top.max(rss_kib(pid).unwrap_or(0));
                std::thread::sleep(Duration::from_millis(5));
            }
            top
        });
        let workers: Vec<_> = (0..40)
            .map(|i| {
                let (m, barrier) = (&m, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    basic_from(&m.addr, 1, "/api/namespaces", &format!("x{i}"), &[])
                })
            })
            .collect();
        let answers: Vec<Response> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        done.store(true, Ordering::SeqCst);
        (answers, sampler.join().unwrap())
    });
    let count = |code: u16| answers.iter().filter(|r| r.status == code).count();
    let peak = peak_rss_kib(pid).expect("VmHWM");
    let grown = peak.saturating_sub(before.max(base)) / 1024;
    eprintln!(
        "RSS before {} MiB, sampled top {} MiB, peak (VmHWM) {} MiB, growth {grown} MiB; 401: {}, 429: {}",
        base / 1024,
        sampled / 1024,
        peak / 1024,
        count(401),
        count(429)
    );
    assert_eq!(count(401) + count(429), 40, "every one answered 401 or 429");
    assert!(count(401) <= 5, "{} failures checked with max_failed_logins = 5", count(401));
    for r in answers.iter().filter(|r| r.status == 429) {
        assert_eq!(r.json()["code"], 429);
        let wait: u64 = r.header("retry-after").expect("Retry-After").parse().unwrap();
        assert!((1..=60).contains(&wait), "{wait}");
    }
    // Two checks at once are 2 x 19 MiB; forty would be 760 MiB.
    assert!(grown < 100, "peak RSS grew by {grown} MiB during 40 parallel wrong logins");
    assert!(sampled / 1024 < base / 1024 + 100, "sampled RSS {} MiB", sampled / 1024);

    // More wrong guesses lock 127.0.0.1 out (at most five in all), even for the right
    // password; 127.0.0.2 never failed and gets in.
    let mut tried = count(401);
    while basic_from(&m.addr, 1, "/api/namespaces", "again", &[]).status == 401 {
        tried += 1;
        assert!(tried <= 5, "more than five failures checked");
    }
    assert_eq!(basic_from(&m.addr, 1, "/api/namespaces", "right one", &[]).status, 429);
    assert_eq!(basic_from(&m.addr, 2, "/api/namespaces", "right one", &[]).status, 200);
}

/// Strategy `login`, public routes: a password sent to `/status` is never checked, so it
/// neither costs an Argon2 check nor counts as a failure; the details stay hidden.
#[test]
fn public_routes_never_check_a_password() {
    let m = start("password = \"right\"\nmax_failed_logins = 3");
    for i in 0..10 {
        let r = basic_from(&m.addr, 1, "/api/status", &format!("wrong-{i}"), &[]);
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let r = basic_from(&m.addr, 1, "/api/status", "right", &[]);
    assert!(
        r.json()["externalServices"].as_array().unwrap().iter().all(|s| s.get("url").is_none())
    );
    assert_eq!(
        basic_from(&m.addr, 1, "/api/namespaces", "right", &[]).status,
        200,
        "ten passwords sent to /status counted as failed logins"
    );
}

/// Behind a trusted proxy every user shares one peer: the client is the address the proxy
/// names in X-Forwarded-For. A global budget of failures then refuses clients that have
/// failed, never one that has not. X-Forwarded-For from any other peer is ignored.
#[test]
fn trusted_proxies_name_the_client_and_the_global_budget_spares_innocent_clients() {
    let m = start(
        "password = \"right\"\nmax_failed_logins = 2\nmax_failed_logins_total = 4\ntrusted_proxies = [\"127.0.0.1/32\"]",
    );
    fn via(client: &str) -> [(&str, &str); 1] {
        [("X-Forwarded-For", client)]
    }
    let login = |from: u8, client: &str, pass: &str| {
        basic_from(&m.addr, from, "/api/namespaces", pass, &via(client)).status
    };
    // Client A fails twice and is locked out; B, through the same proxy, is not.
    assert_eq!(login(1, "203.0.113.1", "a1"), 401);
    assert_eq!(login(1, "203.0.113.1", "a2"), 401);
    assert_eq!(login(1, "203.0.113.1", "right"), 429);
    assert_eq!(login(1, "203.0.113.2", "right"), 200, "another client behind the same proxy");
    // Two more failures spend the global budget (4 a minute).
    assert_eq!(login(1, "203.0.113.2", "b1"), 401);
    assert_eq!(login(1, "203.0.113.3", "c1"), 401);
    let r = basic_from(&m.addr, 1, "/api/namespaces", "right", &via("203.0.113.2"));
    assert_eq!(r.status, 429, "B has failed and the budget is spent: {}", r.text());
    assert!(r.header("retry-after").is_some());
    assert_eq!(login(1, "203.0.113.4", "right"), 200, "D never failed: its password is checked");
    // A proxy's hops to the right of the client are skipped; the client's own left ones are not believed.
    assert_eq!(login(1, "198.51.100.1, 203.0.113.5, 127.0.0.1", "right"), 200);
    // 127.0.0.2 is no trusted proxy: its X-Forwarded-For is ignored, so a fresh one does not
    // help once it has failed.
    assert_eq!(login(2, "203.0.113.6", "wrong"), 401);
    assert_eq!(login(2, "203.0.113.7", "right"), 429);
}

/// A session token names the strategy that issued it; `anonymous` issues none; a password
/// hash too costly to check refuses to start.
#[test]
fn tokens_name_their_strategy_anonymous_issues_none_and_costly_hashes_refuse_to_start() {
    let m = start("password = \"pw\"");
    assert_eq!(claims(&token(&m, "admin", "pw"))["strategy"], "login");
    let anon = start("strategy = \"anonymous\"");
    let r = anon.get("/api/token");
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["code"], 400);
    assert!(r.json()["message"].as_str().unwrap().contains("anonymous"));
    assert!(r.json().get("token").is_none());

    let costly = "$argon2id$v=19$m=262144,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let err = Meshlens::start(
        &format!("[server]\nport = 0\n[auth]\npassword_hash = {costly:?}\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n"),
        &[],
        vec![],
    )
    .err()
    .expect("a hash above the memory bound does not start");
    assert!(
        err.stderr.contains("auth.password_hash") && err.stderr.contains("65536"),
        "{}",
        err.stderr
    );
}

/// One IPv6 host holds a whole /64: its addresses count as one client (here named by a
/// trusted proxy, since loopback has a single IPv6 address).
#[test]
fn ipv6_clients_are_counted_by_their_64() {
    let m = start(
        "password = \"right\"\nmax_failed_logins = 2\ntrusted_proxies = [\"127.0.0.1\", \"::1\"]",
    );
    let login = |client: &str, pass: &str| {
        basic_from(&m.addr, 1, "/api/namespaces", pass, &[("X-Forwarded-For", client)]).status
    };
    assert_eq!(login("2001:db8:1:2::1", "a"), 401);
    assert_eq!(login("2001:db8:1:2:ffff:ffff:ffff:ffff", "b"), 401);
    assert_eq!(login("2001:db8:1:2:1234::9", "right"), 429, "another address of the same /64");
    assert_eq!(login("2001:db8:1:3::1", "right"), 200, "the next /64 is another client");
}
