//! The HTTP server loop: hyper with a timer, so a client that does not send its whole
//! request header within `server.header_read_timeout_ms` is dropped (slowloris), and so
//! is a keep-alive connection idle that long between requests; at most
//! `server.max_connections` connections are served at once (the next ones are closed at
//! accept and counted). On shutdown it stops accepting, lets open requests finish for
//! the grace period, then returns.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::config::ServerSettings;

/// Serves `router` on `listener` until `shutdown`, then waits up to `grace` for open
/// connections to finish their requests.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    settings: &ServerSettings,
    shutdown: CancellationToken,
    grace: Duration,
) {
    let idle = Duration::from_millis(settings.header_read_timeout_ms);
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(idle)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(idle))
        .keep_alive_timeout(idle);
    let slots = Arc::new(Semaphore::new(settings.max_connections));
    let graceful = GracefulShutdown::new();
    loop {
        let (stream, _) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: let it clear, do not spin.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            metrics::counter!("conveyor_http_connections_refused_total").increment(1);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            // A client that hung up or timed out: nothing to report.
            let _ = conn.await;
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            ?grace,
            "connections still open after the grace period; closing them"
        );
    }
}
