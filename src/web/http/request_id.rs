//! A request ID for every request: taken from a well-formed `X-Request-Id` (a proxy's) or
//! made up, returned in the response's `X-Request-Id`, and on every log line written while
//! the request is handled (the span `request`). The accept path logs the submission id
//! under it, and the workers log that submission id with each attempt, which ties a job's
//! lines to the request that created it.

use actix_web::dev::ServiceRequest;
use actix_web::http::header::{HeaderName, HeaderValue};

pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// The request's ID and the span its log lines are written in.
pub fn start(req: &ServiceRequest) -> (HeaderValue, tracing::Span) {
    let given = req.headers().get(&HEADER).filter(|v| well_formed(v.as_bytes())).cloned();
    let id = given.unwrap_or_else(|| {
        HeaderValue::from_str(&uuid::Uuid::new_v4().simple().to_string())
            .unwrap_or(HeaderValue::from_static("-"))
    });
    let span = tracing::info_span!("request", request_id = id.to_str().unwrap_or("-"));
    (id, span)
}

/// 8 to 64 characters of `A–Z a–z 0–9 _ - . :`: nothing a log reader could be fooled by.
fn well_formed(v: &[u8]) -> bool {
    (8..=64).contains(&v.len()) && v.iter().all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_ids_are_taken_from_the_client() {
        assert!(well_formed(b"0123456789abcdef0123456789abcdef"));
        assert!(!well_formed(b"short"));
        assert!(!well_formed(b"has space in it"));
        assert!(!well_formed(b"line\nbreak-injected"));
        assert!(!well_formed(&[b'a'; 65]));
    }
}
