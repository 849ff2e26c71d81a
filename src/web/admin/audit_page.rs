//! The audit log page: every admin action, newest first, with who, when, what and the note.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::guard::SessionUser;
use super::{blocking, db_failure_in, Chrome};
use crate::base::format::reference;
use crate::services::audit::{self, AuditEntry};
use crate::web::render::html;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/audit", web::get().to(page));
}

const PAGE_SIZE: i64 = 50;

pub struct EntryView {
    pub at: String,
    pub who: String,
    pub action: String,
    pub target_type: String,
    pub target_id: String,
    /// Where the target can be seen, and how to name the link.
    pub link: Option<(String, String)>,
    pub note: Option<String>,
}

#[derive(Template)]
#[template(path = "admin/audit.html")]
struct AuditPage {
    chrome: Chrome,
    entries: Vec<EntryView>,
    page: i64,
    prev_href: Option<String>,
    next_href: Option<String>,
}

#[derive(Deserialize)]
struct AuditQuery {
    page: Option<String>,
    flash: Option<String>,
}

async fn page(state: web::Data<AppState>, user: SessionUser, q: web::Query<AuditQuery>) -> HttpResponse {
    let page = q.page.as_deref().and_then(|p| p.trim().parse::<i64>().ok()).unwrap_or(1).clamp(1, 1_000_000);
    let pool = state.pool.clone();
    let read = move || audit::entries(&pool, PAGE_SIZE + 1, (page - 1) * PAGE_SIZE);
    let (mut entries, owners) = match blocking(read).await {
        Ok(v) => v,
        Err(e) => return db_failure_in(user.locale, e),
    };
    let more = entries.len() > PAGE_SIZE as usize;
    entries.truncate(PAGE_SIZE as usize);
    let view = AuditPage {
        chrome: Chrome::new(&user, "audit", q.flash.as_deref()),
        entries: entries.into_iter().map(|e| EntryView::new(e, &owners, user.zone)).collect(),
        page,
        prev_href: (page > 1).then(|| format!("/admin/audit?page={}", page - 1)),
        next_href: more.then(|| format!("/admin/audit?page={}", page + 1)),
    };
    html(StatusCode::OK, &view)
}

impl EntryView {
    /// `owners`: (effect id, submission id) of the effects on the page.
    fn new(e: AuditEntry, owners: &[(String, String)], zone: crate::base::i18n::TimeZone) -> EntryView {
        let id = e.target_id.as_str();
        let link = match e.target_type.as_str() {
            "submission" => Some((format!("/admin/submissions/{id}"), reference(id))),
            "effect" => owners.iter().find(|(effect, _)| effect == id).map(|(_, s)| {
                (format!("/admin/submissions/{s}#effect-{id}"), format!("effect of {}", reference(s)))
            }),
            "conflict" => Some((format!("/admin/conflicts/{id}"), "conflict".into())),
            t if t.starts_with("duplicate") || t == "pair" => {
                Some((format!("/admin/duplicates#pair-{id}"), "duplicate pair".into()))
            }
            _ => None,
        };
        EntryView {
            at: super::when(zone, e.at),
            who: e.user_email,
            action: e.action,
            link,
            target_type: e.target_type,
            target_id: e.target_id,
            note: e.note,
        }
    }
}
