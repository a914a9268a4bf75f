//! The HTTP server: one warp filter in front of the router, graceful shutdown on signals.

use std::{net::SocketAddr, sync::Arc};

use warp::Filter;

use crate::{api, router::Router, state::AppState};

/// Binds, logs the bound address on one line, and serves until SIGINT/SIGTERM.
pub async fn serve(state: Arc<AppState>) -> std::io::Result<()> {
    let ip: std::net::IpAddr = state
        .config
        .server
        .address
        .parse()
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "server.address is not an IP address"))?;
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(ip, state.config.server.port)).await?;
    let addr = listener.local_addr()?;
    let router = Arc::new(Router::new(api::all_routes(), &state.config.server.web_root));
    tracing::info!("meshlens listening on http://{addr}");
    // Also on stdout, one line, for scripts and tests that start the binary.
    println!("meshlens listening on http://{addr}");

    let filter = warp::method()
        .and(warp::path::full())
        .and(warp::query::raw().map(Some).or(warp::any().map(|| None)).unify())
        .and(warp::header::headers_cloned())
        .then(move |method, path: warp::path::FullPath, query, headers| {
            let router = router.clone();
            let state = state.clone();
            async move { router.handle(state, method, path.as_str(), query, headers).await }
        });
    warp::serve(filter).incoming(listener).graceful(shutdown_signal()).run().await;
    tracing::info!("meshlens stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}
