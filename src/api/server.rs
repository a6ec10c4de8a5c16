//! The HTTP server loop: hyper (HTTP/1.1) with a timer, so a client that does not send its whole
//! request header within `server.header_read_timeout_ms` is dropped (slowloris), and so
//! is a keep-alive connection idle that long between requests; at most
//! `server.max_connections` connections are served at once (the next ones are closed at
//! accept and counted). On shutdown it stops accepting, lets open requests finish for
//! the grace period, then returns.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::auth_failures::Peer;
use crate::api::settings::ServerSettings;

/// One of `server.max_connections`, held by the connection and by anything that outlives
/// its HTTP exchange (an upgraded WebSocket).
#[derive(Clone)]
pub struct ConnectionSlot(#[allow(dead_code)] Arc<tokio::sync::OwnedSemaphorePermit>);

/// Serves `router` on `listener` until `shutdown`, then waits up to `grace` for open
/// connections to finish their requests.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    settings: &ServerSettings,
    shutdown: CancellationToken,
    grace: Duration,
) {
    // HTTP/1.1 only: hyper-util's auto (h1 + h2c) builder reads the protocol preface with
    // no timer, so a client that connects and sends nothing would be held for ever.
    let idle = Duration::from_millis(settings.header_read_timeout_ms);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(idle)
        // The request line and headers must fit in this (hyper's default is ~400 KB, room
        // for a header built to make a handler work); a larger head is answered 431.
        .max_buf_size(settings.max_header_bytes)
        .keep_alive(true);
    let slots = Arc::new(Semaphore::new(settings.max_connections));
    let connections = TaskTracker::new();
    loop {
        let (stream, peer) = tokio::select! {
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
        // Every request carries its connection's slot, so a WebSocket holds it after the
        // upgrade has ended the HTTP connection.
        let slot = ConnectionSlot(Arc::new(slot));
        let service = TowerToHyperService::new(tower::service_fn({
            let (router, slot) = (router.clone(), slot.clone());
            let peer = Peer(peer.ip());
            move |mut req: axum::extract::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(slot.clone());
                req.extensions_mut().insert(peer);
                tower::ServiceExt::oneshot(router.clone(), req)
            }
        }));
        let conn = builder
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades();
        let shutdown = shutdown.clone();
        connections.spawn(async move {
            tokio::pin!(conn);
            // A client that hung up or timed out: nothing to report.
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = shutdown.cancelled() => {
                    // Finish the request in progress, then close.
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    connections.close();
    if tokio::time::timeout(grace, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            ?grace,
            "connections still open after the grace period; closing them"
        );
    }
}
