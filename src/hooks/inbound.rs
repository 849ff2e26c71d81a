//! One POSTed delivery made usable: signature checked, body decrypted (WeCom) and read,
//! the event ID found. Nothing here touches the database.

use actix_web::http::header::HeaderMap;

use super::config::{HookConfig, VerifyKind};
use super::verify::wecom::{self, CallbackQuery};
use super::verify::{github, header, standard_webhooks, stripe, Secrets, VerifyError};

/// A verified delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The verified body (WeCom: the decrypted XML message), as text.
    pub body: String,
    pub content_type: &'static str,
    /// `None`: no usable event ID (the delivery goes to quarantine).
    pub event_id: Option<String>,
}

pub fn check(
    config: &HookConfig,
    secrets: &Secrets,
    headers: &HeaderMap,
    query: &CallbackQuery,
    raw: &[u8],
    now: i64,
) -> Result<Checked, VerifyError> {
    let tol = config.tolerance_seconds;
    let body = match config.verify {
        VerifyKind::StandardWebhooks => {
            standard_webhooks::verify(&secrets.keys, headers, raw, now, tol).map(|()| raw.to_vec())?
        }
        VerifyKind::Github => github::verify(&secrets.keys, headers, raw).map(|()| raw.to_vec())?,
        VerifyKind::Stripe => stripe::verify(&secrets.keys, headers, raw, now, tol).map(|()| raw.to_vec())?,
        VerifyKind::Wecom => {
            let keys = secrets.wecom.as_ref().ok_or(VerifyError::Unauthorized("not_configured"))?;
            let outer = std::str::from_utf8(raw).map_err(|_| VerifyError::Malformed("not_utf8"))?;
            // An unsigned body without `<Encrypt>` is refused like a bad signature.
            let encrypted =
                wecom::xml_field(outer, "Encrypt").ok_or(VerifyError::Unauthorized("missing_encrypt"))?;
            keys.open(query, &encrypted, now, tol)?
        }
        VerifyKind::None => raw.to_vec(),
    };
    let body = String::from_utf8(body).map_err(|_| VerifyError::Malformed("not_utf8"))?;
    let (content_type, event_id) = if config.verify == VerifyKind::Wecom {
        if !body.trim_start().starts_with('<') {
            return Err(VerifyError::Malformed("not_xml"));
        }
        let id = match config.event_id.as_deref() {
            Some(spec) if config.verify.unsigned_header(spec) => Some(body_event_id(&body)),
            spec => event_id_by(spec, headers, None)?.or(wecom::event_id(&body)),
        };
        ("application/xml", id)
    } else {
        let json: serde_json::Value =
            serde_json::from_str(&body).map_err(|_| VerifyError::Malformed("not_json"))?;
        let spec = config.event_id.as_deref().or(match config.verify {
            VerifyKind::StandardWebhooks => Some("header:webhook-id"),
            VerifyKind::Github => Some("header:x-github-delivery"),
            VerifyKind::Stripe => Some("json:/id"),
            _ => None,
        });
        let id = match spec {
            Some(spec) if config.verify.unsigned_header(spec) => Some(body_event_id(&body)),
            spec => event_id_by(spec, headers, Some(&json))?,
        };
        ("application/json", id)
    };
    Ok(Checked { body, content_type, event_id: event_id.filter(|id| usable(id)) })
}

/// The event ID of a signed delivery whose ID header nobody signed: anyone holding one
/// signed delivery could send it again under a new ID, so the verified body, by its keyed
/// digest, names the event (a byte-identical body is the same event, whatever the header).
fn body_event_id(body: &str) -> String {
    format!("body:{}", crate::domain::keyring::keyring().digest(body))
}

/// `header:NAME` or `json:/pointer` (a string or a number).
fn event_id_by(
    spec: Option<&str>,
    headers: &HeaderMap,
    json: Option<&serde_json::Value>,
) -> Result<Option<String>, VerifyError> {
    let Some(spec) = spec else { return Ok(None) };
    if let Some(name) = spec.strip_prefix("header:") {
        return Ok(header(headers, name).map(str::to_string));
    }
    let Some(ptr) = spec.strip_prefix("json:") else { return Ok(None) };
    Ok(match json.and_then(|j| j.pointer(ptr)) {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        _ => None,
    })
}

/// 1–255 printable characters.
fn usable(id: &str) -> bool {
    !id.trim().is_empty() && id.len() <= 255 && !id.chars().any(char::is_control)
}
