//! Rows as read (`X`) and as written (`NewX`).

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::schema::{conflicts, deliveries, side_effects, submission_files, submissions, uploads};
use crate::domain::{
    AttemptOutcome, Channel, ConflictStatus, DeliveryOutcome, EffectId, EffectState, RecordKind, ScanState,
    SpamReason, SubmissionId,
};

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = submissions)]
pub struct NewSubmission {
    pub id: SubmissionId,
    pub form: String,
    pub operation_id: String,
    pub fingerprint: String,
    pub fields_json: Option<String>,
    pub response_body: String,
    pub channel: Channel,
    pub keyless: bool,
    pub spam: bool,
    /// Why it is spam.
    pub spam_reason: Option<SpamReason>,
    pub email_digest: Option<String>,
    pub phone_digest: Option<String>,
    /// Keyed digest of the canonical name plus company (duplicate matching).
    pub name_digest: Option<String>,
    pub received_at: NaiveDateTime,
    pub operation_expires_at: NaiveDateTime,
    pub journey_id: Option<String>,
    /// The visitor's negotiated locale on a `locale = "auto"` form (their confirmation's).
    pub locale: Option<String>,
    /// The route that applied (`[[forms.F.routes]]`: its name, or `#INDEX`).
    pub route: Option<String>,
    /// The version of its form it was accepted under (`config::definition`).
    pub form_version: Option<String>,
    /// A test made from the admin: no side-effect records, no duplicate detection.
    pub test: bool,
}

/// What the accept path and the status endpoint need of a stored submission.
#[derive(Debug, Clone, Queryable, QueryableByName, Selectable)]
#[diesel(table_name = submissions)]
pub struct Submission {
    pub id: SubmissionId,
    pub form: String,
    pub operation_id: String,
    pub fingerprint: String,
    pub response_body: String,
    pub spam: bool,
    pub received_at: NaiveDateTime,
    pub operation_expires_at: NaiveDateTime,
    pub content_purged_at: Option<NaiveDateTime>,
    /// The version of its form it was accepted under; `None`: unknown (accepted before
    /// versions were kept).
    pub form_version: Option<String>,
}

/// A submission's side-effect record (an inbound event's: `hooks::NewEventEffect`).
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = side_effects, treat_none_as_default_value = false)]
pub struct NewEffect {
    pub id: EffectId,
    pub submission_id: SubmissionId,
    pub kind: RecordKind,
    pub batch: i32,
    pub effect_key: String,
    pub state: EffectState,
    /// Waits for a duplicate decision before the workers may claim it.
    pub held: bool,
    /// Why a record written as CANCELLED was (the confirmation cap).
    pub last_error: Option<String>,
    pub next_attempt_at: NaiveDateTime,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = side_effects)]
pub struct Effect {
    pub id: EffectId,
    pub kind: RecordKind,
    pub batch: i32,
    pub state: EffectState,
    pub attempts: i32,
    pub provider_ref: Option<String>,
    pub updated_at: NaiveDateTime,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = conflicts)]
pub struct NewConflict {
    pub id: String,
    pub submission_id: SubmissionId,
    pub fingerprint: String,
    pub fields_json: Option<String>,
    pub status: ConflictStatus,
    pub attempts: i32,
    pub first_seen_at: NaiveDateTime,
    pub last_seen_at: NaiveDateTime,
}

/// A `None` is written as NULL (the columns' default), so one statement fits every row.
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = deliveries, treat_none_as_default_value = false)]
pub struct NewDelivery {
    pub id: String,
    pub form: Option<String>,
    pub operation_id: Option<String>,
    pub submission_id: Option<SubmissionId>,
    pub channel: Channel,
    pub outcome: DeliveryOutcome,
    pub http_status: i32,
    pub received_at: NaiveDateTime,
}

/// A claimed side-effect record with what its delivery needs of its owner: a submission,
/// or an inbound event.
#[derive(Debug, Clone, Queryable)]
pub struct JobRow {
    pub id: EffectId,
    pub kind: RecordKind,
    pub batch: i32,
    pub effect_key: String,
    pub state: EffectState,
    pub attempts: i32,
    pub submission: Option<OwningSubmission>,
    pub event: Option<OwningEvent>,
}

impl JobRow {
    /// Its owner's content was purged (retention, erasure): there is nothing left to send.
    pub fn purged(&self) -> bool {
        match (&self.submission, &self.event) {
            (Some(s), _) => s.fields_json.is_none(),
            (None, Some(e)) => e.body.is_none(),
            (None, None) => false,
        }
    }
}

/// What a job reads of the submission owning it.
#[derive(Debug, Clone, Queryable)]
pub struct OwningSubmission {
    pub id: SubmissionId,
    pub form: String,
    pub fields_json: Option<String>,
    pub received_at: NaiveDateTime,
    pub journey_id: Option<String>,
    pub locale: Option<String>,
    /// The route that applied, as stored (its name, or `#INDEX`).
    pub route: Option<String>,
    /// The submission an admin decided this one is a duplicate of.
    pub duplicate_of: Option<SubmissionId>,
}

/// What a job reads of the inbound event owning it (`body`: `None` once purged).
#[derive(Debug, Clone, Queryable)]
pub struct OwningEvent {
    pub id: String,
    pub source: String,
    pub event_id: String,
    pub body: Option<String>,
    pub content_type: String,
    pub received_at: NaiveDateTime,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = super::schema::effect_attempts, treat_none_as_default_value = false)]
pub struct NewAttempt {
    pub id: String,
    pub effect_id: EffectId,
    pub started_at: NaiveDateTime,
    pub duration_ms: i32,
    pub outcome: AttemptOutcome,
    pub http_status: Option<i32>,
    pub smtp_code: Option<i32>,
    pub error_class: Option<String>,
    pub provider_ref: Option<String>,
    pub detail: Option<String>,
}

/// The state a finished attempt or lookup moves its record to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub state: EffectState,
    pub next_attempt_at: NaiveDateTime,
    pub provider_ref: Option<String>,
    pub last_error: Option<String>,
}

/// A blob a submission's fields name, written with the submission.
#[derive(Debug, Clone, Insertable, Queryable, Selectable)]
#[diesel(table_name = submission_files)]
pub struct SubmissionFile {
    pub submission_id: SubmissionId,
    pub sha256: String,
    pub scan: ScanState,
}

/// A file uploaded ahead of its submission (`POST /api/forms/{form}/uploads`).
#[derive(Debug, Clone, Insertable, Queryable, Selectable)]
#[diesel(table_name = uploads)]
pub struct Upload {
    pub id: String,
    pub form: String,
    pub sha256: String,
    pub size: i64,
    pub content_type: String,
    pub file_name: String,
    pub created_at: NaiveDateTime,
}
