//! A submission's files in an email: the owner notification carries them as attachments
//! while their total stays within `[smtp] attach_max_bytes` (in field order), and lists the
//! others with their admin download path; a file no longer stored is said to be so. The
//! text shows each file as `FileRef::shown` (name, type, size), never the stored value.

use std::collections::BTreeMap;

use crate::base::i18n::{Arg, Locale};
use crate::config::FormConfig;
use crate::domain::FileRef;
use crate::services::effects::Job;
use crate::services::files::Files;

/// One file carried by a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailFile {
    /// The sanitised display name (`FileRef::name`); lettre encodes it (RFC 2231).
    pub name: String,
    /// The type detected from the content.
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// What a message says of a submission's files (each file field's text, by field name) and
/// the files it carries.
#[derive(Debug, Default)]
pub struct Attached {
    pub lines: BTreeMap<String, String>,
    pub files: Vec<MailFile>,
}

/// Attaching files: from this store, up to this many bytes in all.
#[derive(Clone)]
pub struct Attach {
    pub files: Files,
    pub max_bytes: u64,
}

/// The admin page's download of one file of a submission.
pub fn download_path(job: &Job, sha256: &str) -> String {
    format!("/admin/submissions/{}/files/{sha256}", job.submission_id)
}

/// A file field's value as the files' names, one per line (a confirmation's echo).
pub fn names(value: &str) -> String {
    FileRef::stored_in(value).iter().map(|f| f.name.clone()).collect::<Vec<_>>().join("\n")
}

impl Attach {
    /// Reads `job`'s files of `form`'s file fields (on the blocking pool) and decides which
    /// the message carries; the lines are in `locale`.
    pub async fn gather(&self, form: &FormConfig, job: &Job, locale: Locale) -> Attached {
        let refs: Vec<(String, FileRef)> = form
            .files(|name| job.fields.get(name).map(String::as_str))
            .into_iter()
            .map(|(f, r)| (f.name.clone(), r))
            .collect();
        if refs.is_empty() {
            return Attached::default();
        }
        let (files, max) = (self.files.clone(), self.max_bytes);
        let digests: Vec<String> = refs.iter().map(|(_, r)| r.sha256.clone()).collect();
        // Reads only what can still be attached; a blob that cannot be read is no longer stored.
        let read = tokio::task::spawn_blocking(move || {
            let mut total = 0u64;
            digests
                .iter()
                .map(|sha| match files.store().size(sha) {
                    None => Blob::Gone,
                    Some(size) => {
                        if total.saturating_add(size) > max {
                            return Blob::TooLarge;
                        }
                        match files.store().read(sha) {
                            Ok(bytes) => {
                                total += size;
                                Blob::Read(bytes)
                            }
                            Err(_) => Blob::Gone,
                        }
                    }
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        let mut out = Attached::default();
        for ((field, file), blob) in
            refs.into_iter().zip(read.into_iter().chain(std::iter::repeat_with(|| Blob::Gone)))
        {
            let note = match blob {
                Blob::Read(bytes) => {
                    out.files.push(MailFile {
                        name: file.name.clone(),
                        content_type: file.content_type.clone(),
                        bytes,
                    });
                    locale.text("email-file-attached")
                }
                Blob::TooLarge => {
                    let path = download_path(job, &file.sha256);
                    locale.format("email-file-download", &[("path", Arg::Str(&path))])
                }
                Blob::Gone => locale.text("email-file-gone"),
            };
            let line = format!("{} — {note}", file.shown());
            out.lines
                .entry(field)
                .and_modify(|l: &mut String| {
                    l.push('\n');
                    l.push_str(&line);
                })
                .or_insert(line);
        }
        out
    }
}

enum Blob {
    Read(Vec<u8>),
    /// Beyond the message's limit: listed with its download path.
    TooLarge,
    /// Not in the store (purged): said so; no error.
    Gone,
}
