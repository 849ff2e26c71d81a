//! `multipart/form-data` read as it streams in: text parts into memory (within the form's
//! `max_body_bytes`), the file parts of its `file` fields towards the file store, hashed on
//! the way. Each file part is checked before its bytes reach the store (its field's
//! `max_files`, then the type its first bytes show against `accept`) and while they stream
//! (`max_bytes`, the form's `max_files_bytes`); the files are `Received`, not yet stored: the
//! handler keeps them once the whole request is valid, so a refused post stores nothing. A
//! file part becomes a `FileRef`; a visitor's text never does.

use actix_multipart::{Field, Multipart, MultipartError};
use actix_web::error::PayloadError;
use actix_web::web::Bytes;
use actix_web::{web, HttpRequest};
use futures_util::{Stream, StreamExt};

use super::upload_pace::Paced;

use super::body::{clip, late, malformed, too_large};
use super::connections::declared_length;
use super::problem::{Problem, ProblemKind};
use crate::config::FormConfig;
use crate::domain::{
    accepts_type, human_size, safe_file_name, FieldConfig, FieldError, FieldErrors, RawFields,
};
use crate::services::files::gate::{FileGate, Refused};
use crate::services::files::{Files, Incoming, Received};

/// A multipart post as read: its text pairs, and its files by field, received but not stored.
pub type Parts = (RawFields, Vec<(String, Received)>);

/// Parts a multipart form may have.
const MAX_PARTS: usize = 256;

/// The fields of a multipart post to `form`, its files stored in `files`, read within
/// `deadline` (the body deadline: a body cut short is not awaited for ever).
pub async fn read(
    req: &HttpRequest,
    payload: web::Payload,
    form: &FormConfig,
    files: &Files,
    deadline: std::time::Duration,
) -> Result<Parts, Problem> {
    let read = async {
        // Posts with files wait for a turn (`Files::turn`), then keep up its pace or lose it; a
        // form without file fields takes none.
        match form.has_file_field() {
            true => {
                let _turn = files.turn().await;
                read_parts(req, Paced::new(payload), form, files).await
            }
            false => read_parts(req, payload, form, files).await,
        }
    };
    tokio::time::timeout(deadline, read).await.unwrap_or_else(|_| Err(late()))
}

async fn read_parts(
    req: &HttpRequest,
    payload: impl Stream<Item = Result<Bytes, PayloadError>> + 'static,
    form: &FormConfig,
    files: &Files,
) -> Result<Parts, Problem> {
    let limit = form.max_body_bytes as u64 + if form.has_file_field() { form.max_files_bytes } else { 0 };
    if declared_length(req.headers()).is_some_and(|n| n > limit) {
        return Err(too_large(usize::try_from(limit).unwrap_or(usize::MAX)));
    }
    let mut multipart = Multipart::new(req.headers(), payload);
    let mut fields = RawFields::new();
    let mut received: Vec<(String, Received)> = Vec::new();
    let (mut text_bytes, mut file_bytes, mut parts) = (0usize, 0u64, 0usize);
    while let Some(part) = multipart.next().await {
        let mut part = part.map_err(refused)?;
        parts += 1;
        if parts > MAX_PARTS {
            return Err(malformed("the form has too many parts"));
        }
        let name = part.name().unwrap_or("").to_string();
        let file_name = part.content_disposition().and_then(|d| d.get_filename()).map(String::from);
        match (form.field(&name).filter(|f| f.is_file()), file_name) {
            (Some(field), Some(file_name)) => {
                if received.iter().filter(|(n, _)| *n == name).count() >= field.max_files() {
                    return Err(invalid(field, FieldError::TooManyFiles { max: field.max_files() }));
                }
                let file_name = safe_file_name(&file_name);
                let taken = receive(&mut part, field, &file_name, form, &mut file_bytes, files).await?;
                let Some(incoming) = taken else {
                    continue; // no file chosen: the browser sends an empty part
                };
                received.push((name, Received::new(incoming, &file_name)));
            }
            // A file field's value is a file, never text (nor a file where text is due).
            (Some(_), None) => drain(&mut part).await?,
            (None, Some(_)) => return Err(malformed(format!("`{}` takes no file", clip(&name)))),
            (None, None) => {
                let mut value = Vec::new();
                while let Some(chunk) = part.next().await {
                    let chunk = chunk.map_err(refused)?;
                    text_bytes += chunk.len();
                    if text_bytes > form.max_body_bytes {
                        return Err(too_large(form.max_body_bytes));
                    }
                    value.extend_from_slice(&chunk);
                }
                let value =
                    String::from_utf8(value).map_err(|_| malformed("a form field is not valid UTF-8"))?;
                fields.push((name, value));
            }
        }
    }
    Ok((fields, received))
}

/// Streams one file part towards the store; `None` for an empty part (no file chosen). Its
/// bytes reach the store only once their type is one `field.accept` takes (422
/// `invalid_file_type` before). Past the field's `max_bytes` (or, on a scanning form,
/// `[server] clamd_max_bytes`) it answers 422 `file_too_large` at once, past the form's
/// total 413, without reading further.
async fn receive(
    part: &mut Field,
    field: &FieldConfig,
    file_name: &str,
    form: &FormConfig,
    total: &mut u64,
    files: &Files,
) -> Result<Option<Incoming>, Problem> {
    let allowed = |content_type: &str| accepts_type(field, content_type, file_name);
    // The field's own limit, and clamd's when the form scans.
    let max = files.file_limit(form, field.max_bytes.unwrap_or(u64::MAX));
    let mut gate = FileGate::new(files);
    while let Some(chunk) = part.next().await {
        let chunk = chunk.map_err(refused)?;
        *total += chunk.len() as u64;
        if *total > form.max_files_bytes {
            return Err(Problem::new(
                ProblemKind::PayloadTooLarge,
                format!("this form accepts files of at most {} together", human_size(form.max_files_bytes)),
            ));
        }
        gate.write(&chunk, allowed).await.map_err(|e| gate_refusal(field, e))?;
        if gate.size() > max {
            return Err(invalid(field, FieldError::FileTooLarge { max: human_size(max) }));
        }
    }
    gate.end(allowed).map_err(|e| gate_refusal(field, e))
}

/// A file part its field does not take (422), or one the store could not take (503).
fn gate_refusal(field: &FieldConfig, e: Refused) -> Problem {
    match e {
        Refused::Type(_) => invalid(field, FieldError::InvalidFileType { accepted: field.accept.clone() }),
        Refused::Store(e) => not_stored(e),
    }
}

/// The 422 of one field's error.
fn invalid(field: &FieldConfig, error: FieldError) -> Problem {
    let mut errors = FieldErrors::default();
    errors.add(&field.name, error);
    Problem::invalid_fields(errors)
}

async fn drain(part: &mut Field) -> Result<(), Problem> {
    while let Some(chunk) = part.next().await {
        chunk.map_err(refused)?;
    }
    Ok(())
}

/// A broken stream: its deadline passed (408), or it is not multipart (400).
fn refused(e: MultipartError) -> Problem {
    match e {
        MultipartError::Payload(p) if super::connections::is_deadline(&p) => late(),
        _ => malformed("the multipart body could not be decoded"),
    }
}

/// A file the store could not take: logged, and 503 (nothing was accepted).
pub(super) fn not_stored(e: std::io::Error) -> Problem {
    tracing::error!(error = %e, "an attached file could not be stored");
    Problem::unavailable()
}
