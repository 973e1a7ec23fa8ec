//! `--metrics ADDR`: the Prometheus endpoint's I/O shell. The frontend loop publishes the
//! model's [`Snapshot`] after each sample ([`MetricsEndpoint::publish`]); an HTTP/1 server
//! (hyper) on its own thread's tokio runtime answers `GET /metrics` with
//! [`crate::report::metrics::render`] of the latest one. No authentication: docs/metrics.md.
//! Bounded so that clients cannot take what the copy needs: at most [`MAX_CONNECTIONS`]
//! descriptors (the rest wait in the kernel's accept queue, which costs the process nothing),
//! each for at most [`CONNECTION_LIFETIME`].

use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{ALLOW, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{Semaphore, watch};

use crate::model::Model;
use crate::model::metrics::Snapshot;
use crate::report::metrics::{CONTENT_TYPE as METRICS_TYPE, render};

/// Connections served at once; the next is accepted only when one of these has ended, so
/// the endpoint never holds more of the process's descriptors than this (and its listener).
pub const MAX_CONNECTIONS: usize = 32;
/// A client that sends no complete request header within this time (the first request's or,
/// on a kept-alive connection, the next one's) is dropped.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// However it behaves (a client reading its answer a byte a minute), a connection is asked to
/// close after this; a scraper that keeps connections alive simply opens a new one.
const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
/// What a connection asked to close gets to finish its answer before it is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// After a failed accept (e.g. out of file descriptors), wait before the next one.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("--metrics {addr}: cannot listen there: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("--metrics: cannot start its server: {0}")]
    Start(std::io::Error),
}

/// The running endpoint: where it listens, and the channel the frontend publishes into.
pub struct MetricsEndpoint {
    addr: SocketAddr,
    mode: &'static str,
    tx: watch::Sender<Option<Arc<Snapshot>>>,
}

impl MetricsEndpoint {
    /// Binds `addr` now (so a taken port is an error before anything is copied) and serves
    /// it on a thread of its own until the process exits. `mode`: "copy" or "watch".
    pub fn start(addr: SocketAddr, mode: &'static str) -> Result<MetricsEndpoint, MetricsError> {
        let listener =
            TcpListener::bind(addr).map_err(|source| MetricsError::Bind { addr, source })?;
        let local = listener.local_addr().map_err(MetricsError::Start)?;
        listener
            .set_nonblocking(true)
            .map_err(MetricsError::Start)?;
        let rt = crate::frontend::event_loop().map_err(MetricsError::Start)?;
        let (tx, rx) = watch::channel(None);
        std::thread::Builder::new()
            .name("copyscope-metrics".into())
            .spawn(move || rt.block_on(serve(listener, rx)))
            .map_err(MetricsError::Start)?;
        Ok(MetricsEndpoint {
            addr: local,
            mode,
            tx,
        })
    }

    /// The address it listens on (the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Hands the endpoint the model's figures as they are now.
    pub fn publish(&self, model: &Model) {
        self.tx
            .send_replace(Some(Arc::new(model.metrics(self.mode))));
    }
}

/// Accepts connections until the process exits, at most [`MAX_CONNECTIONS`] at once; each is
/// served on its own task.
async fn serve(listener: TcpListener, rx: watch::Receiver<Option<Arc<Snapshot>>>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(_) => {
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let rx = rx.clone();
        tokio::spawn(async move {
            serve_connection(stream, rx).await;
            drop(slot);
        });
    }
}

/// One connection, for at most [`CONNECTION_LIFETIME`] and [`CLOSE_GRACE`].
async fn serve_connection(
    stream: tokio::net::TcpStream,
    rx: watch::Receiver<Option<Arc<Snapshot>>>,
) {
    let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
        let snap = rx.borrow().clone();
        async move { Ok::<_, Infallible>(respond(req.method(), req.uri().path(), snap.as_deref())) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(stream), svc);
    tokio::pin!(conn);
    if tokio::time::timeout(CONNECTION_LIFETIME, conn.as_mut())
        .await
        .is_ok()
    {
        return;
    }
    conn.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(CLOSE_GRACE, conn).await;
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// The answer to one request: the exposition on GET (or HEAD) /metrics, 404 elsewhere.
fn respond(method: &Method, path: &str, snap: Option<&Snapshot>) -> Response<Full<Bytes>> {
    if path != "/metrics" {
        return text(
            StatusCode::NOT_FOUND,
            "not found: copyscope serves /metrics\n".into(),
        );
    }
    if method != Method::GET && method != Method::HEAD {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n".into());
        r.headers_mut()
            .insert(ALLOW, hyper::header::HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let Some(snap) = snap else {
        return text(StatusCode::SERVICE_UNAVAILABLE, "no sample yet\n".into());
    };
    let mut r = text(StatusCode::OK, render(snap));
    r.headers_mut().insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(METRICS_TYPE),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelConfig;

    #[test]
    fn only_get_metrics_is_served() {
        let model = Model::new(ModelConfig::default(), Default::default());
        let snap = model.metrics("copy");
        let ok = respond(&Method::GET, "/metrics", Some(&snap));
        assert_eq!(ok.status(), StatusCode::OK);
        assert_eq!(ok.headers()[CONTENT_TYPE], METRICS_TYPE);
        assert_eq!(
            respond(&Method::GET, "/", Some(&snap)).status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            respond(&Method::GET, "/metrics/x", Some(&snap)).status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            respond(&Method::POST, "/metrics", Some(&snap)).status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
        assert_eq!(
            respond(&Method::GET, "/metrics", None).status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }

    #[test]
    fn a_taken_port_is_an_error_at_start() {
        let a = MetricsEndpoint::start("127.0.0.1:0".parse().unwrap(), "copy").unwrap();
        let Err(e) = MetricsEndpoint::start(a.local_addr(), "copy") else {
            panic!("the second bind of one port fails");
        };
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!(
                "--metrics {}: cannot listen there: ",
                a.local_addr()
            )),
            "{msg}"
        );
    }
}
