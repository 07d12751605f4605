//! The connections: accepted up to a cap, each given a time to send its request's head,
//! and each request a time to be answered (docs/console.md, "Connections").
//!
//! A client that opens connections and sends half a request (slowloris) would otherwise
//! hold each one open for ever, and with enough of them use up the process's files: the
//! operator's own request then never gets in. Here every connection must send a whole
//! head within the header timeout, also between the requests of a kept-alive one, or be
//! closed; at the cap the console accepts nothing more until a connection closes (the
//! kernel keeps the rest waiting, first come first served); once half the cap is open, a
//! new connection has one second for its head and serves one request only, so that a
//! crowd of half-sent requests drains fast while a browser, which sends its head at
//! once, is served; and every connection ends after its lifetime, kept alive or not,
//! reading its answers or not (a client that sends a request every few seconds, or
//! pipelines requests and never reads, held a slot for ever: an attack review).
//! At the end of its lifetime a connection finishes the request in hand, with a grace
//! of `GRACE`, then is dropped.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// What a connection may take.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// The time a connection has to send a request's head.
    pub header_timeout: Duration,
    /// The time a connection may stay open.
    pub lifetime: Duration,
}

/// The head's time on a crowded console (half the cap or more open).
const CROWDED_HEADER_TIMEOUT: Duration = Duration::from_secs(1);
/// The time a connection past its lifetime has to finish its request.
const GRACE: Duration = Duration::from_secs(5);

/// Serves `router` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => return Ok(()),
        };
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Out of files, or a connection reset before it was accepted: go on.
                Err(err) => {
                    tracing::warn!("accept: {err}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => return Ok(()),
        };
        let open = limits.max_connections - slots.available_permits();
        let crowded = open * 2 > limits.max_connections;
        let header_timeout = if crowded {
            CROWDED_HEADER_TIMEOUT.min(limits.header_timeout)
        } else {
            limits.header_timeout
        };
        let router = router.clone();
        let service = TowerToHyperService::new(tower::service_fn(
            move |mut request: axum::http::Request<Incoming>| {
                request
                    .extensions_mut()
                    .insert(ConnectInfo::<SocketAddr>(remote));
                router.clone().oneshot(request)
            },
        ));
        tokio::spawn(async move {
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .keep_alive(!crowded)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => Some(ended),
                () = tokio::time::sleep(limits.lifetime) => None,
            };
            let ended = match ended {
                Some(ended) => Some(ended),
                None => {
                    connection.as_mut().graceful_shutdown();
                    tokio::time::timeout(GRACE, connection.as_mut()).await.ok()
                }
            };
            match ended {
                Some(Err(err)) => tracing::debug!(%remote, "connection: {err}"),
                None => tracing::debug!(%remote, "connection dropped at the end of its lifetime"),
                Some(Ok(())) => {}
            }
            drop(slot);
        });
    }
}
