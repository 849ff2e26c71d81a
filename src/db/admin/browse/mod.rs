//! What the dashboard, the submissions list and a submission's page read: one trait,
//! `BrowseStore`. The dashboard's figures (`dashboard`) and the list with its search
//! (`list`) are written in their own files.

mod dashboard;
mod list;

pub(crate) use list::register_unicode_lower;

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::db::admin::effects::{AttemptRow, EffectAdminStore, EffectRow};
use crate::db::schema::{
    conflicts, deliveries, duplicate_pairs, side_effects, submission_files, submissions,
};
use crate::db::DbConnection;
use crate::domain::{
    Channel, ConflictStatus, DeliveryOutcome, EffectState, PairStatus, ScanState, SpamReason, SubmissionId,
};
pub use dashboard::{Dashboard, DayCount};
pub use list::{like_pattern, SubmissionFilter};

/// A stored submission as the admin pages show it.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = submissions)]
pub struct SubmissionRow {
    pub id: SubmissionId,
    pub form: String,
    pub operation_id: String,
    pub fields_json: Option<String>,
    pub channel: Channel,
    pub keyless: bool,
    pub spam: bool,
    pub received_at: NaiveDateTime,
    pub content_purged_at: Option<NaiveDateTime>,
    pub duplicate_of: Option<SubmissionId>,
    /// Why it is spam (a `SpamReason`'s text); `None` for a honeypot hit stored before
    /// reasons were kept.
    pub spam_reason: Option<SpamReason>,
    pub journey_id: Option<String>,
    /// What a tombstone keeps of the content: the consent answers (`db::purge::tombstone`).
    pub consent_json: Option<String>,
    /// The route it took (`[[forms.F.routes]]`: its name, or `#INDEX`), as stored then.
    pub route: Option<String>,
    /// The version of its form it was accepted under (`None`: unknown, accepted before
    /// versions were kept).
    pub form_version: Option<String>,
    /// A test submission from the admin (no side-effect records).
    pub test: bool,
}

/// (kind, state) of each effect record, by submission id.
pub type EffectStates = BTreeMap<SubmissionId, Vec<(String, EffectState)>>;

#[derive(Debug, Clone, Queryable)]
pub struct DeliveryRow {
    pub received_at: NaiveDateTime,
    pub channel: Channel,
    pub outcome: DeliveryOutcome,
    pub http_status: i32,
}

#[derive(Debug, Clone, Queryable)]
pub struct RelatedConflict {
    pub id: String,
    pub status: ConflictStatus,
    pub attempts: i32,
    pub first_seen_at: NaiveDateTime,
    pub last_seen_at: NaiveDateTime,
}

#[derive(Debug, Clone, Queryable)]
pub struct RelatedPair {
    pub id: String,
    pub original_id: SubmissionId,
    pub duplicate_id: SubmissionId,
    pub score: f64,
    pub reasons: String,
    pub status: PairStatus,
}

/// Everything a submission's page shows.
#[derive(Debug, Clone)]
pub struct SubmissionPage {
    pub submission: SubmissionRow,
    pub deliveries: Vec<DeliveryRow>,
    /// Each effect record with its attempts and lookups, oldest first.
    pub effects: Vec<(EffectRow, Vec<AttemptRow>)>,
    pub conflicts: Vec<RelatedConflict>,
    pub pairs: Vec<RelatedPair>,
    /// What the malware scan said of each attached file, by SHA-256.
    pub scans: BTreeMap<String, ScanState>,
}

impl SubmissionPage {
    /// Whether clamd could not scan a file of it (its effects are held for an admin).
    pub fn unscannable(&self) -> bool {
        self.scans.values().any(|s| *s == ScanState::Unscannable)
    }
}

pub trait BrowseStore {
    fn dashboard(&mut self, now: NaiveDateTime) -> QueryResult<Dashboard>;
    /// One page of the filtered list, newest first, and how many match in all.
    fn list_submissions(
        &mut self,
        filter: &SubmissionFilter,
        limit: i64,
        offset: i64,
    ) -> QueryResult<(Vec<SubmissionRow>, i64)>;
    /// At most `limit` of the filtered submissions, newest first, after the one at `after`
    /// (its received_at and id) in that order: keyset pages for the read API.
    fn submissions_page(
        &mut self,
        filter: &SubmissionFilter,
        after: Option<(NaiveDateTime, &str)>,
        limit: i64,
    ) -> QueryResult<Vec<SubmissionRow>>;
    /// Submissions whose stored content matches `pattern` (see `like_pattern`), newest first.
    fn search_submissions(&mut self, pattern: &str, limit: i64) -> QueryResult<Vec<SubmissionRow>>;
    /// The (kind, state) of the effect records of these submissions, by submission id.
    fn effect_states(&mut self, ids: &[SubmissionId]) -> QueryResult<EffectStates>;
    fn submission_page(&mut self, id: &str) -> QueryResult<Option<SubmissionPage>>;
    /// (effect id, submission id) of these effects.
    fn effect_submissions(&mut self, effect_ids: &[String]) -> QueryResult<Vec<(String, String)>>;
}

impl BrowseStore for DbConnection {
    fn dashboard(&mut self, now: NaiveDateTime) -> QueryResult<Dashboard> {
        dashboard::dashboard(self, now)
    }

    fn list_submissions(
        &mut self,
        filter: &SubmissionFilter,
        limit: i64,
        offset: i64,
    ) -> QueryResult<(Vec<SubmissionRow>, i64)> {
        list::list_submissions(self, filter, limit, offset)
    }

    fn submissions_page(
        &mut self,
        filter: &SubmissionFilter,
        after: Option<(NaiveDateTime, &str)>,
        limit: i64,
    ) -> QueryResult<Vec<SubmissionRow>> {
        list::submissions_page(self, filter, after, limit)
    }

    fn search_submissions(&mut self, term: &str, limit: i64) -> QueryResult<Vec<SubmissionRow>> {
        list::search_submissions(self, term, limit)
    }

    fn effect_states(&mut self, ids: &[SubmissionId]) -> QueryResult<EffectStates> {
        let rows: Vec<(SubmissionId, String, EffectState)> = side_effects::table
            .filter(side_effects::submission_id.eq_any(ids))
            .order((side_effects::submission_id, side_effects::kind, side_effects::batch))
            .select((side_effects::submission_id.assume_not_null(), side_effects::kind, side_effects::state))
            .load(self)?;
        let mut by_submission = EffectStates::new();
        for (id, kind, state) in rows {
            by_submission.entry(id).or_default().push((kind, state));
        }
        Ok(by_submission)
    }

    fn submission_page(&mut self, id: &str) -> QueryResult<Option<SubmissionPage>> {
        let Some(submission) = submissions::table
            .filter(submissions::id.eq(id))
            .select(SubmissionRow::as_select())
            .first(self)
            .optional()?
        else {
            return Ok(None);
        };
        let deliveries = deliveries::table
            .filter(deliveries::submission_id.eq(id))
            .order((deliveries::received_at, deliveries::id))
            .select((
                deliveries::received_at,
                deliveries::channel,
                deliveries::outcome,
                deliveries::http_status,
            ))
            .load(self)?;
        let mut effects = Vec::new();
        for effect in self.effects_of_submission(id)? {
            let attempts = self.attempts_of(&effect.id)?;
            effects.push((effect, attempts));
        }
        let conflicts = conflicts::table
            .filter(conflicts::submission_id.eq(id))
            .order(conflicts::first_seen_at)
            .select((
                conflicts::id,
                conflicts::status,
                conflicts::attempts,
                conflicts::first_seen_at,
                conflicts::last_seen_at,
            ))
            .load(self)?;
        let pairs = duplicate_pairs::table
            .filter(duplicate_pairs::original_id.eq(id).or(duplicate_pairs::duplicate_id.eq(id)))
            .order((duplicate_pairs::score.desc(), duplicate_pairs::created_at))
            .select((
                duplicate_pairs::id,
                duplicate_pairs::original_id,
                duplicate_pairs::duplicate_id,
                duplicate_pairs::score,
                duplicate_pairs::reasons,
                duplicate_pairs::status,
            ))
            .load(self)?;
        let scans = submission_files::table
            .filter(submission_files::submission_id.eq(id))
            .select((submission_files::sha256, submission_files::scan))
            .load(self)?
            .into_iter()
            .collect();
        Ok(Some(SubmissionPage { submission, deliveries, effects, conflicts, pairs, scans }))
    }

    fn effect_submissions(&mut self, effect_ids: &[String]) -> QueryResult<Vec<(String, String)>> {
        side_effects::table
            .filter(side_effects::id.eq_any(effect_ids))
            .filter(side_effects::submission_id.is_not_null())
            .select((side_effects::id, side_effects::submission_id.assume_not_null()))
            .load(self)
    }
}
