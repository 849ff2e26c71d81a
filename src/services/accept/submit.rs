//! The submit use case, for every way in (JSON API, HTML form): a retry repeated byte for
//! byte is answered from memory before it is normalised again; then validation (a request the
//! live form refuses whose key was accepted under another version of the form is judged
//! under that version, `versions`), a retry of
//! the same content answered from memory or (a key this process saw committed) from a
//! gathered read, spam screening (fill time, captcha: outside any transaction, only for what
//! is not such a retry) and the accept transaction.

use super::{Acceptor, AsReceived, Intake, Outcome};
use crate::config::Form;
use crate::db::DbError;
use crate::domain::{
    normalise_with, raw_digest, Attached, FieldErrors, OperationId, RawFields, ScanState, Scans, SpamReason,
};
use crate::services::request_log::Channel;
use crate::services::spam::{Screening, SpamGuard};

/// Why a submission was not accepted.
#[derive(Debug)]
pub enum SubmitError {
    /// The fields are not valid for the form; nothing was stored.
    Invalid(FieldErrors),
    /// The database could not take it; nothing was stored.
    Store(DbError),
}

/// One request to submit to a form, as the web layer parsed it.
pub struct SubmitRequest<'a> {
    pub form: &'a Form,
    pub channel: Channel,
    /// `None` for a keyless post.
    pub operation_id: Option<OperationId>,
    pub raw: &'a RawFields,
    /// The files the store received for the form's file fields.
    pub files: &'a Attached,
    pub screening: &'a Screening,
    /// The scan verdicts of `files` (`services::files::scan`).
    pub scans: Scans,
}

impl Acceptor {
    /// Submits `s` exactly once per (form, operation ID), screened for spam by `spam`.
    pub async fn submit(&self, spam: &SpamGuard, s: SubmitRequest<'_>) -> Result<Outcome, SubmitError> {
        let SubmitRequest { form, channel, operation_id, raw, files, screening, scans } = s;
        let raw_digest = operation_id.as_ref().map(|_| raw_digest(raw, files));
        let keyed = operation_id.as_ref().zip(raw_digest.as_ref());
        if let Some(outcome) =
            keyed.and_then(|(op, digest)| self.replay_same_request(form, op, digest, channel))
        {
            return Ok(outcome);
        }
        let received = || AsReceived { raw: raw.clone(), files: files.clone() };
        let mut fields = match (normalise_with(&**form, raw, files), &operation_id) {
            (Ok(fields), _) => fields,
            // A retry of a key accepted under another version of the form is judged under it:
            // a replay or a conflict, never refused because the form changed since.
            (Err(errors), Some(op)) => {
                return match self.judge_refused(form, op, received(), channel).await {
                    Ok(Some(outcome)) => Ok(outcome),
                    Ok(None) => Err(SubmitError::Invalid(errors)),
                    Err(e) => Err(SubmitError::Store(e)),
                }
            }
            (Err(errors), None) => return Err(SubmitError::Invalid(errors)),
        };
        fields.locale = screening.locale.map(crate::base::i18n::Locale::tag);
        if let Some(outcome) =
            keyed.and_then(|(op, digest)| self.replay_from_memory(form, op, &fields, digest, channel))
        {
            return Ok(outcome);
        }
        if let Some(op) = &operation_id {
            if let Some(outcome) = self.replay_committed(form, op, &fields, channel).await {
                return Ok(outcome);
            }
        }
        if scans.values().any(|s| *s == ScanState::Malware) {
            fields.spam_reason = Some(SpamReason::Malware);
        }
        if fields.spam_reason().is_none() {
            let verdict = spam.screen(form, screening, operation_id.as_ref()).await;
            fields.spam_reason = verdict;
        }
        let received = operation_id.as_ref().map(|_| received());
        let intake =
            Intake { form: form.clone(), operation_id, channel, fields, scans, received, test: false };
        let acceptor = self.clone();
        let outcome = tokio::task::spawn_blocking(move || acceptor.accept(intake))
            .await
            .unwrap_or_else(|_| Err(DbError::Unavailable("blocking pool".into())))
            .map_err(SubmitError::Store)?;
        if let Outcome::Created(r) = &outcome {
            // Ties this request's ID to the submission the workers' lines name.
            tracing::info!(submission = %r.submission_id, "accepted");
        }
        Ok(outcome)
    }
}
