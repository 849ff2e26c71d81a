//! The lifecycle pages: retention windows and purges, erasure of one person, historic import.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::guard::{AdminAction, CsrfForm, SessionUser};
use super::{blocking, db_failure, Chrome};
use crate::http::pages::html;
use crate::http::AppState;
use crate::lifecycle::erase::{self, Actor, Person};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/erase", web::get().to(erase_page)).route("/admin/erase", web::post().to(erase_now));
}

#[derive(Template)]
#[template(path = "admin/erase.html")]
struct ErasePage {
    chrome: Chrome,
    report: Option<Vec<String>>,
    dry_run: bool,
}

async fn erase_page(user: SessionUser) -> HttpResponse {
    html(
        StatusCode::OK,
        &ErasePage { chrome: Chrome::new(&user, "retention", None), report: None, dry_run: true },
    )
}

#[derive(Deserialize)]
struct EraseForm {
    #[serde(default)]
    csrf: String,
    email: Option<String>,
    phone: Option<String>,
    dry_run: Option<String>,
}

impl CsrfForm for EraseForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `POST /admin/erase` (admin, CSRF): the report is the answer; the terms never reach a URL.
async fn erase_now(state: web::Data<AppState>, action: AdminAction<EraseForm>) -> HttpResponse {
    let AdminAction { user, form } = action;
    let given = |v: &Option<String>| v.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(String::from);
    let person = match (given(&form.email), given(&form.phone)) {
        (Some(e), None) => Person::Email(e),
        (None, Some(p)) => Person::Phone(p),
        _ => return super::refused("Give either an email address or a phone number."),
    };
    let dry_run = form.dry_run.is_some();
    let pool = state.pool.clone();
    let actor = Actor { id: user.id.clone(), email: user.email.clone() };
    match blocking(move || erase::erase(&pool, &person, dry_run, &actor)).await {
        Ok(report) => html(
            StatusCode::OK,
            &ErasePage {
                chrome: Chrome::new(&user, "retention", None),
                report: Some(report.lines()),
                dry_run,
            },
        ),
        Err(e) => db_failure(e),
    }
}
