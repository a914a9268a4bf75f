//! Strategies `token` and `header`: the caller's own Kubernetes token, reviewed by the
//! loopback API server (TokenReview), and namespaces that follow its RBAC table
//! (SubjectAccessReview). The real binary on the kube source, the demo mesh's objects and
//! traffic in a real Prometheus.
//!
//! An invisible namespace answers 403 on every operation, whether it exists or not.

// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::InProcess as Meshlens;
use std::{
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use integration_tests::{
    kube_api::{KubeApi, Options, read_fixtures},
    kube_reviews::Reviews,
    prometheus::{PromServer, fixture},
    server::{BUNDLED, Response, basic_auth, plugin_dir, request, workspace_root},
};
use serde_json::{Value, json};

const ALICE: &str = "alice-token";
const BOB: &str = "bob-token";
const ADMIN: &str = "admin-token";
const ARGS: &[&str] = &["--end", "1700000000", "--minutes", "30"];

fn demo() -> Vec<PathBuf> {
    vec![workspace_root().join("config").join("demo")]
}

struct Setup {
    m: Meshlens,
    api: KubeApi,
    reviews: Arc<Reviews>,
    end: i64,
    _prom: PromServer,
}

/// alice may list pods in `bookinfo`, bob in `istio-system`, admin everywhere.
async fn setup(auth: &str, objects: Vec<Value>) -> Setup {
    let reviews = Reviews::new();
    reviews
        .user("alice", ALICE, &["bookinfo"])
        .user("bob", BOB, &["istio-system"])
        .admin("admin", ADMIN);
    let api =
        KubeApi::start(objects, Options { reviews: Some(reviews.clone()), ..Default::default() })
            .await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let auth = auth.to_string();
    let (m, prom, end) = tokio::task::spawn_blocking(move || {
        let f = fixture(ARGS);
        let prom = PromServer::start(&f);
        let plugins = plugin_dir(BUNDLED);
        let cfg = format!(
            "[server]\nport = 0\n[auth]\n{auth}\n[plugins]\ndirs = [{:?}]\n[cluster]\nsource = \"kube\"\nkubeconfig = {kubeconfig:?}\n\
             [metrics]\nbackend = \"prometheus\"\n[metrics.prometheus]\nurl = {:?}\n",
            plugins.path(),
            prom.url()
        );
        let m = Meshlens::start(&cfg, &[], vec![plugins, dir]).unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"));
        (m, prom, f.end())
    })
    .await
    .unwrap();
    Setup { m, api, reviews, end, _prom: prom }
}

impl Setup {
    async fn get(&self, path: &str, headers: &[(&str, &str)]) -> Response {
        let addr = self.m.addr.clone();
        let path = path.to_string();
        let headers: Vec<(String, String)> =
            headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        tokio::task::spawn_blocking(move || {
            let h: Vec<(&str, &str)> =
                headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            integration_tests::server::request(&addr, "GET", &path, &h)
        })
        .await
        .unwrap()
    }

    async fn as_user(&self, token: &str, path: &str) -> Response {
        self.get(path, &[("Authorization", &format!("Bearer {token}"))]).await
    }

    /// Asks up to 40 times, 100 ms apart, until the answer is `want`; the last status.
    async fn poll(&self, token: &str, path: &str, want: u16) -> u16 {
        let mut status = 0;
        for _ in 0..40 {
            status = self.as_user(token, path).await.status;
            if status == want {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        status
    }

    async fn namespaces(&self, token: &str) -> Vec<String> {
        let r = self.as_user(token, "/api/namespaces").await;
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["name"].as_str().unwrap().to_string())
            .collect()
    }
}

/// Every operation that takes a namespace, with names that exist in the demo's `ns`.
fn operations(ns: &str, end: i64) -> Vec<String> {
    let (app, wl, svc) = if ns == "bookinfo" {
        ("reviews", "reviews-v1", "reviews")
    } else {
        ("istio-ingressgateway", "istio-ingressgateway", "istio-ingressgateway")
    };
    let t = format!("queryTime={end}&duration=600s");
    [
        format!("/namespaces/{ns}/apps"),
        format!("/namespaces/{ns}/apps/{app}"),
        format!("/namespaces/{ns}/workloads"),
        format!("/namespaces/{ns}/workloads/{wl}"),
        format!("/namespaces/{ns}/mesh"),
        format!("/namespaces/{ns}/mesh_validations"),
        format!("/namespaces/{ns}/services/{svc}/mesh_validations"),
        format!("/namespaces/{ns}/mesh/virtualservices/{app}/mesh_validations"),
        format!("/namespaces/{ns}/health?queryTime={end}"),
        format!("/namespaces/{ns}/apps/{app}/health"),
        format!("/namespaces/{ns}/services/{svc}/health"),
        format!("/namespaces/{ns}/workloads/{wl}/health"),
        format!("/namespaces/{ns}/metrics?queryTime={end}"),
        format!("/namespaces/{ns}/apps/{app}/dashboard?queryTime={end}"),
        format!("/namespaces/{ns}/apps/{app}/customdashboard/envoy?queryTime={end}"),
        format!("/namespaces/graph?namespaces={ns}&{t}"),
        format!("/namespaces/{ns}/applications/{app}/graph?{t}"),
        format!("/namespaces/{ns}/applications/{app}/versions/v1/graph?{t}"),
        format!("/namespaces/{ns}/services/{svc}/graph?{t}"),
        format!("/namespaces/{ns}/workloads/{wl}/graph?{t}"),
    ]
    .into_iter()
    .collect()
}

fn assert_forbidden(r: &Response, what: &str) {
    assert_eq!(r.status, 403, "{what}: {}", r.text());
    let body = r.json();
    assert_eq!(body["code"], 403, "{what}: {body}");
    assert!(body["message"].as_str().is_some_and(|m| m.contains("may not see")), "{what}: {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_see_only_their_namespaces_on_every_operation() {
    let s = setup("strategy = \"token\"", read_fixtures(&demo())).await;
    let st = s.get("/api/status", &[]).await.json();
    assert_eq!(st["status"]["authStrategy"], "token");

    assert_eq!(s.namespaces(ALICE).await, vec!["bookinfo"]);
    assert_eq!(s.namespaces(BOB).await, vec!["istio-system"]);
    let mut all = s.namespaces(ADMIN).await;
    all.sort();
    assert_eq!(all, vec!["bookinfo", "istio-system"]);

    for (me, mine, theirs) in
        [(ALICE, "bookinfo", "istio-system"), (BOB, "istio-system", "bookinfo")]
    {
        for (own, other) in operations(mine, s.end).iter().zip(operations(theirs, s.end)) {
            for prefix in ["/api", ""] {
                let r = s.as_user(me, &format!("{prefix}{other}")).await;
                assert_forbidden(&r, &format!("{me} {other}"));
            }
            let r = s.as_user(me, &format!("/api{own}")).await;
            // Own namespace: answered (404 for a name the demo lacks, 400 for metrics before the
            // namespace's creation), never 403.
            assert!(matches!(r.status, 200 | 400 | 404), "{me} {own}: {} {}", r.status, r.text());
        }
        // A namespace that does not exist: the same 403, so existence is not revealed.
        assert_forbidden(
            &s.as_user(me, "/api/namespaces/no-such-namespace/apps").await,
            "missing namespace",
        );
    }
    for op in ["apps", "workloads", "health", "mesh_validations", "mesh"] {
        let r =
            s.as_user(ALICE, &format!("/api/namespaces/bookinfo/{op}?queryTime={}", s.end)).await;
        assert_eq!(r.status, 200, "alice {op}: {}", r.text());
    }

    // A graph of several namespaces is refused whole when one is invisible.
    let both = format!(
        "/api/namespaces/graph?namespaces=bookinfo,istio-system&queryTime={}&duration=600s",
        s.end
    );
    assert_forbidden(&s.as_user(ALICE, &both).await, "two-namespace graph");
    assert_eq!(s.as_user(ADMIN, &both).await.status, 200);

    // bookinfo's graph: the ingress gateway (istio-system) is a traffic end. alice sees its
    // name only; the admin sees its traffic.
    let graph = format!(
        "/api/namespaces/graph?namespaces=bookinfo&graphType=workload&queryTime={}&duration=600s",
        s.end
    );
    let gateway = |g: &Value| -> Value {
        g["elements"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["data"].clone())
            .find(|d| d["namespace"] == "istio-system" && d["workload"] == "istio-ingressgateway")
            .unwrap_or_else(|| panic!("no gateway node in {g}"))
    };
    let full = gateway(&s.as_user(ADMIN, &graph).await.json());
    assert!(full.get("traffic").is_some(), "the admin sees the gateway's traffic: {full}");
    assert!(full.get("isInaccessible").is_none(), "{full}");
    let bare = gateway(&s.as_user(ALICE, &graph).await.json());
    assert_eq!(bare["isInaccessible"], true, "{bare}");
    assert_eq!(bare["isOutside"], true, "{bare}");
    let mut keys: Vec<&str> = bare.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    for k in keys {
        assert!(
            matches!(
                k,
                "id" | "nodeType"
                    | "cluster"
                    | "namespace"
                    | "workload"
                    | "app"
                    | "version"
                    | "service"
                    | "isInaccessible"
                    | "isOutside"
                    | "isRoot"
                    | "parent"
            ),
            "alice sees more than the name of an invisible node: {k} in {bare}"
        );
    }
    assert_eq!(bare["app"], full["app"], "the names stay");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_expired_and_revoked_credentials() {
    let s = setup(
        "strategy = \"token\"\nreview_cache_ttl = \"1s\"\ntoken_lifetime = \"2s\"",
        read_fixtures(&demo()),
    )
    .await;
    for creds in [
        vec![("Authorization", "Bearer no-such-token")],
        vec![],
        vec![("Authorization", "Basic YWRtaW46YWRtaW4=")],
    ] {
        let r = s.get("/api/namespaces", &creds).await;
        assert_eq!(r.status, 401, "{creds:?}: {}", r.text());
        assert_eq!(r.json()["code"], 401);
        assert!(r.header("www-authenticate").is_some());
    }

    // /token exchanges a Kubernetes token for a session token that carries the user.
    let r = s.as_user(ALICE, "/api/token").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let session = r.json()["token"].as_str().unwrap().to_string();
    let reviewed = s.reviews.token_reviews();
    assert_eq!(s.namespaces(&session).await, vec!["bookinfo"]);
    assert_eq!(s.reviews.token_reviews(), reviewed, "a session token needs no TokenReview");
    assert_eq!(s.as_user(BOB, "/api/token").await.status, 200);
    assert_eq!(s.as_user("no-such-token", "/api/token").await.status, 401);

    // A revoked right takes effect within the cache TTL (1 s here).
    assert_eq!(s.as_user(ALICE, "/api/namespaces/bookinfo/apps").await.status, 200);
    s.reviews.revoke("alice", "bookinfo");
    let status = s.poll(ALICE, "/api/namespaces/bookinfo/apps", 403).await;
    assert_eq!(status, 403, "the revoked right was still honoured after 4 s");
    assert!(s.namespaces(ALICE).await.is_empty());
    s.reviews.grant("alice", "bookinfo");

    // An expired Kubernetes token: 401 once the cached review has expired.
    s.reviews.expire_token(BOB);
    let status = s.poll(BOB, "/api/namespaces", 401).await;
    assert_eq!(status, 401, "an expired token was still accepted after 4 s");

    // An expired session token (lifetime 2 s): 401, and no TokenReview is asked.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let reviewed = s.reviews.token_reviews();
    let r = s.as_user(&session, "/api/namespaces").await;
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(r.json()["message"].as_str().unwrap().contains("expired"));
    assert_eq!(s.reviews.token_reviews(), reviewed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_strategy_reads_the_configured_header_only() {
    let s = setup(
        "strategy = \"header\"\nheader_name = \"X-Auth-Request-Access-Token\"",
        read_fixtures(&demo()),
    )
    .await;
    assert_eq!(s.get("/api/status", &[]).await.json()["status"]["authStrategy"], "header");
    let r = s.get("/api/namespaces", &[("X-Auth-Request-Access-Token", ALICE)]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json(),
        json!([{"name": "bookinfo", "creationTimestamp": r.json()[0]["creationTimestamp"], "isAmbient": false, "cluster": "Kubernetes"}])
    );
    assert_forbidden(
        &s.get("/api/namespaces/istio-system/apps", &[("X-Auth-Request-Access-Token", ALICE)])
            .await,
        "header",
    );
    for creds in [
        vec![],
        vec![("Authorization", format!("Bearer {ALICE}"))],
        vec![("X-Forwarded-Access-Token", ALICE.to_string())],
    ] {
        let h: Vec<(&str, &str)> = creds.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = s.get("/api/namespaces", &h).await;
        assert_eq!(r.status, 401, "{creds:?}: {}", r.text());
    }
    drop(s.api);
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_review_cache_bounds_reviews_for_repeated_large_graphs() {
    let names: Vec<String> = (0..200).map(|i| format!("team-{i:03}")).collect();
    let mut objects = read_fixtures(&demo());
    objects.extend(names.iter().map(|n| namespace(n)));
    let s = setup("strategy = \"token\"", objects).await;
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    s.reviews.user("carol", "carol-token", &refs);
    let graph = format!(
        "/api/namespaces/graph?namespaces={}&queryTime={}&duration=600s",
        names.join(","),
        s.end
    );
    for round in 0..5 {
        let r = s.as_user("carol-token", &graph).await;
        assert_eq!(r.status, 200, "round {round}: {}", r.text());
        // One namespace-less review (is carol allowed everywhere? no), then one per namespace.
        assert_eq!(s.reviews.access_reviews(), 1 + 200, "after round {round}");
    }
    assert_eq!(s.reviews.token_reviews(), 1);
    assert_eq!(s.namespaces("carol-token").await.len(), 200);
    // The list reuses the cached decisions: only the demo's two namespaces are new.
    assert_eq!(s.reviews.access_reviews(), 201 + 2);

    // A user allowed everywhere costs one review, not one per namespace.
    let before = s.reviews.access_reviews();
    assert_eq!(s.as_user(ADMIN, &graph).await.status, 200);
    assert_eq!(s.as_user(ADMIN, &graph).await.status, 200);
    assert_eq!(s.reviews.access_reviews() - before, 1);
}

#[test]
fn token_strategies_are_refused_with_a_snapshot() {
    let plugins = tempfile::tempdir().unwrap();
    for strategy in ["token", "header"] {
        let cfg = format!(
            "[server]\nport = 0\n[auth]\nstrategy = \"{strategy}\"\n[plugins]\ndirs = [{:?}]\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n",
            plugins.path()
        );
        let err = Meshlens::start(&cfg, &[], vec![]).err().expect("does not start");
        assert!(
            err.stderr.contains("auth.strategy") && err.stderr.contains("needs cluster.source"),
            "{}",
            err.stderr
        );
    }
}

fn claims(token: &str) -> Value {
    let part = token.split('.').nth(1).expect("a JWT");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).expect("base64url")).expect("JSON")
}

/// Unseen bearer strings are anyone's to send: public routes never review them, and on
/// protected routes the reviews are rate-limited (defaults: 10 a second, 20 at once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_tokens_cost_a_bounded_number_of_reviews() {
    let s = setup("strategy = \"token\"", read_fixtures(&demo())).await;
    for i in 0..50 {
        let r = s.as_user(&format!("junk-on-status-{i}"), "/api/status").await;
        assert_eq!(r.status, 200, "{}", r.text());
    }
    assert_eq!(s.reviews.token_reviews(), 0, "a public route sent a TokenReview");

    // 200 junk tokens sent over 2 s (one every 10 ms, whether or not answers have come).
    integration_tests::server::install_crypto_provider();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let started = Instant::now();
    let sends = (0..200u64).map(|i| {
        let (client, url) = (client.clone(), format!("http://{}/api/namespaces", s.m.addr));
        async move {
            tokio::time::sleep_until((started + Duration::from_millis(10 * i)).into()).await;
            let token = format!("junk-{i}");
            let r = client.get(&url).bearer_auth(&token).send().await.expect("answered");
            let status = r.status().as_u16();
            let headers = r
                .headers()
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                .collect();
            let body = r.bytes().await.expect("body").to_vec();
            (token, Response { status, headers, body }, started.elapsed())
        }
    });
    let sent = futures::future::join_all(sends).await;
    let last_sent = sent.iter().map(|(_, _, t)| *t).max().unwrap_or_default();
    let answers: Vec<(String, Response)> = sent.into_iter().map(|(t, r, _)| (t, r)).collect();
    let took = started.elapsed();
    let reviews = s.reviews.token_reviews();
    eprintln!(
        "200 junk tokens sent over 2 s, all answered after {took:?} (last {last_sent:?}): {reviews} TokenReviews"
    );
    assert!(reviews <= 50, "{reviews} TokenReviews for 200 junk tokens");
    assert!(answers.iter().all(|(_, r)| matches!(r.status, 401 | 429)), "only 401 and 429");
    let limited: Vec<&Response> =
        answers.iter().map(|(_, r)| r).filter(|r| r.status == 429).collect();
    assert!(!limited.is_empty(), "no 429 for 200 unseen tokens");
    for r in limited {
        assert_eq!(r.json()["code"], 429);
        let wait: u64 = r.header("retry-after").expect("Retry-After").parse().unwrap();
        assert!((1..=10).contains(&wait), "{wait}");
    }
    // A token already known to be bad answers 401 at once, without a review, budget or not.
    let (known, _) = answers.iter().find(|(_, r)| r.status == 401).expect("some were reviewed");
    let before = s.reviews.token_reviews();
    assert_eq!(s.as_user(known, "/api/namespaces").await.status, 401);
    assert_eq!(s.reviews.token_reviews(), before);
    // Once the budget refills, a real user gets in.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(s.namespaces(ALICE).await, vec!["bookinfo"]);
}

/// A session token stands for its Kubernetes token: it ends when that token's `exp` does,
/// and once the cached review is older than `review_cache_ttl` the token is reviewed again,
/// so a revoked token ends its sessions within that time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_kubernetes_token_ends_its_session_tokens_within_the_cache_ttl() {
    let s = setup("strategy = \"token\"\nreview_cache_ttl = \"2s\"", read_fixtures(&demo())).await;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let exp = now + 600;
    let payload = URL_SAFE_NO_PAD
        .encode(format!(r#"{{"exp":{exp},"sub":"system:serviceaccount:bookinfo:reader"}}"#));
    let kube = format!("eyJhbGciOiJSUzI1NiJ9.{payload}.c2lnbmF0dXJl");
    s.reviews.user("reader", &kube, &["bookinfo"]);
    let r = s.as_user(&kube, "/api/token").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let session = r.json()["token"].as_str().unwrap().to_string();
    let c = claims(&session);
    assert!(c["exp"].as_u64().unwrap() <= exp, "the session outlives the Kubernetes token: {c}");
    assert_eq!(c["strategy"], "token");
    assert_eq!(c["ktd"].as_str().map(str::len), Some(43), "a SHA-256 digest: {c}");
    assert!(!session.contains(&payload), "the Kubernetes token is not readable in it");
    assert_eq!(s.namespaces(&session).await, vec!["bookinfo"]);

    s.reviews.expire_token(&kube);
    let revoked = Instant::now();
    let mut status = 200;
    while revoked.elapsed() < Duration::from_secs(8) {
        status = s.as_user(&session, "/api/namespaces").await.status;
        if status == 401 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let took = revoked.elapsed();
    assert_eq!(status, 401, "the session token of a revoked Kubernetes token still works");
    assert!(took <= Duration::from_secs(5), "401 only after {took:?} (ttl 2 s + 3 s)");
}

/// Session tokens name their strategy: with the same key and issuer, a `token` session is
/// refused by a `login` server (where it would see everything) and the other way round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_tokens_are_bound_to_their_strategy() {
    const KEY: &str = "one-key-for-both-0123456789abcdef0123456789";
    let s = setup(&format!("strategy = \"token\"\nsigning_key = {KEY:?}"), read_fixtures(&demo()))
        .await;
    let alice = s.as_user(ALICE, "/api/token").await.json()["token"].as_str().unwrap().to_string();
    let login = tokio::task::spawn_blocking(|| {
        let cfg = format!(
            "[server]\nport = 0\n[auth]\npassword = \"pw\"\nsigning_key = {KEY:?}\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n"
        );
        Meshlens::start(&cfg, &[], vec![]).unwrap_or_else(|e| panic!("{e:?}"))
    })
    .await
    .unwrap();
    let addr = login.addr.clone();
    let bearer = format!("Bearer {alice}");
    let r = tokio::task::spawn_blocking(move || {
        let r = request(&addr, "GET", "/api/namespaces", &[("Authorization", &bearer)]);
        let admin =
            request(&addr, "GET", "/api/token", &[("Authorization", &basic_auth("admin", "pw"))]);
        (r, admin)
    })
    .await
    .unwrap();
    assert_eq!(r.0.status, 401, "a token-strategy session opened a login server: {}", r.0.text());
    let admin = r.1.json()["token"].as_str().unwrap().to_string();
    let before = s.reviews.token_reviews();
    let r = s.as_user(&admin, "/api/namespaces").await;
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(
        s.reviews.token_reviews(),
        before,
        "our own token of another strategy is not sent for review"
    );
}

/// The SubjectAccessReview asks about the whole user the TokenReview named (its `extra`
/// too), and `auth.audiences` goes with every TokenReview.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_carry_the_whole_user_and_the_audiences() {
    let s = setup(
        "strategy = \"token\"\naudiences = [\"meshlens.example\", \"https://kubernetes.default.svc\"]",
        read_fixtures(&demo()),
    )
    .await;
    s.reviews.extra("alice", "scopes.example.com", &["read", "mesh"]);
    assert_eq!(s.namespaces(ALICE).await, vec!["bookinfo"]);
    let tokens = s.reviews.token_review_specs();
    assert_eq!(tokens.len(), 1);
    assert_eq!(
        tokens[0]["audiences"],
        json!(["meshlens.example", "https://kubernetes.default.svc"])
    );
    let access = s.reviews.access_review_specs();
    assert!(!access.is_empty());
    for spec in &access {
        assert_eq!(spec["user"], "alice");
        assert_eq!(spec["extra"], json!({"scopes.example.com": ["read", "mesh"]}), "{spec}");
    }
    // An API server that does not say the token is meant for one of the audiences: refused.
    s.reviews.ignore_audiences();
    let r = s.as_user(BOB, "/api/namespaces").await;
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(s.reviews.token_reviews(), 2);
}

/// Ten identical graphs at once ask each access question once: concurrent reviews of the
/// same (user, namespace, verb) are shared, and so is the one TokenReview of the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_identical_graphs_share_access_reviews() {
    let s = setup("strategy = \"token\"", read_fixtures(&demo())).await;
    s.reviews.user("dave", "dave-token", &["bookinfo", "istio-system"]);
    s.reviews.user("erin", "erin-token", &["bookinfo", "istio-system"]);
    s.reviews.set_delay(Duration::from_millis(300));
    let graph = format!(
        "/api/namespaces/graph?namespaces=bookinfo,istio-system&queryTime={}&duration=600s",
        s.end
    );
    // The questions one such graph asks (erin's, alone).
    let before = s.reviews.access_reviews();
    assert_eq!(s.as_user("erin-token", &graph).await.status, 200);
    let questions = s.reviews.access_reviews() - before;
    assert!((2..=6).contains(&questions), "{questions} questions");

    let (tokens, access) = (s.reviews.token_reviews(), s.reviews.access_reviews());
    let answers = futures::future::join_all((0..10).map(|_| s.as_user("dave-token", &graph))).await;
    for r in &answers {
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let sent = s.reviews.access_reviews() - access;
    let token_sent = s.reviews.token_reviews() - tokens;
    eprintln!(
        "10 identical graphs at once: {sent} SubjectAccessReviews ({questions} questions), {token_sent} TokenReviews"
    );
    assert_eq!(token_sent, 1, "one TokenReview for one token");
    assert_eq!(sent, questions, "each question asked once");
    let mut asked: Vec<String> = s
        .reviews
        .access_review_specs()
        .iter()
        .filter(|spec| spec["user"] == "dave")
        .map(|spec| spec["resourceAttributes"].to_string())
        .collect();
    let all = asked.len();
    asked.sort();
    asked.dedup();
    assert_eq!(asked.len(), all, "a question was asked twice");
}
