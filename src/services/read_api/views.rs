//! The JSON of the read API's records, made from the admin stores' rows. Times are RFC 3339
//! in UTC; a tombstone's `fields` and `files` are `null` and empty whatever was stored.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Reader;
use crate::base::format::{reference, rfc3339};
use crate::db::admin::browse::{RelatedConflict, RelatedPair, SubmissionRow};
use crate::db::admin::effects::{AttemptRow, EffectRow};
use crate::db::admin::review::PairRow;
use crate::domain::{FieldType, FileRef, ScanState};
use crate::services::duplicates::reason::Reason;

#[derive(Debug, Serialize)]
pub struct SubmissionView {
    pub id: String,
    pub reference: String,
    pub form: String,
    pub operation_id: String,
    pub received_at: String,
    pub channel: &'static str,
    pub keyless: bool,
    pub spam: bool,
    /// `stored`, or `purged` for a tombstone (retention or erasure took the content).
    pub content: &'static str,
    /// The text fields as stored; `null` for a tombstone.
    pub fields: Option<BTreeMap<String, String>>,
    pub files: Vec<FileView>,
    /// The route it took (`[[forms.F.routes]]`: its name, or `#INDEX`); `null` for none.
    pub route: Option<String>,
    /// The version of its form it was accepted under (`form_versions`); `null` when it was
    /// accepted before versions were kept.
    pub version: Option<String>,
    pub journey_id: Option<String>,
    pub duplicate_of: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct FileView {
    pub field: String,
    pub name: String,
    pub content_type: String,
    pub size: u64,
    pub sha256: String,
    /// A signed link (a week long) that serves the file; `null` for spam.
    pub url: Option<String>,
    /// The malware scan's word, where the form scans.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan: Option<&'static str>,
}

impl SubmissionView {
    pub fn of(
        row: SubmissionRow,
        reader: &Reader<'_>,
        scans: &BTreeMap<String, ScanState>,
    ) -> SubmissionView {
        let purged = row.content_purged_at.is_some();
        let stored: BTreeMap<String, String> = match (&row.fields_json, purged) {
            (Some(json), false) => crate::domain::stored_fields::shown(Some(json)),
            _ => BTreeMap::new(),
        };
        let file_fields: Vec<&str> = reader
            .forms
            .get(&row.form)
            .map(|f| f.fields.iter().filter(|f| f.kind == FieldType::File).map(|f| f.name.as_str()).collect())
            .unwrap_or_default();
        let (mut fields, mut files) = (BTreeMap::new(), Vec::new());
        for (name, value) in stored {
            if !file_fields.contains(&name.as_str()) {
                fields.insert(name, value);
                continue;
            }
            for file in FileRef::stored_in(&value) {
                files.push(FileView {
                    url: (!row.spam).then(|| reader.links.link(&row.id, &file.sha256, reader.now)),
                    scan: scans.get(&file.sha256).map(|s| s.as_str()),
                    field: name.clone(),
                    name: file.name,
                    content_type: file.content_type,
                    size: file.size,
                    sha256: file.sha256,
                });
            }
        }
        SubmissionView {
            reference: reference(&row.id),
            id: row.id.to_string(),
            form: row.form,
            operation_id: row.operation_id,
            received_at: rfc3339(row.received_at),
            channel: row.channel.as_str(),
            keyless: row.keyless,
            spam: row.spam,
            content: if purged { "purged" } else { "stored" },
            fields: (!purged).then_some(fields),
            files,
            route: row.route,
            version: row.form_version,
            journey_id: row.journey_id,
            duplicate_of: row.duplicate_of.map(String::from),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct EffectView {
    pub id: String,
    pub submission_id: String,
    pub form: String,
    pub kind: String,
    pub batch: i32,
    pub state: &'static str,
    pub held: bool,
    pub attempt_count: i32,
    pub provider_ref: Option<String>,
    pub last_error: Option<String>,
    pub next_attempt_at: String,
    pub updated_at: String,
    /// Each attempt and lookup, oldest first (one submission's page only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<Vec<AttemptView>>,
}

impl EffectView {
    pub fn of(row: EffectRow, attempts: Option<Vec<AttemptRow>>) -> EffectView {
        EffectView {
            id: row.id.to_string(),
            submission_id: row.submission_id.to_string(),
            form: row.form,
            kind: row.kind.to_string(),
            batch: row.batch,
            state: row.state.as_str(),
            held: row.held,
            attempt_count: row.attempts,
            provider_ref: row.provider_ref,
            last_error: row.last_error,
            next_attempt_at: rfc3339(row.next_attempt_at),
            updated_at: rfc3339(row.updated_at),
            attempts: attempts.map(|a| a.into_iter().map(AttemptView::of).collect()),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct AttemptView {
    pub started_at: String,
    pub duration_ms: i32,
    pub outcome: &'static str,
    pub http_status: Option<i32>,
    pub smtp_code: Option<i32>,
    pub error_class: Option<String>,
    pub provider_ref: Option<String>,
    pub detail: Option<String>,
}

impl AttemptView {
    fn of(a: AttemptRow) -> AttemptView {
        AttemptView {
            started_at: rfc3339(a.started_at),
            duration_ms: a.duration_ms,
            outcome: a.outcome.as_str(),
            http_status: a.http_status,
            smtp_code: a.smtp_code,
            error_class: a.error_class,
            provider_ref: a.provider_ref,
            detail: a.detail,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct PairView {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub form: Option<String>,
    pub original_id: String,
    pub duplicate_id: String,
    pub score: f64,
    pub reasons: Vec<String>,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

impl PairView {
    pub fn of(p: PairRow) -> PairView {
        PairView {
            id: p.id,
            form: Some(p.form),
            original_id: p.original_id.to_string(),
            duplicate_id: p.duplicate_id.to_string(),
            score: p.score,
            reasons: Reason::sentences(&p.reasons),
            status: p.status.as_str(),
            decided_by: p.decided_by,
            decided_at: p.decided_at.map(rfc3339),
            created_at: Some(rfc3339(p.created_at)),
        }
    }

    pub fn related(p: RelatedPair) -> PairView {
        PairView {
            id: p.id,
            form: None,
            original_id: p.original_id.to_string(),
            duplicate_id: p.duplicate_id.to_string(),
            score: p.score,
            reasons: Reason::sentences(&p.reasons),
            status: p.status.as_str(),
            decided_by: None,
            decided_at: None,
            created_at: None,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct ConflictView {
    pub id: String,
    pub status: &'static str,
    pub attempts: i32,
    pub first_seen_at: String,
    pub last_seen_at: String,
}

impl ConflictView {
    pub fn of(c: RelatedConflict) -> ConflictView {
        ConflictView {
            id: c.id,
            status: c.status.as_str(),
            attempts: c.attempts,
            first_seen_at: rfc3339(c.first_seen_at),
            last_seen_at: rfc3339(c.last_seen_at),
        }
    }
}
