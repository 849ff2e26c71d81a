//! What an admin does with an open conflict: dismiss it, or accept the conflicting content as
//! a new inquiry (its own submission, operation ID and side-effect records).

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::{accepted_operation_id, fields_of};
use crate::accept::{Acceptor, Intake, Outcome};
use crate::admin::audit;
use crate::admin::flash::Flash;
use crate::admin::guard::{AdminAction, CsrfForm, SessionUser};
use crate::admin::{blocking, db_failure, done, refused};
use crate::db::admin::review::{ConflictRow, ReviewStore};
use crate::db::{DbError, Store};
use crate::deliveries::Channel;
use crate::domain::{normalise, ConflictStatus, OperationId, RawFields};
use crate::effects::reference;
use crate::http::AppState;
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

/// How an action ended, short of a database failure.
enum Step {
    Done(Flash),
    NotFound,
    Refused(String),
}

const NOT_OPEN: &str = "The conflict is no longer open; reload the page.";

pub async fn act(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    action: AdminAction<ConflictForm>,
) -> HttpResponse {
    let (id, name) = path.into_inner();
    let AdminAction { user, form } = action;
    let note = form.note.trim().to_string();
    let step = match name.as_str() {
        "dismiss" => dismiss(&state, &id, user, note).await,
        "accept" => accept_as_new(&state, &id, user, note).await,
        _ => return HttpResponse::NotFound().finish(),
    };
    match step {
        Ok(Step::Done(flash)) if name == "dismiss" => done("/admin/conflicts?status=open", flash),
        Ok(Step::Done(flash)) => done(&format!("/admin/conflicts/{id}"), flash),
        Ok(Step::NotFound) => HttpResponse::NotFound().body("No such conflict."),
        Ok(Step::Refused(message)) => refused(&message),
        Err(e) => db_failure(e),
    }
}

async fn dismiss(state: &AppState, id: &str, user: SessionUser, note: String) -> Result<Step, DbError> {
    let (pool, id) = (state.pool.clone(), id.to_string());
    blocking(move || {
        with_conn!(&pool, |c| c.write_tx(|c| {
            if c.conflict_row(&id)?.is_none() {
                return Ok::<_, DbError>(Step::NotFound);
            }
            if !c.set_conflict_status(&id, ConflictStatus::Open, ConflictStatus::Dismissed)? {
                return Ok(Step::Refused(NOT_OPEN.into()));
            }
            audit::record(c, &user, "conflict.dismiss", ("conflict", &id), Some(&note))?;
            Ok(Step::Done(Flash::new("conflict_dismissed")))
        }))
    })
    .await
}

/// Accepts first (idempotent by the derived operation ID), then records the decision.
async fn accept_as_new(state: &AppState, id: &str, user: SessionUser, note: String) -> Result<Step, DbError> {
    let (pool, target) = (state.pool.clone(), id.to_string());
    let row = match blocking(move || with_conn!(&pool, |c| Ok(c.conflict_row(&target)?))).await? {
        None => return Ok(Step::NotFound),
        Some(row) if row.status != ConflictStatus::Open => return Ok(Step::Refused(NOT_OPEN.into())),
        Some(row) if row.fields_json.is_none() => {
            return Ok(Step::Refused("The conflicting content has been purged.".into()))
        }
        Some(row) => row,
    };
    let (acceptor, config) = (state.acceptor.clone(), state.config.clone());
    let created = blocking(move || {
        let Some(form) = config.form(&row.form) else {
            return Ok(Err(format!("The form {} is no longer configured.", row.form)));
        };
        accept_content(&acceptor, &row, form)
    })
    .await?;
    let submission_id = match created {
        Ok(s) => s,
        Err(message) => return Ok(Step::Refused(message)),
    };
    let new_ref = reference(&submission_id);
    let note = match note.is_empty() {
        true => format!("accepted as new inquiry {new_ref}"),
        false => format!("{note} (accepted as new inquiry {new_ref})"),
    };
    let (pool, id) = (state.pool.clone(), id.to_string());
    blocking(move || {
        with_conn!(&pool, |c| c.write_tx(|c| {
            if !c.set_conflict_status(&id, ConflictStatus::Open, ConflictStatus::Accepted)? {
                return Ok::<_, DbError>(Step::Refused(format!(
                    "The conflict was decided meanwhile; the new inquiry {new_ref} exists."
                )));
            }
            audit::record(c, &user, "conflict.accept", ("conflict", &id), Some(&note))?;
            Ok(Step::Done(Flash::new("conflict_accepted").arg(new_ref)))
        }))
    })
    .await
}

/// The new submission's id, or why the content cannot be accepted.
fn accept_content(
    acceptor: &Acceptor,
    row: &ConflictRow,
    form: &crate::config::FormConfig,
) -> Result<Result<String, String>, DbError> {
    let raw: RawFields = fields_of(row.fields_json.as_deref()).into_iter().collect();
    let fields = match normalise(form, &raw) {
        Ok(f) => f,
        Err(errors) => {
            let problems: Vec<String> =
                errors.0.iter().map(|(field, m)| format!("{field} {}", m.join(", "))).collect();
            return Ok(Err(format!("The content does not fit the form now: {}.", problems.join("; "))));
        }
    };
    let operation_id = match OperationId::parse(&accepted_operation_id(&row.id)) {
        Ok(o) => o,
        Err(e) => return Ok(Err(format!("No operation ID for this conflict: {e}."))),
    };
    let intake = Intake {
        form_name: &row.form,
        form,
        operation_id: Some(operation_id),
        channel: Channel::Api,
        fields,
    };
    Ok(match acceptor.accept(intake)? {
        Outcome::Created(r) | Outcome::Replayed(r) => Ok(r.submission_id),
        Outcome::Conflict { .. } => Err("An inquiry with other content was already accepted for it.".into()),
        Outcome::InProgress { .. } => Err("The new inquiry is being written; try again in a moment.".into()),
        Outcome::Expired { .. } => Err("The operation ID has expired.".into()),
    })
}
