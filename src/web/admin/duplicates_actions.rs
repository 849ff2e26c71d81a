//! Decisions on suspected duplicate pairs, each in one write transaction with one audit row
//! per pair decided.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse, ResponseError};
use chrono::NaiveDateTime;
use serde::Deserialize;

use crate::base::clock::now;
use crate::base::format::reference;
use crate::db::admin::accounts::AccountStore;
use crate::db::admin::effects::EffectAdminStore;
use crate::db::admin::review::{PairRow, ReviewStore};
use crate::db::{DbError, Store};
use crate::domain::PairStatus;
use crate::web::admin::audit;
use crate::web::admin::flash::Flash;
use crate::web::admin::guard::{authorize, AdminAction, AuthError, CsrfForm, SessionUser};
use crate::web::admin::{blocking, db_failure, done, refused};
use crate::web::state::AppState;
use crate::with_conn;

#[derive(Deserialize)]
pub struct PairForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    note: String,
}

impl CsrfForm for PairForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    NotDuplicate,
    Duplicate,
}

impl Decision {
    fn parse(s: &str) -> Option<Decision> {
        match s {
            "not-duplicate" => Some(Decision::NotDuplicate),
            "duplicate" => Some(Decision::Duplicate),
            _ => None,
        }
    }

    fn status(self) -> PairStatus {
        match self {
            Decision::NotDuplicate => PairStatus::NotDuplicate,
            Decision::Duplicate => PairStatus::Duplicate,
        }
    }

    fn audit_name(self) -> &'static str {
        match self {
            Decision::NotDuplicate => "duplicate.not_duplicate",
            Decision::Duplicate => "duplicate.duplicate_of",
        }
    }
}

/// The note on the effects a "duplicate of" decision cancels: undo restores exactly those.
fn cancel_note(original_id: &str) -> String {
    format!("duplicate of {}", reference(original_id))
}

trait ReviewConn: ReviewStore + EffectAdminStore + AccountStore {}
impl<C: ReviewStore + EffectAdminStore + AccountStore> ReviewConn for C {}

/// Decides an open pair; `None` when it is not open (any more), else the effects changed.
fn decide<C: ReviewConn>(
    c: &mut C,
    user: &SessionUser,
    pair: &PairRow,
    decision: Decision,
    note: &str,
    t: NaiveDateTime,
) -> diesel::QueryResult<Option<usize>> {
    if !c.decide_pair(&pair.id, &[PairStatus::Open], decision.status(), Some(&user.email), Some(t))? {
        return Ok(None);
    }
    let changed = match decision {
        // Held effects wait until no open pair suspects this submission any more.
        Decision::NotDuplicate if c.open_pairs_of(&pair.duplicate_id)? == 0 => {
            c.release_held_of(&pair.duplicate_id, t)?
        }
        Decision::NotDuplicate => 0,
        Decision::Duplicate => {
            c.set_duplicate_of(&pair.duplicate_id, &pair.original_id)?;
            c.cancel_pending_of(&pair.duplicate_id, &cancel_note(&pair.original_id), t)?
        }
    };
    audit::record(c, user, decision.audit_name(), ("duplicate_pair", &pair.id), Some(note))?;
    Ok(Some(changed))
}

/// Reopens a decided pair; a "duplicate of" decision gives back what it cancelled, held.
fn undo<C: ReviewConn>(
    c: &mut C,
    user: &SessionUser,
    pair: &PairRow,
    note: &str,
    t: NaiveDateTime,
) -> diesel::QueryResult<Option<usize>> {
    if pair.status == PairStatus::Open
        || !c.decide_pair(&pair.id, &[pair.status], PairStatus::Open, None, None)?
    {
        return Ok(None);
    }
    let mut restored = 0;
    if pair.status == PairStatus::Duplicate {
        c.clear_duplicate_of(&pair.duplicate_id, &pair.original_id)?;
        restored = c.restore_cancelled(&pair.duplicate_id, &cancel_note(&pair.original_id), t)?;
    }
    audit::record(c, user, "duplicate.undo", ("duplicate_pair", &pair.id), Some(note))?;
    Ok(Some(restored))
}

/// A decision made: the list to go back to, and what to tell the admin.
struct Done {
    back: PairStatus,
    flash: Flash,
}

/// Why a decision on a pair (or on a batch of pairs) did not apply.
#[derive(Debug, thiserror::Error)]
pub enum PairActionError {
    #[error("No such pair.")]
    NotFound,
    #[error("The pair is already decided; undo that decision first.")]
    AlreadyDecided,
    #[error("The pair is open: there is no decision to undo.")]
    NothingToUndo,
    #[error("None of the selected pairs is open; reload the page.")]
    NoneOpen,
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for PairActionError {
    fn from(e: diesel::result::Error) -> Self {
        PairActionError::Db(e.into())
    }
}

impl ResponseError for PairActionError {
    fn status_code(&self) -> StatusCode {
        match self {
            PairActionError::NotFound => StatusCode::NOT_FOUND,
            PairActionError::Db(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::CONFLICT,
        }
    }

    fn error_response(&self) -> HttpResponse {
        match self {
            PairActionError::NotFound => HttpResponse::NotFound().body(self.to_string()),
            PairActionError::Db(e) => db_failure(e),
            refusal => refused(&refusal.to_string()),
        }
    }
}

fn respond(result: Result<Result<Done, PairActionError>, DbError>) -> HttpResponse {
    match result.map_err(PairActionError::from).and_then(|r| r) {
        Ok(Done { back, flash }) => done(&format!("/admin/duplicates?status={back}"), flash),
        Err(e) => e.error_response(),
    }
}

pub async fn act(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    action: AdminAction<PairForm>,
) -> HttpResponse {
    let (id, name) = path.into_inner();
    let decision = match name.as_str() {
        "undo" => None,
        other => match Decision::parse(other) {
            Some(d) => Some(d),
            None => return HttpResponse::NotFound().finish(),
        },
    };
    let AdminAction { user, form } = action;
    let pool = state.pool.clone();
    let run = move || {
        with_conn!(&pool, |c| Ok(c.write_tx(|c| {
            let Some(pair) = c.pair_row(&id)? else { return Err(PairActionError::NotFound) };
            let (dup, orig) = (reference(&pair.duplicate_id), reference(&pair.original_id));
            let t = now();
            Ok(match decision {
                Some(d) => match decide(c, &user, &pair, d, &form.note, t)? {
                    None => return Err(PairActionError::AlreadyDecided),
                    Some(n) => Done {
                        back: PairStatus::Open,
                        flash: match d {
                            Decision::NotDuplicate => Flash::new("pair_not_duplicate"),
                            Decision::Duplicate => Flash::new("pair_duplicate"),
                        }
                        .arg(dup)
                        .arg(orig)
                        .arg(n),
                    },
                },
                None => match undo(c, &user, &pair, &form.note, t)? {
                    None => return Err(PairActionError::NothingToUndo),
                    Some(n) => Done { back: pair.status, flash: Flash::new("pair_undone").arg(n) },
                },
            })
        })))
    };
    respond(blocking(run).await)
}

/// Most pairs one batch request decides.
const BATCH_MAX: usize = 500;

/// `ids` repeated (the ticked pairs), `decision`, `note` and `csrf`.
pub async fn batch(state: web::Data<AppState>, user: SessionUser, body: web::Bytes) -> HttpResponse {
    let Ok(fields) = serde_urlencoded::from_bytes::<Vec<(String, String)>>(&body) else {
        return AuthError::BadForm.error_response();
    };
    let field = |name: &str| fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.trim()).unwrap_or("");
    if let Err(e) = authorize(&user, field("csrf")) {
        return e.error_response();
    }
    let Some(decision) = Decision::parse(field("decision")) else {
        return HttpResponse::BadRequest().body("Pick a decision: not-duplicate or duplicate.");
    };
    let mut ids: Vec<String> = fields.iter().filter(|(n, _)| n == "ids").map(|(_, v)| v.clone()).collect();
    ids.sort();
    ids.dedup();
    if ids.is_empty() {
        return done("/admin/duplicates?status=open", Flash::new("select_pairs"));
    }
    if ids.len() > BATCH_MAX {
        return HttpResponse::BadRequest().body(format!("At most {BATCH_MAX} pairs at once."));
    }
    let note = field("note").to_string();
    let pool = state.pool.clone();
    let run = move || {
        with_conn!(&pool, |c| Ok(c.write_tx(|c| {
            let t = now();
            let mut decided = 0;
            for id in &ids {
                let Some(pair) = c.pair_row(id)? else { continue };
                if decide(c, &user, &pair, decision, &note, t)?.is_some() {
                    decided += 1;
                }
            }
            if decided == 0 {
                return Err(PairActionError::NoneOpen);
            }
            let code = match decision {
                Decision::NotDuplicate => "pairs_not_duplicate",
                Decision::Duplicate => "pairs_duplicate",
            };
            let skipped = ids.len() - decided;
            let flash = Flash::new(code).arg(decided).arg(skipped);
            Ok(Done { back: PairStatus::Open, flash })
        })))
    };
    respond(blocking(run).await)
}
