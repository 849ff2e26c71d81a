//! Deadlines and caps on every connection, set in one place.
//!
//! A public endpoint meets clients that open connections and never finish a request
//! (slow-loris): without deadlines each one holds a socket and memory for ever. So:
//! - the request head must arrive within `request_head_timeout_ms` (else 408);
//! - the body must arrive within `body_timeout_ms` of the head (else 408), which
//!   [`BodyDeadline`] enforces for every handler, whatever reads the body;
//! - an idle keep-alive connection is closed after `keep_alive_seconds`;
//! - each HTTP worker holds at most `max_connections_per_worker` connections; beyond that
//!   the listener stops accepting until some close (the kernel's backlog queues them);
//! - a connection reads a body only as fast as its handler takes it
//!   ([`read_credit`](super::read_credit)): a request waiting for its turn holds a window
//!   of its body, not the HTTP server's read-ahead.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::dev::{Payload, ServiceRequest};
use actix_web::error::{PayloadError, UrlencodedError};
use actix_web::http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use actix_web::http::KeepAlive;
use actix_web::web::Bytes;
use actix_web::{HttpMessage, HttpResponse};
use futures_util::Stream;
use tokio::time::{sleep, Sleep};

use super::read_credit::ReadCredit;
use crate::config::ServerConfig;

/// The deadlines and caps applied to the `HttpServer` and to every request body.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub request_head: Duration,
    pub body: Duration,
    pub keep_alive: KeepAlive,
    pub max_connections_per_worker: usize,
    /// How long a response may take to flush to a client that stopped reading.
    pub disconnect: Duration,
}

impl ConnectionLimits {
    pub fn of(server: &ServerConfig) -> ConnectionLimits {
        ConnectionLimits {
            request_head: Duration::from_millis(server.request_head_timeout_ms),
            body: Duration::from_millis(server.body_timeout_ms),
            keep_alive: match server.keep_alive_seconds {
                0 => KeepAlive::Disabled,
                s => KeepAlive::Timeout(Duration::from_secs(s)),
            },
            max_connections_per_worker: server.max_connections_per_worker,
            disconnect: Duration::from_secs(2),
        }
    }
}

/// The I/O error kind a body cut by its deadline ends with (see [`is_deadline`]).
pub(super) const DEADLINE_KIND: std::io::ErrorKind = std::io::ErrorKind::TimedOut;

/// Wraps the request's body so that reading it fails once `deadline` has passed, and so that
/// its connection reads on as the handler takes it (the connection's [`ReadCredit`], renewed
/// for the next request when the body is done). A request that declares no body (most GETs)
/// is left as it is: no timer to arm.
pub fn with_body_deadline(mut req: ServiceRequest, deadline: Duration) -> ServiceRequest {
    let headers = req.headers();
    let declares_body = headers.contains_key(TRANSFER_ENCODING)
        || headers.get(CONTENT_LENGTH).is_some_and(|v| v.as_bytes() != b"0");
    let credit = req.conn_data::<ReadCredit>().cloned();
    if let Some(credit) = &credit {
        credit.next_request(declares_body);
    }
    if !declares_body {
        return req;
    }
    let unread = declared_length(headers);
    let inner = req.take_payload();
    let body = BodyDeadline {
        inner,
        timer: Box::pin(sleep(deadline)),
        expired: false,
        credit,
        unread,
        ended: false,
    };
    let stream: Pin<Box<dyn Stream<Item = Result<Bytes, PayloadError>>>> = Box::pin(body);
    req.set_payload(Payload::from(stream));
    req
}

/// Forms read by extractors (sign-in, admin actions) answer 408 too when their body is late.
pub fn form_config() -> actix_web::web::FormConfig {
    actix_web::web::FormConfig::default().error_handler(|err, _req| match &err {
        UrlencodedError::Payload(e) if is_deadline(e) => {
            let resp = HttpResponse::RequestTimeout()
                .content_type("text/plain; charset=utf-8")
                .body("The request body did not arrive in time.");
            actix_web::error::InternalError::from_response(err, resp).into()
        }
        _ => err.into(),
    })
}

/// The body length a request declares (`Content-Length`), if it declares one.
pub fn declared_length(headers: &actix_web::http::header::HeaderMap) -> Option<u64> {
    headers.get(CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

/// True when a body read failed because its deadline passed.
pub fn is_deadline(error: &PayloadError) -> bool {
    matches!(error, PayloadError::Io(e) if e.kind() == DEADLINE_KIND)
}

struct BodyDeadline {
    inner: Payload,
    timer: Pin<Box<Sleep>>,
    expired: bool,
    /// The connection's, told of each chunk taken.
    credit: Option<ReadCredit>,
    /// What is still to come of a declared `Content-Length`.
    unread: Option<u64>,
    /// The body's end was reached.
    ended: bool,
}

impl Drop for BodyDeadline {
    /// The connection reads on: what is left of the body (to discard it), then the next request.
    fn drop(&mut self) {
        if let Some(credit) = &self.credit {
            credit.body_done(if self.ended { Some(0) } else { self.unread });
        }
    }
}

impl Stream for BodyDeadline {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.expired {
            return Poll::Ready(None);
        }
        if let Poll::Ready(item) = Pin::new(&mut self.inner).poll_next(cx) {
            match &item {
                Some(Ok(chunk)) => {
                    self.unread = self.unread.map(|n| n.saturating_sub(chunk.len() as u64));
                    if let Some(credit) = &self.credit {
                        credit.taken(chunk.len());
                    }
                }
                None => self.ended = true,
                Some(Err(_)) => {}
            }
            return Poll::Ready(item);
        }
        if self.timer.as_mut().poll(cx).is_ready() {
            self.expired = true;
            let error = std::io::Error::new(DEADLINE_KIND, "the request body did not arrive in time");
            return Poll::Ready(Some(Err(PayloadError::Io(error))));
        }
        Poll::Pending
    }
}
