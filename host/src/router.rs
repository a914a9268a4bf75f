//! Routing: one table of operations, matched by hand inside a single warp filter so that
//! 404 (unknown path), 405 (known path, other method), the `/api` twin of every path and
//! the web root are decided in one place.

use std::{future::Future, net::SocketAddr, pin::Pin, sync::Arc, time::Instant};

use futures::FutureExt;
use warp::http::{HeaderMap, HeaderValue, Method, StatusCode, header};

use crate::{
    access::{Access, Identity},
    clusters::Member,
    context::{REQUEST_ID, RequestContext},
    error::ApiError,
    state::AppState,
    telemetry,
};

/// What a handler returns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Reply, ApiError>> + Send>>;
/// A handler: a plain function of the request context.
pub type Handler = fn(Ctx) -> HandlerFuture;

/// One operation: its spec name, path pattern and handler.
#[derive(Clone)]
pub struct Route {
    pub op: &'static str,
    pub path: &'static str,
    pub handler: Handler,
    /// Answers without authentication (`/` and `/status`).
    pub public: bool,
    /// Answers carry `Cache-Control: no-store` (credentials in the body).
    pub no_store: bool,
    /// Goes through admission control (`[limits]`): queries the backend or builds a lot.
    pub expensive: bool,
    segments: Vec<Segment>,
}

#[derive(Clone, Debug, PartialEq)]
enum Segment {
    Literal(&'static str),
    Param(&'static str),
}

impl Route {
    /// A GET operation at `path` (written without `/api`; `{name}` marks a parameter).
    pub fn get(op: &'static str, path: &'static str, handler: Handler) -> Route {
        let segments = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => Segment::Param(name),
                None => Segment::Literal(s),
            })
            .collect();
        Route { op, path, handler, public: false, no_store: false, expensive: false, segments }
    }

    /// Marks the route as answering without authentication.
    pub fn public(mut self) -> Route {
        self.public = true;
        self
    }

    /// Marks the route's answers as not to be stored by caches.
    pub fn no_store(mut self) -> Route {
        self.no_store = true;
        self
    }

    /// Marks the route as expensive: it waits for an admission slot (or gets 503).
    pub fn expensive(mut self) -> Route {
        self.expensive = true;
        self
    }

    fn matches(&self, parts: &[String]) -> Option<Vec<(&'static str, String)>> {
        if parts.len() != self.segments.len() {
            return None;
        }
        let mut params = Vec::new();
        for (seg, part) in self.segments.iter().zip(parts) {
            match seg {
                Segment::Literal(l) if l == part => {}
                Segment::Literal(_) => return None,
                Segment::Param(name) if !part.is_empty() => params.push((*name, part.clone())),
                Segment::Param(_) => return None,
            }
        }
        Some(params)
    }

    // Literal segments win over parameters, position by position (`graph` beats `{namespace}`).
    fn specificity(&self) -> Vec<u8> {
        self.segments.iter().map(|s| matches!(s, Segment::Literal(_)) as u8).collect()
    }
}

/// The request as a handler sees it.
pub struct Ctx {
    pub state: Arc<AppState>,
    pub op: &'static str,
    params: Vec<(&'static str, String)>,
    /// The raw query string: each operation reads it as its own parameter struct.
    query: String,
    pub headers: HeaderMap,
    /// Who is asking, and which namespaces they may see. Routes with a `{namespace}`
    /// parameter were checked before the handler runs; handlers check any other namespace.
    pub access: Access,
    /// The client's address (the TCP peer; proxies are not looked through).
    pub client: Option<SocketAddr>,
    /// The request's deadline, cancellation flag and query counters: handed to every
    /// service call made on its behalf.
    pub rc: RequestContext,
    /// The cluster a namespace-scoped operation reads: its `clusterName`, else the home
    /// cluster (checked before the handler runs: unknown 404, unreachable remote 503).
    pub cluster: Member,
    /// The admission slot of an expensive route.
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Ctx {
    /// Takes the admission slot, to hand it to CPU work that may outlive the handler's
    /// future by a moment: the slot is free only once that work stopped.
    pub fn take_slot(&mut self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.slot.take()
    }
    /// A path parameter (always present when the route matched).
    pub fn path(&self, name: &str) -> Result<&str, ApiError> {
        self.params
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .ok_or_else(|| ApiError::internal(format!("route has no path parameter {name}")))
    }
    /// The query string as sent, without `?` (empty when there is none).
    pub fn query_string(&self) -> &str {
        &self.query
    }
    /// The operation's typed query parameters; a wrong value is a 400 naming the parameter.
    pub fn query<T: serde::de::DeserializeOwned>(&self) -> Result<T, ApiError> {
        Ok(meshlens_params::query::parse_query(&self.query)?)
    }
}

/// A successful answer.
pub enum Reply {
    Json(Vec<u8>),
    NoContent,
    Text { content_type: &'static str, body: String },
}

impl Reply {
    /// Serialises `value` as the JSON body. A failure is a 500, never a 200 with an error
    /// body (our own types always serialise; a map with non-string keys would not).
    pub fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<Reply, ApiError> {
        serde_json::to_vec(value)
            .map(Reply::Json)
            .map_err(|e| ApiError::internal(format!("serialisation failed: {e}")))
    }
}

/// A handler's reply, or a finished response (the self-metrics).
enum Answer {
    Reply(Reply),
    Response(warp::http::Response<Vec<u8>>),
}

/// The route table, with the web root it lives under.
pub struct Router {
    routes: Vec<Route>,
    web_root: Vec<String>,
}

impl Router {
    pub fn new(mut routes: Vec<Route>, web_root: &str) -> Router {
        routes.sort_by_key(|r| std::cmp::Reverse(r.specificity()));
        Router { routes, web_root: split(web_root) }
    }

    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// Handles one request, never failing: errors become `{code, message}` bodies. Every
    /// answer carries the request id; every request is counted and logged once.
    pub async fn handle(
        self: Arc<Self>,
        state: Arc<AppState>,
        method: Method,
        path: &str,
        raw_query: Option<String>,
        headers: HeaderMap,
        client: Option<SocketAddr>,
    ) -> warp::http::Response<Vec<u8>> {
        let started = Instant::now();
        let rc = RequestContext::new(&headers, state.config.server.request_timeout.0);
        let _in_flight = telemetry::InFlight::enter(&state.telemetry);
        // A script (the console) asks for no Basic challenge: browsers would pop up their own login.
        let scripted = headers.contains_key("x-requested-with");
        let mut response = if let Some(resp) =
            crate::console::intercept(&self.web_root, &method, &split(path), &headers)
        {
            rc.set_operation("console");
            console_headers(resp)
        } else {
            match self.dispatch(&rc, state.clone(), &method, path, raw_query, headers, client).await
            {
                Ok(Answer::Reply(reply)) => reply_response(reply),
                Ok(Answer::Response(r)) => r,
                Err(e) => error_response(&e),
            }
        };
        if scripted && response.headers().contains_key(header::WWW_AUTHENTICATE) {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"meshlens\""),
            );
        }
        if let Ok(v) = HeaderValue::from_str(rc.id()) {
            response.headers_mut().insert(REQUEST_ID, v);
        }
        let no_store =
            rc.operation().is_some_and(|op| self.routes.iter().any(|r| r.op == op && r.no_store));
        if no_store {
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        }
        common_headers(response.headers_mut());
        let took = started.elapsed();
        telemetry::finish(&state.telemetry, &rc, method.as_str(), path, response.status(), took);
        response
    }

    #[allow(clippy::too_many_arguments)]
    async fn dispatch(
        &self,
        rc: &RequestContext,
        state: Arc<AppState>,
        method: &Method,
        path: &str,
        raw_query: Option<String>,
        headers: HeaderMap,
        client: Option<SocketAddr>,
    ) -> Result<Answer, ApiError> {
        if self.is_self_metrics(&state, path) {
            rc.set_operation("metrics");
            if method != Method::GET && method != Method::HEAD {
                return Err(ApiError::MethodNotAllowed);
            }
            if !state.config.server.metrics.public {
                state.auth.check(&headers, client.map(|c| c.ip())).await?;
            }
            return Ok(Answer::Response(state.metrics_response()));
        }
        let parts = match self.relative_parts(path) {
            Some(p) => p,
            None => return Err(ApiError::not_found("no such operation")),
        };
        let Some((route, params)) =
            self.routes.iter().find_map(|r| r.matches(&parts).map(|p| (r, p)))
        else {
            return Err(ApiError::not_found("no such operation"));
        };
        rc.set_operation(route.op);
        if method != Method::GET && method != Method::HEAD {
            return Err(ApiError::MethodNotAllowed);
        }
        let query = raw_query.unwrap_or_default();
        let handler = route.handler;
        let public = route.public;
        let expensive = route.expensive;
        let op = route.op;
        // Dropped when this request ends for any reason, the client going away included.
        let _cancel = rc.scope().cancel_on_drop();
        let remaining = rc.scope().remaining();
        // Authentication and access reviews may ask the API server: inside the deadline too.
        // Admission comes after them, so refused callers never take a slot or a queue place.
        let rc = rc.clone();
        let fut = async move {
            let identity = if public {
                Identity::Unauthenticated
            } else {
                state.auth.check(&headers, client.map(|c| c.ip())).await?
            };
            if let Identity::Kube(user) = &identity {
                rc.set_user(&user.username);
            }
            let access = Access::new(identity, state.auth.reviewer.clone());
            // Every operation on one namespace: in a known, readable cluster and visible
            // there, or 404/503/403 before any work.
            let namespace = params.iter().find(|(n, _)| *n == "namespace");
            let cluster = match namespace {
                Some(_) => state.clusters.resolve(cluster_param(&query)?.as_deref())?.clone(),
                None => state.clusters.home().clone(),
            };
            // A remote's own API server reviews the caller there (crate::cluster_access).
            let access =
                crate::cluster_access::require_in(&state, access, &cluster, &headers).await?;
            if let Some((_, ns)) = namespace {
                access.require(&[ns.as_str()]).await?;
            }
            let slot = if expensive { Some(state.admission.admit().await?) } else { None };
            let ctx = Ctx { state, op, params, query, headers, access, client, rc, cluster, slot };
            handler(ctx).await
        };
        // A panic in a handler must answer 500 for that request, not end the connection.
        let fut = std::panic::AssertUnwindSafe(fut).catch_unwind();
        match tokio::time::timeout(remaining, fut).await {
            Ok(Ok(result)) => result.map(Answer::Reply),
            Ok(Err(_)) => Err(ApiError::internal("internal error while handling the request")),
            Err(_) => Err(ApiError::unavailable("the request timed out")),
        }
    }

    // `{web_root}metrics` exactly (not below `/api`), unless `[server.metrics] enabled = false`.
    fn is_self_metrics(&self, state: &AppState, path: &str) -> bool {
        if !state.config.server.metrics.enabled {
            return false;
        }
        let parts = split(path);
        parts.len() == self.web_root.len() + 1
            && parts[..self.web_root.len()] == self.web_root[..]
            && parts[self.web_root.len()] == "metrics"
    }

    // Strips the web root and the optional `api` segment; percent-decodes each segment.
    fn relative_parts(&self, path: &str) -> Option<Vec<String>> {
        let mut parts = split(path);
        if parts.len() < self.web_root.len() || parts[..self.web_root.len()] != self.web_root[..] {
            return None;
        }
        parts.drain(..self.web_root.len());
        if parts.first().map(String::as_str) == Some("api") {
            parts.remove(0);
        }
        Some(parts)
    }
}

/// The console's policy: its scripts, styles, images and workers come from its own files
/// (no inline code, no `eval`, no third-party host), it connects only to its own API, and
/// no other site may frame it (clickjacking).
pub const CONSOLE_CSP: &str = "default-src 'self'; base-uri 'self'; form-action 'self'; object-src 'none'; frame-ancestors 'none'";

fn console_headers(mut resp: warp::http::Response<Vec<u8>>) -> warp::http::Response<Vec<u8>> {
    resp.headers_mut()
        .insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONSOLE_CSP));
    resp
}

/// Headers every answer carries, on every port: browsers must not guess a type other than
/// the one sent (a JSON error echoing a name must never be run as a script or page).
pub fn common_headers(h: &mut HeaderMap) {
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
}

fn split(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect()
}

fn reply_response(reply: Reply) -> warp::http::Response<Vec<u8>> {
    let (status, ctype, body) = match reply {
        Reply::Json(b) => (StatusCode::OK, Some("application/json"), b),
        Reply::NoContent => (StatusCode::NO_CONTENT, None, Vec::new()),
        Reply::Text { content_type, body } => {
            (StatusCode::OK, Some(content_type), body.into_bytes())
        }
    };
    let mut resp = warp::http::Response::new(body);
    *resp.status_mut() = status;
    if let Some(ct) = ctype {
        resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    resp
}

/// The spec's error body with the status in `code`, plus the headers the status needs.
pub fn error_response(e: &ApiError) -> warp::http::Response<Vec<u8>> {
    let mut resp = warp::http::Response::new(e.body().to_string().into_bytes());
    *resp.status_mut() = e.status();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    match e {
        ApiError::Unauthorized(_) => {
            h.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"meshlens\", Basic realm=\"meshlens\""),
            );
        }
        ApiError::MethodNotAllowed => {
            h.insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        }
        ApiError::TooManyRequests { retry_after, .. } => {
            h.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
        }
        ApiError::Overloaded(_) => {
            h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        _ => {}
    }
    resp
}

/// `clusterName` of a namespace-scoped operation (Kiali v2's name); empty means the home one.
fn cluster_param(query: &str) -> Result<Option<String>, ApiError> {
    #[derive(serde::Deserialize)]
    struct ClusterParam {
        #[serde(rename = "clusterName")]
        cluster_name: Option<String>,
    }
    let p: ClusterParam = meshlens_params::query::parse_query(query)?;
    Ok(p.cluster_name.filter(|n| !n.is_empty()))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn a_body_that_cannot_be_serialised_answers_500_with_the_error_body() {
        // JSON object keys must be strings: serde_json refuses tuple keys.
        let unserialisable: HashMap<(u8, u8), u8> = HashMap::from([((1, 2), 3)]);
        let Err(e) = Reply::json(&unserialisable) else { panic!("serialised a tuple-keyed map") };
        let resp = error_response(&e);
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body: serde_json::Value = serde_json::from_slice(resp.body()).unwrap();
        assert_eq!(body["code"], 500);
        assert!(body["message"].as_str().unwrap().starts_with("serialisation failed: "), "{body}");
    }

    #[test]
    fn a_serialisable_body_is_the_json_answer() {
        let Ok(Reply::Json(body)) = Reply::json(&serde_json::json!({"status": "ok"})) else {
            panic!("not a JSON reply")
        };
        assert_eq!(body, br#"{"status":"ok"}"#);
    }
}
