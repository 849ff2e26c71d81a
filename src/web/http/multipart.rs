//! `multipart/form-data` read as it streams in: text parts into memory (within the form's
//! `max_body_bytes`), the file parts of its `file` fields into the file store (each within
//! its field's `max_bytes`, all within the form's `max_files_bytes`), hashed on the way.
//! A file part becomes the field's `FileRef` value; a visitor's text never does.

use actix_multipart::{Field, Multipart, MultipartError};
use actix_web::{web, HttpRequest};
use futures_util::StreamExt;

use super::body::{clip, declared_length, late, malformed, too_large};
use super::problem::{Problem, ProblemKind};
use crate::config::FormConfig;
use crate::domain::{human_size, FieldConfig, FieldError, FieldErrors, RawFields};
use crate::services::files::{Files, Incoming};

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
) -> Result<RawFields, Problem> {
    let read = async {
        // Posts with files wait for a turn (`Files::turn`); a form without file fields takes none.
        let _turn = match form.has_file_field() {
            true => files.turn().await,
            false => None,
        };
        read_parts(req, payload, form, files).await
    };
    tokio::time::timeout(deadline, read).await.unwrap_or_else(|_| Err(late()))
}

async fn read_parts(
    req: &HttpRequest,
    payload: web::Payload,
    form: &FormConfig,
    files: &Files,
) -> Result<RawFields, Problem> {
    let limit = form.max_body_bytes as u64 + if form.has_file_field() { form.max_files_bytes } else { 0 };
    if declared_length(req.headers()).is_some_and(|n| n > limit) {
        return Err(too_large(usize::try_from(limit).unwrap_or(usize::MAX)));
    }
    let mut multipart = Multipart::new(req.headers(), payload);
    let mut fields = RawFields::new();
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
                let Some(incoming) = receive(&mut part, field, form, &mut file_bytes, files).await? else {
                    continue; // no file chosen: the browser sends an empty part
                };
                let file = files.finish(incoming, &file_name).await.map_err(not_stored)?;
                fields.push((name, file.to_value()));
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
    Ok(fields)
}

/// Streams one file part into the store; `None` for an empty part (no file chosen). Past
/// the field's `max_bytes` (or, on a scanning form, `[server] clamd_max_bytes`) it answers
/// 422 `file_too_large` at once, past the form's total 413, without reading further.
async fn receive(
    part: &mut Field,
    field: &FieldConfig,
    form: &FormConfig,
    total: &mut u64,
    files: &Files,
) -> Result<Option<Incoming>, Problem> {
    // The field's own limit, and clamd's when the form scans.
    let max = files.file_limit(form, field.max_bytes.unwrap_or(u64::MAX));
    let mut incoming = files.begin().map_err(not_stored)?;
    while let Some(chunk) = part.next().await {
        let chunk = chunk.map_err(refused)?;
        *total += chunk.len() as u64;
        if *total > form.max_files_bytes {
            return Err(Problem::new(
                ProblemKind::PayloadTooLarge,
                format!("this form accepts files of at most {} together", human_size(form.max_files_bytes)),
            ));
        }
        incoming.write(&chunk).map_err(not_stored)?;
        if incoming.size() > max {
            let mut errors = FieldErrors::default();
            errors.add(&field.name, FieldError::FileTooLarge { max: human_size(max) });
            return Err(Problem::invalid_fields(errors));
        }
    }
    Ok((incoming.size() > 0).then_some(incoming))
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
