//! Reading request bodies under a size limit and turning them into field pairs.

use actix_web::error::PayloadError;
use actix_web::http::header::{HeaderMap, CONTENT_TYPE};
use actix_web::web::{Bytes, BytesMut, Payload};
use actix_web::HttpRequest;
use futures_util::StreamExt;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use super::connections::declared_length;
use super::problem::{Problem, ProblemKind};
use crate::config::FormConfig;
use crate::domain::{FieldType, RawFields};

/// The body's media type, lower-cased, without parameters.
pub fn media_type(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(CONTENT_TYPE)?.to_str().ok()?;
    Some(v.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
}

pub fn is_json(media_type: Option<&str>) -> bool {
    media_type
        .is_some_and(|m| m == "application/json" || (m.starts_with("application/") && m.ends_with("+json")))
}

/// Bytes of an oversized body read (and dropped) before answering 413, so that the client,
/// still sending, reads the answer instead of a reset connection.
const DRAIN_LIMIT: usize = 1 << 20;

/// Reads the whole body, refusing it once it passes `limit` bytes (at once when its
/// `Content-Length` says so) or when it does not arrive within the body deadline
/// (see [`super::connections`]).
pub async fn read_limited(req: &HttpRequest, mut payload: Payload, limit: usize) -> Result<Bytes, Problem> {
    if declared_length(req.headers()).is_some_and(|n| n > limit as u64) {
        return Err(too_large(limit));
    }
    let mut buf = BytesMut::new();
    let mut seen = 0usize;
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| unreadable(&e))?;
        seen += chunk.len();
        if seen > limit + DRAIN_LIMIT {
            break;
        }
        if seen <= limit {
            buf.extend_from_slice(&chunk);
        }
    }
    if seen > limit {
        return Err(too_large(limit));
    }
    Ok(buf.freeze())
}

pub fn too_large(limit: usize) -> Problem {
    Problem::new(ProblemKind::PayloadTooLarge, format!("this form accepts bodies of at most {limit} bytes"))
}

pub(super) fn malformed(detail: impl Into<String>) -> Problem {
    Problem::new(ProblemKind::MalformedBody, detail)
}

/// 408: the body did not arrive within its deadline.
pub(super) fn late() -> Problem {
    Problem::new(ProblemKind::RequestTimeout, "the request body did not arrive in time")
}

/// A body that broke off: past its deadline (408), or unreadable (400).
pub(super) fn unreadable(e: &PayloadError) -> Problem {
    match super::connections::is_deadline(e) {
        true => late(),
        false => malformed("the request body could not be read"),
    }
}

/// A JSON object's members in order, duplicates kept (a map would keep only the last).
struct Members(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object of field names to strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(entry) = map.next_entry::<String, Value>()? {
                    members.push(entry);
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// A JSON object of field names to strings (or null, meaning absent); `operation_id` is
/// returned apart. Repeated and unknown names are left for validation to report.
pub fn parse_json(bytes: &[u8], form: &FormConfig) -> Result<(Option<String>, RawFields), Problem> {
    let text = std::str::from_utf8(bytes).map_err(|_| malformed("the body is not valid UTF-8"))?;
    if text.trim().is_empty() {
        return Err(malformed("the body is empty; send a JSON object of field names to strings"));
    }
    let Members(members) = serde_json::from_str(text).map_err(|e| malformed(format!("invalid JSON: {e}")))?;
    let mut operation_id = None;
    let mut fields = Vec::with_capacity(members.len());
    for (name, value) in members {
        let field = form.field(&name);
        let wrong = |what: &str| malformed(format!("field `{}` must be {what}", clip(&name)));
        match (name.as_str(), value) {
            ("operation_id", Value::String(s)) if operation_id.is_none() => operation_id = Some(s),
            ("operation_id", Value::Null) => {}
            ("operation_id", Value::String(_)) => return Err(malformed("`operation_id` is given twice")),
            ("operation_id", _) => return Err(malformed("`operation_id` must be a string")),
            (_, Value::String(s)) => fields.push((name, s)),
            (_, Value::Null) => fields.push((name, String::new())),
            // A check box answers true or false; a number field takes a JSON number.
            (_, Value::Bool(b)) if field.is_some_and(|f| f.is_boolean()) => {
                fields.push((name, b.to_string()))
            }
            (_, Value::Number(n)) if field.is_some_and(|f| f.kind == FieldType::Number) => {
                fields.push((name, n.to_string()))
            }
            // Several options: an array of strings, one pair each (as a browser repeats the name).
            (_, Value::Array(items)) if field.is_some_and(|f| f.takes_several()) => {
                for item in items {
                    match item {
                        Value::String(s) => fields.push((name.clone(), s)),
                        _ => return Err(wrong("an array of strings")),
                    }
                }
            }
            (_, _) => {
                return Err(match field.map(|f| f.kind) {
                    Some(FieldType::Checkbox | FieldType::Consent) => wrong("true, false or a string"),
                    Some(FieldType::Number) => wrong("a number or a string"),
                    Some(FieldType::Checkboxes | FieldType::Multiselect) => wrong("an array of strings"),
                    _ => wrong("a string"),
                })
            }
        }
    }
    Ok((operation_id, fields))
}

/// `application/x-www-form-urlencoded` pairs, in order.
pub fn parse_urlencoded(bytes: &[u8]) -> Result<RawFields, Problem> {
    std::str::from_utf8(bytes).map_err(|_| malformed("the body is not valid UTF-8"))?;
    serde_urlencoded::from_bytes::<Vec<(String, String)>>(bytes)
        .map_err(|_| malformed("the form data could not be decoded"))
}

/// Parts a multipart form may have.
const MAX_PARTS: usize = 256;

/// One part of a multipart body: its name, its file name when it is a file, its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub name: String,
    pub filename: Option<String>,
    pub value: Vec<u8>,
}

/// Every part of a `multipart/form-data` body read with `read_limited` (files included), in
/// order, at most [`MAX_PARTS`].
///
/// The whole body is in memory, so every step of the parser is ready at once. A step that
/// is not would never be: actix-multipart waits for more input after a truncated body
/// (found by `body_proptest`), which held the request for ever. That is a malformed body.
pub async fn parse_parts(headers: &HeaderMap, body: Bytes) -> Result<Vec<Part>, Problem> {
    use futures_util::FutureExt;
    match multipart_parts(headers, body).now_or_never() {
        Some(result) => result,
        None => Err(malformed("the multipart body is incomplete")),
    }
}

async fn multipart_parts(headers: &HeaderMap, body: Bytes) -> Result<Vec<Part>, Problem> {
    let broken = || malformed("the multipart body could not be decoded");
    let stream = futures_util::stream::once(async move { Ok::<_, PayloadError>(body) });
    let mut multipart = actix_multipart::Multipart::new(headers, stream);
    let mut parts = Vec::new();
    while let Some(part) = multipart.next().await {
        let mut part = part.map_err(|_| broken())?;
        if parts.len() >= MAX_PARTS {
            return Err(malformed("the form has too many parts"));
        }
        let disposition = part.content_disposition().cloned();
        let filename = disposition.as_ref().and_then(|d| d.get_filename()).map(String::from);
        let name = disposition.as_ref().and_then(|d| d.get_name()).unwrap_or("").to_string();
        let mut value = Vec::new();
        while let Some(chunk) = part.next().await {
            value.extend_from_slice(&chunk.map_err(|_| broken())?);
        }
        parts.push(Part { name, filename, value });
    }
    Ok(parts)
}

/// Field names echoed in messages are cut short.
pub(super) fn clip(s: &str) -> String {
    s.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contact() -> FormConfig {
        crate::config::Config::builtin().unwrap().forms["contact"].clone()
    }

    #[test]
    fn json_objects_of_strings_only() {
        let (op, f) =
            parse_json(br#"{"operation_id":"abcdefghijklmnop","name":"Ada","company":null}"#, &contact())
                .unwrap();
        assert_eq!(op.as_deref(), Some("abcdefghijklmnop"));
        assert_eq!(f, vec![("name".to_string(), "Ada".to_string()), ("company".to_string(), String::new())]);
        let (_, dup) = parse_json(br#"{"name":"A","name":"B"}"#, &contact()).unwrap();
        assert_eq!(dup.len(), 2, "repeated names are kept for validation to refuse");
        for bad in [&b"[]"[..], b"{\"name\":1}", b"{", b"", b"\xff", b"{\"operation_id\":5}"] {
            assert_eq!(parse_json(bad, &contact()).unwrap_err().kind, ProblemKind::MalformedBody);
        }
    }

    #[test]
    fn media_types() {
        assert!(is_json(Some("application/json")));
        assert!(is_json(Some("application/vnd.api+json")));
        assert!(!is_json(Some("text/plain")));
        assert!(!is_json(None));
    }
}
