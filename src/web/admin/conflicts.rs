//! Conflicts: a known operation ID that arrived with different content. The original and the
//! conflicting content side by side; dismiss, or accept the content as a new inquiry.

#[path = "conflicts_actions.rs"]
mod actions;

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use askama::Template;

use super::guard::SessionUser;
use super::{blocking, db_failure_in, status_counts, when, Chrome, FlashQuery, QueueQuery};
use crate::base::format::reference;
use crate::base::i18n::{Arg, Locale};
use crate::config::FormConfig;
use crate::domain::{ConflictStatus, SubmissionId};
use crate::services::conflicts::{self, ConflictRow};
use crate::services::storage::DbError;
use crate::web::render::html;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/conflicts", web::get().to(list))
        .route("/admin/conflicts/{id}", web::get().to(detail))
        .route("/admin/conflicts/{id}/{action}", web::post().to(actions::act));
}

pub const STATUSES: [ConflictStatus; 3] = ConflictStatus::ALL;

/// One field of two records, side by side.
pub struct FieldPair {
    pub label: String,
    pub left: String,
    pub right: String,
    pub differs: bool,
}

/// Stored fields (a JSON object of strings); empty when purged or unreadable.
pub fn fields_of(json: Option<&str>) -> BTreeMap<String, String> {
    crate::domain::stored_fields::shown(json)
}

/// The form's fields in declared order with their labels in `locale`, then any stored field
/// the form no longer declares.
pub fn compare(
    form: Option<&FormConfig>,
    locale: Locale,
    left: &BTreeMap<String, String>,
    right: &BTreeMap<String, String>,
) -> Vec<FieldPair> {
    let mut names: Vec<(String, String)> = form
        .map(|f| f.fields.iter().map(|d| (d.name.clone(), f.admin_label(d, locale).to_string())).collect())
        .unwrap_or_default();
    for k in left.keys().chain(right.keys()) {
        if !names.iter().any(|(n, _)| n == k) {
            names.push((k.clone(), k.clone()));
        }
    }
    names
        .into_iter()
        .filter(|(n, _)| left.contains_key(n) || right.contains_key(n))
        .map(|(name, label)| {
            let l = left.get(&name).cloned().unwrap_or_default();
            let r = right.get(&name).cloned().unwrap_or_default();
            FieldPair { label, differs: l != r, left: l, right: r }
        })
        .collect()
}

pub struct ConflictView {
    pub id: String,
    pub submission_id: SubmissionId,
    pub reference: String,
    pub form: String,
    pub operation_id: String,
    pub status: ConflictStatus,
    pub attempts: i32,
    pub original_received: String,
    pub first_seen: String,
    pub last_seen: String,
    pub purged: bool,
    pub fields: Vec<FieldPair>,
}

impl ConflictView {
    fn new(row: ConflictRow, form: Option<&FormConfig>, user: &SessionUser) -> ConflictView {
        let (left, right) = (fields_of(row.original_json.as_deref()), fields_of(row.fields_json.as_deref()));
        ConflictView {
            reference: reference(&row.submission_id),
            original_received: when(user.zone, row.original_received_at),
            first_seen: when(user.zone, row.first_seen_at),
            last_seen: when(user.zone, row.last_seen_at),
            purged: row.fields_json.is_none(),
            fields: compare(form, user.locale, &left, &right),
            id: row.id,
            submission_id: row.submission_id,
            form: row.form,
            operation_id: row.operation_id,
            status: row.status,
            attempts: row.attempts,
        }
    }

    /// "Operation ID … arrived N time(s) with different content, first …, last …".
    pub fn arrived(&self, chrome: &Chrome) -> String {
        chrome.locale.format(
            "admin-conflict-arrived",
            &[
                ("value", Arg::Str(&self.operation_id)),
                ("n", Arg::Num(i64::from(self.attempts))),
                ("date", Arg::Str(&self.first_seen)),
                ("time", Arg::Str(&self.last_seen)),
            ],
        )
    }

    /// The changed fields with a short preview of the conflicting value.
    pub fn changes(&self) -> Vec<(&str, String)> {
        let preview = |v: &str| {
            if v.is_empty() {
                return "(empty)".to_string();
            }
            let short: String = v.chars().take(60).collect();
            if short.len() < v.len() {
                format!("{short}…")
            } else {
                short
            }
        };
        self.fields.iter().filter(|f| f.differs).map(|f| (f.label.as_str(), preview(&f.right))).collect()
    }
}

#[derive(Template)]
#[template(path = "admin/conflicts.html")]
struct ListPage {
    chrome: Chrome,
    status: ConflictStatus,
    counts: Vec<(ConflictStatus, i64)>,
    rows: Vec<ConflictView>,
}

#[derive(Template)]
#[template(path = "admin/conflict.html")]
struct DetailPage {
    chrome: Chrome,
    c: ConflictView,
    /// (submission id, reference) of the inquiry accepted from this conflict.
    accepted_as: Option<(SubmissionId, String)>,
}

async fn list(state: web::Data<AppState>, user: SessionUser, q: web::Query<QueueQuery>) -> HttpResponse {
    let status = q.status(&STATUSES, ConflictStatus::Open);
    let pool = state.pool.clone();
    let read = move || conflicts::queue(&pool, status, 200);
    let (counts, rows) = match blocking(read).await {
        Ok(v) => v,
        Err(e) => return db_failure_in(user.locale, e),
    };
    let counts = status_counts(&STATUSES, &counts);
    let forms = state.forms();
    let rows = rows.into_iter().map(|r| {
        let form = forms.config.form(&r.form);
        ConflictView::new(r, form, &user)
    });
    let page = ListPage {
        chrome: Chrome::new(&user, "conflicts", q.flash.as_deref()),
        status,
        counts,
        rows: rows.collect(),
    };
    html(StatusCode::OK, &page)
}

async fn detail(
    state: web::Data<AppState>,
    user: SessionUser,
    path: web::Path<String>,
    q: web::Query<FlashQuery>,
) -> HttpResponse {
    let id = path.into_inner();
    let pool = state.pool.clone();
    let read = move || conflicts::conflict(&pool, &id);
    let (row, accepted) = match web::block(read).await {
        Ok(Ok(Some(v))) => v,
        Ok(Ok(None)) => return HttpResponse::NotFound().body("No such conflict."),
        Ok(Err(e)) => return db_failure_in(user.locale, e),
        Err(_) => return db_failure_in(user.locale, DbError::Unavailable("blocking pool".into())),
    };
    let forms = state.forms();
    let form = forms.config.form(&row.form);
    let page = DetailPage {
        chrome: Chrome::new(&user, "conflicts", q.flash.as_deref()),
        c: ConflictView::new(row, form, &user),
        accepted_as: accepted.map(|id| {
            let r = reference(&id);
            (id, r)
        }),
    };
    html(StatusCode::OK, &page)
}
