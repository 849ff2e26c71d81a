//! One POSTed delivery made usable: signature checked, body decrypted (WeCom) and read,
//! the event ID found. Nothing here touches the database.

use actix_web::http::header::HeaderMap;

use super::config::{EventIdSpec, HookConfig};
use super::verify::{header, BodyFormat, Delivery, Verifier, VerifyError};
use super::Source;
use crate::domain::keyring::Keyring;
pub use crate::services::inbound::ingest::Checked;

/// Where a source's event IDs come from, decided once when the source is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventIdRule {
    /// The configured (or the provider's) `header:` or `json:` spec.
    Spec(EventIdSpec),
    /// A header the signature does not cover was named: anyone holding one signed delivery
    /// could send it again under a new ID, so the verified body, by its keyed digest, names
    /// the event (a byte-identical body is the same event, whatever the header).
    BodyDigest,
    /// Only the provider's own message names it (WeCom), or nothing does.
    Provider,
}

impl EventIdRule {
    pub fn of(config: &HookConfig) -> EventIdRule {
        match config.event_id.clone().or_else(|| config.verify.default_event_id()) {
            Some(spec) if config.verify.unsigned_header(&spec) => EventIdRule::BodyDigest,
            Some(spec) => EventIdRule::Spec(spec),
            None => EventIdRule::Provider,
        }
    }

    fn read(
        &self,
        keyring: &Keyring,
        headers: &HeaderMap,
        body: &str,
        json: Option<&serde_json::Value>,
    ) -> Option<String> {
        match self {
            EventIdRule::BodyDigest => Some(format!("body:{}", keyring.digest(body))),
            EventIdRule::Provider => None,
            EventIdRule::Spec(EventIdSpec::Header(name)) => header(headers, name).map(str::to_string),
            EventIdRule::Spec(EventIdSpec::Json(pointer)) => match json.and_then(|j| j.pointer(pointer)) {
                Some(serde_json::Value::String(s)) => Some(s.clone()),
                Some(serde_json::Value::Number(n)) => Some(n.to_string()),
                _ => None,
            },
        }
    }
}

/// Verifies and reads `delivery` as `source` says (a body's digest made with `keyring`).
pub fn check(source: &Source, delivery: &Delivery<'_>, keyring: &Keyring) -> Result<Checked, VerifyError> {
    let body = source.keys.open(delivery)?;
    let body = String::from_utf8(body).map_err(|_| VerifyError::Malformed("not_utf8"))?;
    let verifier: &dyn Verifier = source.verifier;
    let (content_type, event_id) = match verifier.body_format() {
        BodyFormat::Xml => {
            if !body.trim_start().starts_with('<') {
                return Err(VerifyError::Malformed("not_xml"));
            }
            let id = source
                .event_id
                .read(keyring, delivery.headers, &body, None)
                .or_else(|| verifier.own_event_id(&body));
            ("application/xml", id)
        }
        BodyFormat::Json => {
            let json: serde_json::Value =
                serde_json::from_str(&body).map_err(|_| VerifyError::Malformed("not_json"))?;
            ("application/json", source.event_id.read(keyring, delivery.headers, &body, Some(&json)))
        }
    };
    Ok(Checked { body, content_type, event_id: event_id.filter(|id| usable(id)) })
}

/// 1–255 printable characters.
fn usable(id: &str) -> bool {
    !id.trim().is_empty() && id.len() <= 255 && !id.chars().any(char::is_control)
}
