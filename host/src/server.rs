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
    // Handlers go in before the port opens: a signal that arrives before warp first polls
    // the shutdown future must still shut down gracefully, not kill the process.
    let shutdown = shutdown_signal()?;
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(ip, state.config.server.port)).await?;
    let addr = listener.local_addr()?;
    let router = Arc::new(Router::new(api::all_routes(), &state.config.server.web_root));
    if let Some(port) = state.config.server.metrics.port {
        crate::telemetry::serve_metrics_port(state.clone(), ip, port).await?;
    }
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
    warp::serve(filter).incoming(listener).graceful(shutdown).run().await;
    tracing::info!("meshlens stopped");
    Ok(())
}

#[cfg(unix)]
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {},
            _ = terminate.recv() => {},
        }
        tracing::info!("shutting down");
    })
}

#[cfg(not(unix))]
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down");
    })
}
