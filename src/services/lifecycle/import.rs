//! Historic import: a CSV whose header names form fields, plus optional `received_at` and
//! `source_id`. Each valid row becomes a keyless submission (channel `import`) with its
//! original time, screened by the duplicate detector against what is stored and the rest of
//! the file. Its key is a keyed digest of (source, `source_id` or the row's content and time),
//! so a re-run imports nothing new. Rejected rows are listed by line; no row is half-imported.

use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, NaiveDateTime};

use super::csv;
use crate::base::clock::now;
use crate::base::i18n::{Arg, Locale};
use crate::config::{Config, Form, FormConfig};
use crate::db::rescreen::RescreenStore;
use crate::db::{DbError, Pool, Store};
use crate::domain::keyring::Keyring;
use crate::domain::{normalise_with, Attached, FieldErrors, OperationId, RawFields};
use crate::services::accept::import::{import_row, Imported};
use crate::services::accept::Intake;
use crate::services::audit::{self, Actor};
use crate::services::files::{Files, Received};
use crate::services::request_log::Channel;
use crate::with_conn;

/// The admin export's own columns (`services::browse`'s CSV), ignored so that an export
/// imports as it is; its `submission_id` serves as `source_id`.
const EXPORT_COLUMNS: [&str; 6] = ["reference", "form", "channel", "keyless", "spam", "effect_states"];

/// Rows per transaction (a dry run is one transaction, rolled back).
const BATCH: usize = 200;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub imported: usize,
    pub already_present: usize,
    /// (line, why)
    pub rejected: Vec<(usize, Rejection)>,
    /// Imported rows the duplicate detector paired with an earlier or stored inquiry.
    pub paired: usize,
    pub dry_run: bool,
}

/// Why a row was not imported, said in a locale by `ImportReport::lines_in`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// So many values where the header names `columns`.
    ValueCount { values: usize, columns: usize },
    /// A `received_at` that is not a past date (as given).
    NotPastDate(String),
    /// A file field's cell (the field) in a CSV that came without its folder (the admin's
    /// upload of a CSV alone).
    FilesNeedFolder(String),
    /// (field, file name): a name that is not a file of the folder beside the CSV.
    FileOutside(String, String),
    /// (field, file name, why): a file that could not be read.
    FileUnreadable(String, String, String),
    /// The row breaks the form's rules.
    Invalid(FieldErrors),
    /// A file could not be stored (why).
    NotStored(String),
}

fn num(n: usize) -> Arg<'static> {
    Arg::Num(i64::try_from(n).unwrap_or(i64::MAX))
}

impl ImportReport {
    /// The report as `onceform import` prints it.
    pub fn lines(&self) -> Vec<String> {
        self.lines_in(Locale::En, None)
    }

    /// The report in `locale` (the admin's import page), a row's field errors in the words
    /// `form` (the form imported into) has for them; in `en` as `onceform import` prints it.
    pub fn lines_in(&self, locale: Locale, form: Option<&FormConfig>) -> Vec<String> {
        let key = if self.dry_run { "admin-import-summary-dry-run" } else { "admin-import-summary" };
        let counts = [
            ("imported", num(self.imported)),
            ("present", num(self.already_present)),
            ("rejected", num(self.rejected.len())),
            ("paired", num(self.paired)),
        ];
        let mut out = vec![locale.format(key, &counts)];
        out.extend(self.rejected.iter().map(|(line, why)| {
            let reason = why.said_in(locale, form);
            locale.format("admin-import-line", &[("line", num(*line)), ("reason", Arg::Str(&reason))])
        }));
        out
    }
}

impl Rejection {
    /// In `locale`; a row's field errors as the command prints them (field names, English)
    /// unless `form` gives the words of another locale.
    fn said_in(&self, locale: Locale, form: Option<&FormConfig>) -> String {
        let s = Arg::Str;
        match self {
            Rejection::ValueCount { values, columns } => locale
                .format("admin-import-value-count", &[("values", num(*values)), ("columns", num(*columns))]),
            Rejection::NotPastDate(v) => locale.format("admin-import-not-past-date", &[("value", s(v))]),
            Rejection::FilesNeedFolder(field) => {
                locale.format("admin-import-files-need-folder", &[("name", s(field))])
            }
            Rejection::FileOutside(field, file) => {
                locale.format("admin-import-file-outside", &[("name", s(field)), ("path", s(file))])
            }
            Rejection::FileUnreadable(field, file, why) => locale.format(
                "admin-import-file-unreadable",
                &[("name", s(field)), ("path", s(file)), ("value", s(why))],
            ),
            Rejection::Invalid(errors) => match form {
                Some(form) if locale != Locale::En => locale.list(&form.admin_error_messages(errors, locale)),
                _ => errors.summary().join("; "),
            },
            Rejection::NotStored(why) => locale.format("admin-import-file-not-stored", &[("value", s(why))]),
        }
    }
}

pub struct ImportOptions<'a> {
    pub form: &'a str,
    pub source: &'a str,
    pub dry_run: bool,
    pub with_effects: bool,
    /// The folder beside the CSV whose files a file field's cells name (`drawing.pdf`, or
    /// several separated by `;`), stored in `files`; `None` (the admin's upload of a CSV
    /// alone): a file field's cell must be empty.
    pub files: Option<(&'a Path, &'a Files)>,
}

struct Row {
    raw: RawFields,
    /// The files its file fields' cells name.
    files: Attached,
    received_at: NaiveDateTime,
    source_id: Option<String>,
}

/// Imports as `import` does on `actor`'s word (the admin's import page), and audits who
/// imported what into which form; the audit note holds counts only, never a row's content.
/// The report, or why nothing was imported.
pub fn import_audited(
    pool: &Pool,
    config: &Config,
    keyring: &Arc<Keyring>,
    actor: &Actor,
    text: &str,
    o: &ImportOptions<'_>,
) -> Result<anyhow::Result<ImportReport>, DbError> {
    let report = import(pool, config, keyring, text, o);
    let outcome = match &report {
        // The audit note in the command's words.
        Ok(report) => report.lines().first().cloned().unwrap_or_default(),
        Err(_) => "refused: nothing imported".to_string(),
    };
    let effects = if o.with_effects { "with side effects" } else { "no side effects" };
    audit::write(
        pool,
        actor,
        "import",
        ("form", o.form),
        Some(&format!("source {}, {effects}: {outcome}", o.source)),
    )?;
    Ok(report)
}

/// Validates every row, then imports the valid ones in batches (digested with `keyring`).
pub fn import(
    pool: &Pool,
    config: &Config,
    keyring: &Arc<Keyring>,
    text: &str,
    o: &ImportOptions<'_>,
) -> anyhow::Result<ImportReport> {
    let form = config.form(o.form).ok_or_else(|| anyhow::anyhow!("there is no form `{}`", o.form))?;
    let mut records = csv::records(text).map_err(anyhow::Error::msg)?.into_iter();
    let (_, header) = records.next().ok_or_else(|| anyhow::anyhow!("the file is empty"))?;
    let header: Vec<String> = header.iter().map(|h| h.trim().to_string()).collect();
    let export = Export::of(&header);
    for h in &header {
        let known = ["received_at", "source_id", "submission_id"].contains(&h.as_str())
            || (export.is_export && EXPORT_COLUMNS.contains(&h.as_str()));
        if !known && form.field(h).is_none() {
            anyhow::bail!(
                "column `{h}` is not a field of form `{}` (nor received_at, source_id, submission_id)",
                o.form
            );
        }
    }
    let mut report = ImportReport { dry_run: o.dry_run, ..Default::default() };
    let mut rows = Vec::new();
    for (line, values) in records {
        match read_row(&header, values, &export).and_then(|row| with_files(row, form, o.files, o.dry_run)) {
            Ok(row) => rows.push(row),
            Err(reason) => report.rejected.push((line, reason)),
        }
    }
    let batch = if o.dry_run { rows.len().max(1) } else { BATCH };
    let form = Form::new(o.form, form.clone());
    for chunk in rows.chunks(batch) {
        let (imported, present, paired) = import_batch(pool, keyring, &form, chunk, o)?;
        report.imported += imported;
        report.already_present += present;
        report.paired += paired;
    }
    if !o.dry_run {
        // The pairs linked above are scored now, as `serve`'s screener would.
        while crate::services::duplicates::screen::screen_pending(config, pool)? > 0 {}
    }
    Ok(report)
}

/// What the header says about the file: an admin export (its `reference` column), and
/// whether `submission_id` is the row's identity (no `source_id` column).
struct Export {
    is_export: bool,
    id_from_submission: bool,
}

impl Export {
    fn of(header: &[String]) -> Export {
        let has = |c: &str| header.iter().any(|h| h == c);
        Export { is_export: has("submission_id") && has("reference"), id_from_submission: !has("source_id") }
    }

    /// A value as the export wrote it, without the quote that kept a spreadsheet from
    /// running it as a formula (`'=…`, `'+886…`).
    fn value(&self, v: String) -> String {
        match v.strip_prefix('\'') {
            Some(rest) if self.is_export && rest.starts_with(['=', '+', '-', '@', '\t', '\r']) => {
                rest.to_string()
            }
            _ => v,
        }
    }
}

fn read_row(header: &[String], values: Vec<String>, export: &Export) -> Result<Row, Rejection> {
    if values.len() != header.len() {
        return Err(Rejection::ValueCount { values: values.len(), columns: header.len() });
    }
    let (mut raw, mut received_at, mut source_id) = (Vec::new(), None, None);
    for (name, value) in header.iter().zip(values) {
        match name.as_str() {
            "received_at" if !value.trim().is_empty() => received_at = Some(parse_time(&value)?),
            "received_at" => {}
            "source_id" => source_id = Some(value.trim().to_string()).filter(|v| !v.is_empty()),
            "submission_id" if export.id_from_submission => {
                source_id = Some(value.trim().to_string()).filter(|v| !v.is_empty())
            }
            "submission_id" => {}
            n if export.is_export && EXPORT_COLUMNS.contains(&n) => {}
            _ => raw.push((name.clone(), export.value(value))),
        }
    }
    Ok(Row { raw, files: Attached::new(), received_at: received_at.unwrap_or_else(now), source_id })
}

/// `row` with its file fields' cells (file names in the folder beside the CSV) read as its
/// files, checked with the rest of the row by the form's rules; a valid row's files are
/// stored unless `dry_run` (an invalid row's never are). Why not, for a row refused.
fn with_files(
    row: Row,
    form: &FormConfig,
    files: Option<(&Path, &Files)>,
    dry_run: bool,
) -> Result<Row, Rejection> {
    let is_file = |name: &str| form.field(name).is_some_and(|f| f.is_file());
    let (cells, raw): (RawFields, RawFields) = row.raw.into_iter().partition(|(n, _)| is_file(n));
    let mut received = Vec::new();
    for (name, value) in cells.into_iter().filter(|(_, v)| !v.trim().is_empty()) {
        let Some((dir, store)) = files else {
            return Err(Rejection::FilesNeedFolder(name));
        };
        // One file per name, as a browser repeats a field's name.
        for file_name in value.split(';').map(str::trim).filter(|n| !n.is_empty()) {
            let file = read_file(dir, &name, file_name, store)?;
            received.push((name.clone(), file));
        }
    }
    let attached: Attached = received.iter().map(|(n, r)| (n.clone(), r.file.clone())).collect();
    normalise_with(form, &raw, &attached).map_err(Rejection::Invalid)?;
    if let (Some((_, store)), false) = (files, dry_run) {
        for (_, file) in received {
            file.commit(store.store()).map_err(|e| Rejection::NotStored(e.to_string()))?;
        }
    }
    Ok(Row { raw, files: attached, ..row })
}

/// The file `file_name` of `dir` (a name in that folder, never a path out of it) that the
/// cell of `field` names, read but not stored.
fn read_file(dir: &Path, field: &str, file_name: &str, files: &Files) -> Result<Received, Rejection> {
    let relative = Path::new(file_name);
    if !relative.components().all(|c| matches!(c, std::path::Component::Normal(_))) {
        return Err(Rejection::FileOutside(field.to_string(), file_name.to_string()));
    }
    let unreadable = |e: std::io::Error| {
        Rejection::FileUnreadable(field.to_string(), file_name.to_string(), e.to_string())
    };
    let bytes = std::fs::read(dir.join(relative)).map_err(unreadable)?;
    let mut incoming = files.begin().map_err(unreadable)?;
    incoming.write(&bytes).map_err(unreadable)?;
    Ok(Received::new(incoming, file_name))
}

/// RFC 3339, `YYYY-MM-DD HH:MM:SS` (UTC) or a date.
fn parse_time(v: &str) -> Result<NaiveDateTime, Rejection> {
    let v = v.trim();
    DateTime::parse_from_rfc3339(v)
        .map(|t| t.naive_utc())
        .or_else(|_| NaiveDateTime::parse_from_str(v, "%Y-%m-%d %H:%M:%S"))
        .or_else(|_| NaiveDate::parse_from_str(v, "%Y-%m-%d").map(|d| d.and_time(chrono::NaiveTime::MIN)))
        .ok()
        .filter(|t| *t <= now())
        .ok_or_else(|| Rejection::NotPastDate(v.to_string()))
}

enum Tx {
    Db(DbError),
    DryRun((usize, usize, usize)),
}

impl From<diesel::result::Error> for Tx {
    fn from(e: diesel::result::Error) -> Self {
        Tx::Db(e.into())
    }
}

/// (imported, already present, paired) of one batch, in one transaction.
fn import_batch(
    pool: &Pool,
    keyring: &Arc<Keyring>,
    form: &Form,
    rows: &[Row],
    o: &ImportOptions<'_>,
) -> Result<(usize, usize, usize), DbError> {
    with_conn!(pool, |c| {
        let result = c.write_tx(|c| {
            let (mut new_ids, mut present) = (Vec::new(), 0);
            for row in rows {
                let Ok(fields) = normalise_with(form.config(), &row.raw, &row.files) else { continue };
                let identity = match &row.source_id {
                    Some(id) => format!("{}\nid\n{id}", o.source),
                    None => format!("{}\nrow\n{}\n{}", o.source, fields.to_json(), row.received_at),
                };
                let digest = keyring.digest(&identity);
                let key = OperationId::imported(digest.split_once(':').map_or(digest.as_str(), |(_, h)| h));
                let intake = Intake {
                    form: form.clone(),
                    operation_id: Some(key),
                    channel: Channel::Api,
                    fields,
                    scans: Default::default(),
                    received: None,
                    test: false,
                };
                match import_row(c, keyring, intake, row.received_at, o.with_effects)? {
                    Imported::New(id) => new_ids.push(id),
                    Imported::AlreadyPresent => present += 1,
                }
            }
            let paired = c.paired_among(&new_ids)?;
            let counts = (new_ids.len(), present, paired.len());
            if o.dry_run {
                return Err(Tx::DryRun(counts));
            }
            Ok(counts)
        });
        match result {
            Ok(counts) | Err(Tx::DryRun(counts)) => Ok(counts),
            Err(Tx::Db(e)) => Err(e),
        }
    })
}
