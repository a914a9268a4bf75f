//! `[server.metrics] port`: `/healthz`, `/ready` and `/metrics`, unauthenticated, on a
//! thread with a runtime of its own, behind the same hardened listener as the API
//! (timeouts, connection caps).
//!
//! The API's workers can all be busy (a flood of connections, graphs saturating them):
//! cheap calls on the main port then took 175 ms to 2.3 s, past a 1 s liveness probe, and
//! the kubelet restarted a pod that was only busy. Probes and scrapes answered here wait
//! for no API worker, only for this thread's turn on a core.

use std::{
    convert::Infallible,
    io,
    net::{IpAddr, SocketAddr},
    sync::Arc,
};

use hyper::{Method, Request, Response, StatusCode, body::Incoming, header::HeaderValue};
use tokio::sync::watch;

use crate::{
    listener::{self, Limits},
    state::AppState,
};

/// Binds `ip:port` on the probe thread and serves there until the process ends; the bound
/// address, or why binding failed.
pub fn start(state: Arc<AppState>, ip: IpAddr, port: u16) -> io::Result<SocketAddr> {
    let (bound_tx, bound_rx) = std::sync::mpsc::channel::<io::Result<SocketAddr>>();
    std::thread::Builder::new().name("meshlens-probes".into()).spawn(move || {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(r) => r,
            Err(e) => {
                let _ = bound_tx.send(Err(e));
                return;
            }
        };
        runtime.block_on(async move {
            let tcp = match listener::bind(SocketAddr::new(ip, port)) {
                Ok(t) => t,
                Err(e) => {
                    let _ = bound_tx.send(Err(e));
                    return;
                }
            };
            let _ = bound_tx.send(tcp.local_addr());
            let limits = Arc::new(Limits::from_config(&state.config.server));
            // Never told to stop: probes answer (`/ready` with 503) until the process exits.
            let (_never, stop) = watch::channel(false);
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(answer(&state, req.method(), req.uri().path()).await) }
            });
            listener::run(tcp, None, limits, service, stop).await;
        });
    })?;
    bound_rx.recv().map_err(|_| io::Error::other("the probe thread ended before binding"))?
}

async fn answer(state: &AppState, method: &Method, path: &str) -> Response<String> {
    let mut resp = if method != Method::GET && method != Method::HEAD {
        let mut r =
            json(StatusCode::METHOD_NOT_ALLOWED, "method not allowed: only GET is supported");
        r.headers_mut().insert(hyper::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        r
    } else {
        match path {
            "/healthz" => plain_json(StatusCode::OK, r#"{"status":"ok"}"#),
            "/ready" => match state.readiness() {
                Ok(()) => plain_json(StatusCode::OK, r#"{"status":"ready"}"#),
                Err(why) => json(StatusCode::SERVICE_UNAVAILABLE, &format!("not ready: {why}")),
            },
            "/metrics" => {
                let (parts, body) = state.metrics_response().into_parts();
                Response::from_parts(parts, String::from_utf8_lossy(&body).into_owned())
            }
            _ => json(StatusCode::NOT_FOUND, "no such operation"),
        }
    };
    crate::router::common_headers(resp.headers_mut());
    resp
}

/// The API's error body `{code, message}`.
fn json(status: StatusCode, message: &str) -> Response<String> {
    let body = serde_json::json!({"code": status.as_u16(), "message": message}).to_string();
    plain_json(status, &body)
}

fn plain_json(status: StatusCode, body: &str) -> Response<String> {
    let mut r = Response::new(body.to_string());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(hyper::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}
