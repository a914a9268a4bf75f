//! Metrics backend `prometheus`: any store that speaks the Prometheus HTTP API.
//!
//! Config table `[metrics.prometheus]`:
//!
//! | key | meaning |
//! |---|---|
//! | `url` | base address of the store, e.g. `http://prometheus.istio-system:9090` (required) |
//! | `username`, `password` | HTTP basic auth (optional) |
//! | `bearer_token` | `Authorization: Bearer ...` (optional; not with `username`) |
//! | `headers` | table of extra request headers (optional) |
//! | `timeout_ms` | set by the host; used for `status()` (queries get their own deadline) |
//! | `max_bytes`, `max_series` | set by the host (`[limits]`): an answer larger than either is refused; the body is not read past `max_bytes` |
//!
//! Any other key is an error naming it. Structured queries are rendered to PromQL
//! ([`promql::render`]); each call has a deadline, which is also sent as Prometheus's own
//! `timeout` parameter. The plugin cannot use the host's tokio runtime, so it owns a small
//! multi-thread runtime created in `configure` and blocks on it per call. A call the host
//! cancels drops its HTTP request within [`CANCEL_POLL`]: the connection closes, and
//! Prometheus stops evaluating the query.
#![forbid(unsafe_code)]

pub mod answer;
pub mod promql;

use std::{sync::Arc, time::Duration};

use base64::Engine as _;
use plugin_api::{
    BackendStatus, Cancel, MetricQuery, MetricsStore, PluginError, QueryResult, QueryTime,
};
use prometheus_http_query::{Client, Error as PromError};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use tokio::runtime::Runtime;

/// Keys accepted in `[metrics.prometheus]`.
const KNOWN_KEYS: &[&str] = &[
    "url",
    "username",
    "password",
    "bearer_token",
    "headers",
    "timeout_ms",
    "max_bytes",
    "max_series",
];
const DEFAULT_STATUS_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a running query looks at the host's cancellation flag (a flag has no waker).
pub const CANCEL_POLL: Duration = Duration::from_millis(20);

/// A configured connection: the client and the runtime that drives it.
struct Connected {
    runtime: Runtime,
    client: Client,
    http: reqwest::Client,
    /// The configured address without credentials, for `status()`.
    url: String,
    status_timeout: Duration,
    /// Most bytes read from one answer's body.
    max_bytes: usize,
    /// Most series accepted in one answer.
    max_series: usize,
}

fn usize_key(
    table: &serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> Result<usize, PluginError> {
    match table.get(key) {
        None | Some(serde_json::Value::Null) => Ok(usize::MAX),
        Some(v) => v
            .as_u64()
            .filter(|n| *n > 0)
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
            .ok_or_else(|| {
                PluginError::invalid(format!("metrics.prometheus.{key} must be a positive integer"))
            }),
    }
}

/// The backend; unusable until `configure` succeeded.
#[derive(Default)]
pub struct Prometheus {
    inner: Option<Arc<Connected>>,
}

fn string_key(
    table: &serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> Result<Option<String>, PluginError> {
    match table.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        // An empty string is the same as leaving the key out (config files blank it).
        Some(serde_json::Value::String(s)) if s.is_empty() => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(PluginError::invalid(format!(
            "metrics.prometheus.{key} must be a string, not {other}"
        ))),
    }
}

fn header_map(
    table: &serde_json::Map<String, serde_json::Value>,
) -> Result<HeaderMap, PluginError> {
    let mut headers = HeaderMap::new();
    let Some(value) = table.get("headers") else {
        return Ok(headers);
    };
    let serde_json::Value::Object(map) = value else {
        return Err(PluginError::invalid("metrics.prometheus.headers must be a table of strings"));
    };
    for (name, value) in map {
        let serde_json::Value::String(value) = value else {
            return Err(PluginError::invalid(format!(
                "metrics.prometheus.headers.{name} must be a string"
            )));
        };
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            PluginError::invalid(format!(
                "metrics.prometheus.headers: invalid header name {name:?}"
            ))
        })?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            PluginError::invalid(format!("metrics.prometheus.headers.{name}: invalid header value"))
        })?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok(headers)
}

fn auth_header(
    table: &serde_json::Map<String, serde_json::Value>,
) -> Result<Option<HeaderValue>, PluginError> {
    let username = string_key(table, "username")?;
    let password = string_key(table, "password")?;
    let bearer = string_key(table, "bearer_token")?;
    let text = match (username, password, bearer) {
        (Some(_), _, Some(_)) => {
            return Err(PluginError::invalid(
                "metrics.prometheus: set either username/password or bearer_token, not both",
            ));
        }
        (None, Some(_), _) => {
            return Err(PluginError::invalid("metrics.prometheus.password needs a username"));
        }
        (Some(u), p, None) => {
            let pair = format!("{u}:{}", p.unwrap_or_default());
            format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
        }
        (None, None, Some(token)) => format!("Bearer {token}"),
        (None, None, None) => return Ok(None),
    };
    let mut value = HeaderValue::from_str(&text).map_err(|_| {
        PluginError::invalid(
            "metrics.prometheus: credentials contain characters not allowed in a header",
        )
    })?;
    value.set_sensitive(true);
    Ok(Some(value))
}

/// The URL as it may be shown: without user info.
fn redacted(url: &url::Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.to_string()
}

fn connect(config: &serde_json::Value) -> Result<Connected, PluginError> {
    let empty = serde_json::Map::new();
    let table = match config {
        serde_json::Value::Object(map) => map,
        serde_json::Value::Null => &empty,
        _ => return Err(PluginError::invalid("metrics.prometheus must be a table")),
    };
    if let Some(unknown) = table.keys().find(|k| !KNOWN_KEYS.contains(&k.as_str())) {
        return Err(PluginError::invalid(format!(
            "metrics.prometheus: unknown key {unknown:?} (known keys: {})",
            KNOWN_KEYS.join(", ")
        )));
    }
    let url_text = string_key(table, "url")?
        .ok_or_else(|| PluginError::invalid("metrics.prometheus.url is required"))?;
    // The text is not repeated: a URL may carry credentials (`http://user:password@...`).
    let url = url::Url::parse(&url_text)
        .map_err(|e| PluginError::invalid(format!("metrics.prometheus.url is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(PluginError::invalid(format!(
            "metrics.prometheus.url must be http or https, not {}",
            url.scheme()
        )));
    }
    let status_timeout = match table.get("timeout_ms") {
        None | Some(serde_json::Value::Null) => DEFAULT_STATUS_TIMEOUT,
        Some(v) => Duration::from_millis(v.as_u64().ok_or_else(|| {
            PluginError::invalid("metrics.prometheus.timeout_ms must be a positive integer")
        })?),
    };
    let mut headers = header_map(table)?;
    if let Some(auth) = auth_header(table)? {
        headers.insert(AUTHORIZATION, auth);
    }

    // This library has its own copy of rustls; reqwest (without a built-in provider) needs
    // one installed. Another caller in this library may have installed it already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .map_err(|e| PluginError::internal(format!("cannot build the HTTP client: {e}")))?;
    let client = Client::from(http.clone(), url.as_str()).map_err(|e| {
        PluginError::invalid(format!("metrics.prometheus.url {}: {e}", redacted(&url)))
    })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("metrics-prometheus")
        .enable_all()
        .build()
        .map_err(|e| PluginError::internal(format!("cannot start the plugin's runtime: {e}")))?;
    let (max_bytes, max_series) = (usize_key(table, "max_bytes")?, usize_key(table, "max_series")?);
    Ok(Connected {
        runtime,
        client,
        http,
        url: redacted(&url),
        status_timeout,
        max_bytes,
        max_series,
    })
}

/// Maps a client error to the kinds the host turns into HTTP statuses.
fn map_error(e: PromError) -> PluginError {
    match e {
        PromError::Prometheus(p) => {
            if p.is_bad_data() || p.is_execution() {
                // bad_data: the query text; execution: a query that cannot be computed
                // (e.g. two series with the same labels after dropping the name).
                PluginError::invalid(format!("the store refused the query: {}", p.message()))
            } else if p.is_timeout() || p.is_canceled() {
                PluginError::timeout(format!("the store gave up on the query: {}", p.message()))
            } else if p.is_unavailable() {
                PluginError::unavailable(format!("the store is unavailable: {}", p.message()))
            } else {
                PluginError::internal(format!("the store failed the query: {p}"))
            }
        }
        PromError::Client(c) => match c.inner() {
            Some(r) if r.is_timeout() => {
                PluginError::timeout(format!("the store did not answer in time: {r}"))
            }
            Some(r) if r.status().is_some_and(|s| s == reqwest::StatusCode::BAD_REQUEST) => {
                PluginError::invalid(format!("the store refused the query: {r}"))
            }
            Some(r) => {
                PluginError::unavailable(format!("the store cannot be reached: {c}: {}", chain(r)))
            }
            None => PluginError::unavailable(format!("the store cannot be reached: {c}")),
        },
        other => PluginError::internal(other.to_string()),
    }
}

/// Reads the body chunk by chunk, never past `max_bytes`, and decodes it in one pass
/// ([`answer::decode`]).
async fn read_answer(
    mut resp: reqwest::Response,
    max_bytes: usize,
) -> Result<QueryResult, PluginError> {
    let status = resp.status();
    let json = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json {
        return Err(match resp.error_for_status() {
            Err(e) if e.status() == Some(reqwest::StatusCode::BAD_REQUEST) => {
                PluginError::invalid(format!("the store refused the query: {e}"))
            }
            Err(e) => {
                PluginError::unavailable(format!("the store cannot be reached: {}", chain(&e)))
            }
            Ok(_) => PluginError::internal(format!(
                "the store answered {status} with a body that is not JSON"
            )),
        });
    }
    if resp.content_length().is_some_and(|n| n > max_bytes as u64) {
        return Err(too_large(format!("more than {max_bytes} bytes")));
    }
    // The chunks are kept as they come and copied once into a body of the right size: the
    // store sends big answers chunked, without a length, and growing one buffer chunk by
    // chunk copies a megabyte answer about twice.
    let mut chunks = Vec::new();
    let mut len = 0;
    while let Some(chunk) = resp.chunk().await.map_err(|e| {
        PluginError::unavailable(format!("cannot read the store's answer: {}", chain(&e)))
    })? {
        len += chunk.len();
        if len > max_bytes {
            // Dropping the response closes the connection: nothing more is read.
            return Err(too_large(format!("more than {max_bytes} bytes")));
        }
        chunks.push(chunk);
    }
    let body = chunks.concat();
    // Not held while decoding: for the 1,000-namespace graph's biggest answers, tens of MB
    // each, twice over at the service's peak.
    drop(chunks);
    match answer::decode(&body) {
        Ok(answer::Answer::Data(result)) => Ok(result),
        Ok(answer::Answer::Error(e)) => Err(map_error(PromError::Prometheus(e))),
        Err(e) => Err(PluginError::internal(format!("cannot decode the store's answer: {e}"))),
    }
}

fn too_large(what: String) -> PluginError {
    PluginError::internal(format!(
        "the store's answer was too large: {what} (limits.max_answer_bytes / limits.max_answer_series)"
    ))
}

/// The error and its causes on one line (reqwest hides "connection refused" in a source).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        text.push_str(": ");
        text.push_str(&s.to_string());
        cur = s.source();
    }
    text
}

/// Returns once `cancel` is set.
async fn cancelled(cancel: &Cancel) {
    let mut tick = tokio::time::interval(CANCEL_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !cancel.is_cancelled() {
        tick.tick().await;
    }
}

impl Connected {
    fn query(
        &self,
        q: &MetricQuery,
        timeout: Duration,
        cancel: &Cancel,
    ) -> Result<QueryResult, PluginError> {
        if let QueryTime::Range { start, end, step } = q.time
            && (step <= 0 || end < start)
        {
            return Err(PluginError::invalid(format!(
                "bad range: start {start}, end {end}, step {step}"
            )));
        }
        let text = promql::render(q)?;
        // Prometheus's own limit, so it stops working on a query nobody waits for.
        let timeout_ms = i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX).max(1);
        let fut = async {
            let sent = match q.time {
                QueryTime::Instant(t) => {
                    self.client.query(&text).at(t).timeout(timeout_ms).get_raw().await
                }
                QueryTime::Range { start, end, step } => {
                    self.client
                        .query_range(&text, start, end, step as f64)
                        .timeout(timeout_ms)
                        .get_raw()
                        .await
                }
            };
            read_answer(sent.map_err(map_error)?, self.max_bytes).await
        };
        tracing::debug!(query = %text, "prometheus query");
        // Losing the race drops the request, which closes its connection.
        let result = self
            .runtime
            .block_on(async {
                tokio::select! {
                    r = tokio::time::timeout(timeout.max(Duration::from_millis(1)), fut) => Some(r),
                    () = cancelled(cancel) => None,
                }
            })
            .ok_or_else(PluginError::cancelled)?
            .map_err(|_| {
                PluginError::timeout(format!(
                    "the store did not answer within {} ms",
                    timeout.as_millis()
                ))
            })??;
        if result.series.len() > self.max_series {
            return Err(too_large(format!("more than {} series", self.max_series)));
        }
        Ok(result)
    }

    fn status(&self) -> Result<BackendStatus, PluginError> {
        let url = format!("{}/api/v1/status/buildinfo", self.url.trim_end_matches('/'));
        let fut = async {
            let resp = self.http.get(&url).send().await?.error_for_status()?;
            resp.json::<serde_json::Value>().await
        };
        let body = self
            .runtime
            .block_on(async { tokio::time::timeout(self.status_timeout, fut).await })
            .map_err(|_| PluginError::timeout("the store did not report its version in time"))?
            .map_err(|e| {
                // Without the URL: it is shown only where the caller may see it (/status).
                PluginError::unavailable(format!(
                    "cannot read the store's version: {}",
                    chain(&e.without_url())
                ))
            })?;
        let version = body.pointer("/data/version").and_then(|v| v.as_str()).unwrap_or_default();
        Ok(BackendStatus {
            name: "Prometheus".into(),
            version: version.into(),
            url: self.url.clone().into(),
        })
    }
}

impl MetricsStore for Prometheus {
    fn name(&self) -> &str {
        "prometheus"
    }

    fn configure(&mut self, config: &serde_json::Value) -> Result<(), PluginError> {
        let connected = connect(config)?;
        tracing::info!(url = %connected.url, "prometheus backend configured");
        self.inner = Some(Arc::new(connected));
        Ok(())
    }

    fn query(&self, query: &MetricQuery, timeout: Duration) -> Result<QueryResult, PluginError> {
        self.query_cancellable(query, timeout, &Cancel::new())
    }

    fn query_cancellable(
        &self,
        query: &MetricQuery,
        timeout: Duration,
        cancel: &Cancel,
    ) -> Result<QueryResult, PluginError> {
        self.connected()?.query(query, timeout, cancel)
    }

    fn status(&self) -> Result<BackendStatus, PluginError> {
        self.connected()?.status()
    }
}

impl Prometheus {
    fn connected(&self) -> Result<&Connected, PluginError> {
        self.inner
            .as_deref()
            .ok_or_else(|| PluginError::internal("the prometheus backend is not configured"))
    }
}

plugin_api::register_metrics_backend!(Prometheus::default());
plugin_api::export_plugin!(name: "metrics-prometheus", version: env!("CARGO_PKG_VERSION"));

#[cfg(test)]
mod tests {
    use super::*;
    use plugin_api::ErrorKind;

    fn configure(v: serde_json::Value) -> Result<(), PluginError> {
        Prometheus::default().configure(&v)
    }

    #[test]
    fn unknown_keys_are_named() {
        let e = configure(serde_json::json!({"url": "http://127.0.0.1:1", "usrname": "x"}))
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidInput);
        assert!(e.message.contains("usrname"), "{}", e.message);
    }

    #[test]
    fn config_errors_are_invalid_input() {
        for bad in [
            serde_json::json!({}),
            serde_json::json!({"url": "not a url"}),
            serde_json::json!({"url": "ftp://x"}),
            serde_json::json!({"url": "http://x", "username": "a", "bearer_token": "b"}),
            serde_json::json!({"url": "http://x", "headers": {"bad name": "v"}}),
            serde_json::json!({"url": "http://x", "headers": "x"}),
        ] {
            assert_eq!(configure(bad.clone()).unwrap_err().kind, ErrorKind::InvalidInput, "{bad}");
        }
        configure(serde_json::json!({
            "url": "https://user@example.com/prom", "username": "u", "password": "p",
            "headers": {"X-Scope-OrgID": "tenant"}, "timeout_ms": 500
        }))
        .unwrap();
    }

    #[test]
    fn answer_caps_must_be_positive() {
        let e = configure(serde_json::json!({"url": "http://127.0.0.1:1", "max_bytes": 0}))
            .unwrap_err();
        assert!(e.message.contains("max_bytes"), "{}", e.message);
        configure(
            serde_json::json!({"url": "http://127.0.0.1:1", "max_bytes": 1000, "max_series": 10}),
        )
        .unwrap();
    }

    #[test]
    fn credentials_are_not_shown() {
        let u = url::Url::parse("http://alice:secret@host:9090/p").unwrap();
        assert_eq!(redacted(&u), "http://host:9090/p");
        // A URL that does not parse is not repeated either.
        for bad in ["http://alice:hunter2@[::1", "http://alice:hunter2@host:99999/"] {
            let e = configure(serde_json::json!({ "url": bad })).unwrap_err();
            assert!(!e.message.contains("hunter2"), "{}", e.message);
            assert!(e.message.contains("metrics.prometheus.url"), "{}", e.message);
        }
    }
}
