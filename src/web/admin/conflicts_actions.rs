//! What an admin does with an open conflict: dismiss it, or accept the conflicting content as
//! a new inquiry (its own submission, operation ID and side-effect records).

use crate::base::i18n::{Arg, Locale};
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::{accepted_operation_id, fields_of};
use crate::base::format::reference;
use crate::config::Form;
use crate::db::admin::review::{ConflictRow, ReviewStore};
use crate::db::{DbError, Store};
use crate::domain::{normalise_with, split_stored, ConflictStatus, OperationId, SubmissionId};
use crate::services::accept::{Acceptor, Intake, Outcome};
use crate::services::request_log::Channel;
use crate::web::admin::audit;
use crate::web::admin::flash::Flash;
use crate::web::admin::guard::{AdminAction, CsrfForm, SessionUser};
use crate::web::admin::{blocking, done};
use crate::web::state::AppState;
use crate::with_conn;

#[derive(Deserialize)]
pub struct ConflictForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    note: String,
}

impl CsrfForm for ConflictForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
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

impl crate::web::admin::Refusal for ConflictActionError {
    fn status(&self) -> StatusCode {
        match self {
            ConflictActionError::NotFound => StatusCode::NOT_FOUND,
            ConflictActionError::Db(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::CONFLICT,
        }
    }

    fn text(&self, locale: Locale) -> String {
        match self {
            ConflictActionError::NotFound => locale.text("admin-refused-no-such-conflict"),
            ConflictActionError::NotOpen => locale.text("admin-refused-conflict-not-open"),
            ConflictActionError::Purged => locale.text("admin-refused-conflict-purged"),
            ConflictActionError::FormGone(form) => {
                locale.format("admin-refused-form-gone", &[("form", Arg::Str(form))])
            }
            // The accept rules' own sentence (a field the form no longer takes, …).
            ConflictActionError::Unacceptable(e) => e.to_string(),
            ConflictActionError::DecidedMeanwhile(r) => {
                locale.format("admin-refused-decided-meanwhile", &[("reference", Arg::Str(r))])
            }
            ConflictActionError::Db(_) => locale.text("admin-db-unavailable"),
        }
    }
}

pub async fn act(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    action: AdminAction<ConflictForm>,
) -> Result<HttpResponse, crate::web::admin::Said<ConflictActionError>> {
    let locale = action.user.locale;
    crate::web::admin::said(locale, act_on(state, path, action).await)
}

async fn act_on(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    action: AdminAction<ConflictForm>,
) -> Result<HttpResponse, ConflictActionError> {
    let (id, name) = path.into_inner();
    let AdminAction { user, form } = action;
    let note = form.note.trim().to_string();
    Ok(match name.as_str() {
        "dismiss" => done("/admin/conflicts?status=open", dismiss(&state, &id, user, note).await?),
        "accept" => done(&format!("/admin/conflicts/{id}"), accept_as_new(&state, &id, user, note).await?),
        _ => HttpResponse::NotFound().finish(),
    })
}

async fn dismiss(
    state: &AppState,
    id: &str,
    user: SessionUser,
    note: String,
) -> Result<Flash, ConflictActionError> {
    let (pool, id) = (state.pool.clone(), id.to_string());
    blocking(move || {
        with_conn!(&pool, |c| Ok(c.write_tx(|c| {
            if c.conflict_row(&id)?.is_none() {
                return Err(ConflictActionError::NotFound);
            }
            if !c.set_conflict_status(&id, ConflictStatus::Open, ConflictStatus::Dismissed)? {
                return Err(ConflictActionError::NotOpen);
            }
            audit::record(c, &user, "conflict.dismiss", ("conflict", &id), Some(&note))?;
            Ok(Flash::new("conflict_dismissed"))
        })))
    })
    .await?
}

/// Accepts first (idempotent by the derived operation ID), then records the decision.
async fn accept_as_new(
    state: &AppState,
    id: &str,
    user: SessionUser,
    note: String,
) -> Result<Flash, ConflictActionError> {
    let (pool, target) = (state.pool.clone(), id.to_string());
    let row = match blocking(move || with_conn!(&pool, |c| Ok(c.conflict_row(&target)?))).await? {
        None => return Err(ConflictActionError::NotFound),
        Some(row) if row.status != ConflictStatus::Open => return Err(ConflictActionError::NotOpen),
        Some(row) if row.fields_json.is_none() => return Err(ConflictActionError::Purged),
        Some(row) => row,
    };
    let Some(form) = state.form(&row.form) else {
        return Err(ConflictActionError::FormGone(row.form));
    };
    let acceptor = state.acceptor.clone();
    let submission_id = blocking(move || Ok(accept_content(&acceptor, &row, form))).await??;
    let new_ref = reference(&submission_id);
    let note = match note.is_empty() {
        true => format!("accepted as new inquiry {new_ref}"),
        false => format!("{note} (accepted as new inquiry {new_ref})"),
    };
    let (pool, id) = (state.pool.clone(), id.to_string());
    blocking(move || {
        with_conn!(&pool, |c| Ok(c.write_tx(|c| {
            if !c.set_conflict_status(&id, ConflictStatus::Open, ConflictStatus::Accepted)? {
                return Err(ConflictActionError::DecidedMeanwhile(new_ref));
            }
            audit::record(c, &user, "conflict.accept", ("conflict", &id), Some(&note))?;
            Ok(Flash::new("conflict_accepted").arg(new_ref))
        })))
    })
    .await?
}

/// Why a conflict's content cannot be accepted as a new inquiry.
#[derive(Debug, thiserror::Error)]
pub enum AcceptAsNewError {
    #[error("The content does not fit the form now: {0}.")]
    Unfit(String),
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
    let (raw, files) = split_stored(&*form, fields_of(row.fields_json.as_deref()));
    let fields = normalise_with(&*form, &raw, &files).map_err(|errors| {
        let problems: Vec<String> = errors.summary();
        AcceptAsNewError::Unfit(problems.join("; "))
    })?;
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
