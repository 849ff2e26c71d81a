//! The admin's review of conflicts (a known operation ID that arrived with different
//! content): the queue by status, one conflict with the inquiry accepted from it, and the two
//! decisions: dismiss it, or accept its content as a new inquiry (its own submission,
//! operation ID and side-effect records). Each decision writes its audit row.

use crate::config::{Form, LiveForms};
use crate::db::admin::review::ReviewStore;
use crate::db::{DbError, Pool, Store};
use crate::domain::{normalise_with, split_stored, ConflictStatus, FieldErrors, OperationId, SubmissionId};
use crate::services::accept::{Acceptor, Intake, Outcome};
use crate::services::audit::{self, Actor};
use crate::services::request_log::Channel;
use crate::with_conn;

pub use crate::db::admin::review::ConflictRow;

/// The operation ID under which a conflict's content is accepted as a new inquiry.
pub fn accepted_operation_id(conflict_id: &str) -> String {
    format!("conflict.{conflict_id}")
}

/// The number of conflicts in each status.
pub type StatusCounts = Vec<(ConflictStatus, i64)>;

/// The number of conflicts in each status, and at most `limit` of those in `status`.
pub fn queue(
    pool: &Pool,
    status: ConflictStatus,
    limit: i64,
) -> Result<(StatusCounts, Vec<ConflictRow>), DbError> {
    with_conn!(pool, |c| {
        let counts = c.conflict_counts()?;
        let rows = c.conflicts_in_status(status, limit)?;
        Ok((counts, rows))
    })
}

/// The conflict `id`, with the submission accepted from it, if any.
pub fn conflict(pool: &Pool, id: &str) -> Result<Option<(ConflictRow, Option<SubmissionId>)>, DbError> {
    with_conn!(pool, |c| {
        let Some(row) = c.conflict_row(id)? else { return Ok(None) };
        let accepted = c.find_submission(&row.form, &accepted_operation_id(&row.id))?;
        Ok(Some((row, accepted.map(|s| s.id))))
    })
}

/// Why an action on a conflict did not apply.
#[derive(Debug, thiserror::Error)]
pub enum ConflictActionError {
    #[error("No such conflict.")]
    NotFound,
    #[error("The conflict is no longer open; reload the page.")]
    NotOpen,
    #[error("The conflicting content has been purged.")]
    Purged,
    #[error("The form {0} is no longer configured.")]
    FormGone(String),
    #[error(transparent)]
    Unacceptable(AcceptAsNewError),
    #[error("The conflict was decided meanwhile; the new inquiry {0} exists.")]
    DecidedMeanwhile(String),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for ConflictActionError {
    fn from(e: diesel::result::Error) -> Self {
        ConflictActionError::Db(e.into())
    }
}

impl From<AcceptAsNewError> for ConflictActionError {
    fn from(e: AcceptAsNewError) -> Self {
        match e {
            AcceptAsNewError::Db(e) => ConflictActionError::Db(e),
            refusal => ConflictActionError::Unacceptable(refusal),
        }
    }
}

/// Dismisses the open conflict `id` on `actor`'s word.
pub fn dismiss(pool: &Pool, actor: &Actor, id: &str, note: &str) -> Result<(), ConflictActionError> {
    with_conn!(pool, |c| Ok::<_, DbError>(c.write_tx(|c| {
        if c.conflict_row(id)?.is_none() {
            return Err(ConflictActionError::NotFound);
        }
        if !c.set_conflict_status(id, ConflictStatus::Open, ConflictStatus::Dismissed)? {
            return Err(ConflictActionError::NotOpen);
        }
        audit::record(c, actor, "conflict.dismiss", ("conflict", id), Some(note))?;
        Ok(())
    })))?
}

/// Accepts the open conflict `id`'s content as a new inquiry under the form in force, first
/// (idempotent by the derived operation ID), then records the decision; the new submission.
pub fn accept_as_new(
    pool: &Pool,
    acceptor: &Acceptor,
    forms: &LiveForms,
    actor: &Actor,
    id: &str,
    note: &str,
) -> Result<SubmissionId, ConflictActionError> {
    let row = match with_conn!(pool, |c| c.conflict_row(id).map_err(DbError::from))? {
        None => return Err(ConflictActionError::NotFound),
        Some(row) if row.status != ConflictStatus::Open => return Err(ConflictActionError::NotOpen),
        Some(row) if row.fields_json.is_none() => return Err(ConflictActionError::Purged),
        Some(row) => row,
    };
    let Some(form) = forms.now().get(&row.form).cloned() else {
        return Err(ConflictActionError::FormGone(row.form));
    };
    let submission_id = accept_content(acceptor, &row, form)?;
    let new_ref = crate::base::format::reference(&submission_id);
    let note = match note.is_empty() {
        true => format!("accepted as new inquiry {new_ref}"),
        false => format!("{note} (accepted as new inquiry {new_ref})"),
    };
    with_conn!(pool, |c| Ok::<_, DbError>(c.write_tx(|c| {
        if !c.set_conflict_status(id, ConflictStatus::Open, ConflictStatus::Accepted)? {
            return Err(ConflictActionError::DecidedMeanwhile(new_ref));
        }
        audit::record(c, actor, "conflict.accept", ("conflict", id), Some(&note))?;
        Ok(submission_id)
    })))?
}

/// Why a conflict's content cannot be accepted as a new inquiry.
#[derive(Debug, thiserror::Error)]
pub enum AcceptAsNewError {
    #[error("The content does not fit the form now: {}.", .errors.summary().join("; "))]
    Unfit { form: Form, errors: FieldErrors },
    #[error("No operation ID for this conflict: {0}.")]
    NoOperationId(String),
    #[error("An inquiry with other content was already accepted for it.")]
    OtherContent,
    #[error("The new inquiry is being written; try again in a moment.")]
    InProgress,
    #[error("The operation ID has expired.")]
    Expired,
    #[error(transparent)]
    Db(#[from] DbError),
}

/// The new submission's id, or why the content cannot be accepted.
fn accept_content(
    acceptor: &Acceptor,
    row: &ConflictRow,
    form: Form,
) -> Result<SubmissionId, AcceptAsNewError> {
    let stored = crate::domain::stored_fields::shown(row.fields_json.as_deref());
    let (raw, files) = split_stored(&*form, stored);
    let fields = normalise_with(&*form, &raw, &files)
        .map_err(|errors| AcceptAsNewError::Unfit { form: form.clone(), errors })?;
    let operation_id = OperationId::parse(&accepted_operation_id(&row.id))
        .map_err(|e| AcceptAsNewError::NoOperationId(e.to_string()))?;
    let intake = Intake {
        form,
        operation_id: Some(operation_id),
        channel: Channel::Api,
        fields,
        scans: Default::default(),
        received: None,
        test: false,
    };
    match acceptor.accept(intake)? {
        Outcome::Created(r) | Outcome::Replayed(r) => Ok(r.submission_id),
        Outcome::Conflict { .. } => Err(AcceptAsNewError::OtherContent),
        Outcome::InProgress { .. } => Err(AcceptAsNewError::InProgress),
        Outcome::Expired { .. } => Err(AcceptAsNewError::Expired),
    }
}
