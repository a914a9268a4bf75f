//! TokenReview and SubjectAccessReview for the loopback Kubernetes API
//! ([`crate::kube_api`]): a small table of users, their tokens and the namespaces each may
//! `list pods` in, and counters of the reviews served (what the review-cache tests check).
//!
//! Hand a [`Reviews`] to [`crate::kube_api::Options::reviews`]; change it while the server
//! runs (grant, revoke, expire a token) and the next review sees the change.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use warp::{Filter, http::StatusCode};

#[derive(Clone, Debug)]
struct User {
    name: String,
    groups: Vec<String>,
    tokens: Vec<String>,
    namespaces: BTreeSet<String>,
    /// May list pods in every namespace (a namespace-less review says yes).
    everywhere: bool,
    /// The authenticator's extra attributes, named in the TokenReview's answer.
    extra: BTreeMap<String, Vec<String>>,
}

/// The users, tokens and rights the server answers reviews from.
#[derive(Debug, Default)]
pub struct Reviews {
    users: Mutex<Vec<User>>,
    token_reviews: AtomicUsize,
    access_reviews: AtomicUsize,
    /// The `(verb, resource)` a right grants; others are denied. Default `list` `pods`.
    access: Mutex<Option<(String, String)>>,
    /// How long each review takes to answer (a slow or distant API server).
    delay: Mutex<Duration>,
    /// Answers TokenReviews without naming audiences (an authenticator unaware of them).
    audience_unaware: std::sync::atomic::AtomicBool,
    /// The `spec` of every review asked, in order.
    token_specs: Mutex<Vec<Value>>,
    access_specs: Mutex<Vec<Value>>,
}

impl Reviews {
    /// An empty table.
    pub fn new() -> Arc<Reviews> {
        Arc::new(Reviews::default())
    }

    /// Adds a user with one token who may list pods in `namespaces`.
    pub fn user(&self, name: &str, token: &str, namespaces: &[&str]) -> &Self {
        self.users.lock().unwrap().push(User {
            name: name.into(),
            groups: vec!["system:authenticated".into()],
            tokens: vec![token.into()],
            namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
            everywhere: false,
            extra: BTreeMap::new(),
        });
        self
    }

    /// Adds a user who may list pods in every namespace.
    pub fn admin(&self, name: &str, token: &str) -> &Self {
        self.user(name, token, &[]);
        if let Some(u) = self.users.lock().unwrap().last_mut() {
            u.everywhere = true;
        }
        self
    }

    /// Gives `user` an extra attribute (as an OIDC authenticator names scopes).
    pub fn extra(&self, user: &str, key: &str, values: &[&str]) {
        for u in self.users.lock().unwrap().iter_mut().filter(|u| u.name == user) {
            u.extra.insert(key.into(), values.iter().map(|v| v.to_string()).collect());
        }
    }

    /// From now on TokenReview answers name no audiences, whatever was asked.
    pub fn ignore_audiences(&self) {
        self.audience_unaware.store(true, Ordering::SeqCst);
    }

    /// Makes every review take `delay` to answer from now on.
    pub fn set_delay(&self, delay: Duration) {
        *self.delay.lock().unwrap() = delay;
    }

    /// The `spec` of every TokenReview asked so far.
    pub fn token_review_specs(&self) -> Vec<Value> {
        self.token_specs.lock().unwrap().clone()
    }

    /// The `spec` of every SubjectAccessReview asked so far.
    pub fn access_review_specs(&self) -> Vec<Value> {
        self.access_specs.lock().unwrap().clone()
    }

    /// The right that a table entry stands for (verb, resource); default `list` `pods`.
    pub fn grants(&self, verb: &str, resource: &str) {
        *self.access.lock().unwrap() = Some((verb.into(), resource.into()));
    }

    /// Lets `user` list pods in `namespace` from now on.
    pub fn grant(&self, user: &str, namespace: &str) {
        for u in self.users.lock().unwrap().iter_mut().filter(|u| u.name == user) {
            u.namespaces.insert(namespace.into());
        }
    }

    /// Takes the right to list pods in `namespace` from `user`.
    pub fn revoke(&self, user: &str, namespace: &str) {
        for u in self.users.lock().unwrap().iter_mut().filter(|u| u.name == user) {
            u.namespaces.remove(namespace);
        }
    }

    /// Makes a token unknown (as when it expires or is deleted).
    pub fn expire_token(&self, token: &str) {
        for u in self.users.lock().unwrap().iter_mut() {
            u.tokens.retain(|t| t != token);
        }
    }

    /// TokenReviews answered so far.
    pub fn token_reviews(&self) -> usize {
        self.token_reviews.load(Ordering::SeqCst)
    }

    /// SubjectAccessReviews answered so far.
    pub fn access_reviews(&self) -> usize {
        self.access_reviews.load(Ordering::SeqCst)
    }

    fn token_review(&self, body: &Value) -> Value {
        self.token_reviews.fetch_add(1, Ordering::SeqCst);
        self.token_specs.lock().unwrap().push(body["spec"].clone());
        let token = body.pointer("/spec/token").and_then(Value::as_str).unwrap_or("");
        let users = self.users.lock().unwrap();
        let status = match users
            .iter()
            .find(|u| !token.is_empty() && u.tokens.iter().any(|t| t == token))
        {
            // An audience-aware authenticator: it names the audiences asked for.
            Some(u) => {
                json!({"authenticated": true, "user": {"username": u.name, "uid": format!("uid-{}", u.name), "groups": u.groups, "extra": u.extra},
                       "audiences": if self.audience_unaware.load(Ordering::SeqCst) { json!([]) } else { body.pointer("/spec/audiences").cloned().unwrap_or(json!([])) }})
            }
            None => json!({"authenticated": false, "error": "invalid bearer token"}),
        };
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {}, "spec": body["spec"], "status": status})
    }

    fn access_review(&self, body: &Value) -> Value {
        self.access_reviews.fetch_add(1, Ordering::SeqCst);
        self.access_specs.lock().unwrap().push(body["spec"].clone());
        let spec = &body["spec"];
        let attr = &spec["resourceAttributes"];
        let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let (want_verb, want_resource) =
            self.access.lock().unwrap().clone().unwrap_or_else(|| ("list".into(), "pods".into()));
        let user = field(spec, "user");
        let ns = field(attr, "namespace");
        let right = field(attr, "verb") == want_verb && field(attr, "resource") == want_resource;
        let users = self.users.lock().unwrap();
        let allowed = right
            && users.iter().any(|u| {
                u.name == user && (u.everywhere || (!ns.is_empty() && u.namespaces.contains(&ns)))
            });
        let reason = if allowed { "granted by the loopback table" } else { "" };
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {}, "spec": spec,
               "status": {"allowed": allowed, "reason": reason}})
    }
}

fn json_reply(code: StatusCode, body: &Value) -> warp::reply::Response {
    let mut r = warp::reply::Response::new(body.to_string().into());
    *r.status_mut() = code;
    r.headers_mut()
        .insert("content-type", warp::http::HeaderValue::from_static("application/json"));
    r
}

/// The POST routes for both reviews; anything else falls through to the rest of the server.
/// Without a table, reviews answer 404 (a server that does not serve the review APIs).
pub fn routes(
    reviews: Option<Arc<Reviews>>,
) -> impl Filter<Extract = (warp::reply::Response,), Error = warp::Rejection> + Clone {
    warp::post().and(warp::path::full()).and(warp::body::bytes()).and_then(
        move |path: warp::path::FullPath, body: bytes::Bytes| {
            let reviews = reviews.clone();
            async move {
                let kind = match path.as_str().trim_end_matches('/') {
                    "/apis/authentication.k8s.io/v1/tokenreviews" => "token",
                    "/apis/authorization.k8s.io/v1/subjectaccessreviews" => "access",
                    _ => return Err(warp::reject::not_found()),
                };
                let Some(reviews) = reviews else {
                    return Ok(json_reply(
                        StatusCode::NOT_FOUND,
                        &json!({"kind": "Status", "code": 404, "reason": "NotFound"}),
                    ));
                };
                let Ok(body) = serde_json::from_slice::<Value>(&body) else {
                    return Ok(json_reply(
                        StatusCode::BAD_REQUEST,
                        &json!({"kind": "Status", "code": 400, "reason": "BadRequest"}),
                    ));
                };
                let delay = *reviews.delay.lock().unwrap();
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                let answer = if kind == "token" {
                    reviews.token_review(&body)
                } else {
                    reviews.access_review(&body)
                };
                Ok(json_reply(StatusCode::CREATED, &answer))
            }
        },
    )
}
