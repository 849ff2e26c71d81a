//! The journey ID header: `Onceform-Journey-Id` ties one visitor's inquiries together.

use actix_web::HttpRequest;

use crate::domain::{RawFields, JOURNEY_FIELD};

pub const JOURNEY_HEADER: &str = "Onceform-Journey-Id";

/// Adds the header's journey ID to `raw` as the `journey_id` field, unless the body has one.
pub fn with_header(req: &HttpRequest, mut raw: RawFields) -> RawFields {
    let header = req.headers().get(JOURNEY_HEADER).and_then(|v| v.to_str().ok());
    if let Some(value) = header.filter(|_| !raw.iter().any(|(k, _)| k == JOURNEY_FIELD)) {
        raw.push((JOURNEY_FIELD.to_string(), value.to_string()));
    }
    raw
}
