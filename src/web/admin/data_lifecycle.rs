//! The lifecycle pages: retention windows and purges, erasure of one person (the historic
//! import's upload page is `import_page`).

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::guard::{AdminAction, CsrfForm, SessionUser};
use super::{blocking, db_failure_in, plain, Chrome};
use crate::base::i18n::Arg;
use crate::services::lifecycle::erase::{self, Actor, NotAPerson, Person};
use crate::web::render::html;
use crate::web::state::AppState;

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
    let person = match Person::named(form.email.as_deref(), form.phone.as_deref()) {
        Ok(person) => person,
        Err(why) => {
            let key = match why {
                NotAPerson::GiveOne => "admin-erase-give-one",
                NotAPerson::NotAnEmail => "admin-erase-not-an-email",
                NotAPerson::NotAPhone => "admin-erase-not-a-phone",
            };
            return plain(StatusCode::CONFLICT, user.locale.text(key));
        }
    };
    let dry_run = form.dry_run.is_some();
    let (pool, keyring) = (state.pool.clone(), state.keyring.clone());
    let (files, consent) = (erase::Files::of(&state.config), state.config.consent_fields());
    let actor = Actor { id: user.id.clone(), email: user.email.clone() };
    match blocking(move || erase::erase(&pool, &keyring, &files, &consent, &person, dry_run, &actor)).await {
        Ok(report) => {
            if !dry_run {
                // This server's replay memory answers no retry of what was erased.
                state.acceptor.forget_replays(report.keys.iter().map(|(f, o)| (f.as_str(), o.as_str())));
            }
            html(
                StatusCode::OK,
                &ErasePage {
                    chrome: Chrome::new(&user, "retention", None),
                    report: Some(report.lines_in(user.locale)),
                    dry_run,
                },
            )
        }
        Err(e) => db_failure_in(user.locale, e),
    }
}

pub fn more_routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/retention", web::get().to(retention_page));
}

pub struct FormRow {
    name: String,
    content: String,
    keys: String,
    max_retry_age: String,
    p99: String,
    oldest: String,
    purged: String,
    next: String,
}

#[derive(Template)]
#[template(path = "admin/retention.html")]
struct RetentionPage {
    chrome: Chrome,
    forms: Vec<FormRow>,
    last_pass: Option<String>,
}

fn or_dash(w: Option<crate::config::Window>, unset: String) -> String {
    w.map(|w| w.to_string()).unwrap_or(unset)
}

async fn retention_page(state: web::Data<AppState>, user: SessionUser) -> HttpResponse {
    let (pool, locale, zone) = (state.pool.clone(), user.locale, user.zone);
    let stats =
        match blocking(move || crate::services::lifecycle::metrics::read(&pool, crate::base::clock::now()))
            .await
        {
            Ok(s) => s,
            Err(e) => return db_failure_in(locale, e),
        };
    let config = &state.config;
    let fmt = |t: chrono::NaiveDateTime| super::when(zone, t);
    let t = |key: &str| locale.text(key);
    let next =
        stats.last_pass.map(|(t, _)| t + chrono::Duration::seconds(config.purge.interval_seconds as i64));
    let forms = config
        .forms
        .iter()
        .map(|(name, f)| {
            let r = &f.retention;
            let count = |kind: &str| {
                stats
                    .purged
                    .iter()
                    .filter(|(fm, k, _)| fm == name && k == kind)
                    .map(|(_, _, n)| n)
                    .sum::<i64>()
            };
            let scheduled = config.purge.enabled && (r.content.is_some() || r.keys.is_some());
            FormRow {
                name: name.clone(),
                content: or_dash(r.content, t("admin-kept-for-good")),
                keys: or_dash(r.keys, t("admin-kept-for-good")),
                max_retry_age: or_dash(r.max_retry_age, t("admin-retention-not-declared")),
                p99: stats
                    .spread_p99(name)
                    .map(|s| locale.format("admin-seconds", &[("value", Arg::Str(&format!("{s:.1}")))]))
                    .unwrap_or_else(|| t("admin-retention-no-redeliveries")),
                oldest: stats
                    .oldest_content
                    .get(name)
                    .map(|at| fmt(*at))
                    .unwrap_or_else(|| t("admin-retention-none")),
                purged: format!("{} / {} / {}", count("content"), count("keys"), count("erasure")),
                next: match (scheduled, next) {
                    (false, _) => t("admin-retention-not-scheduled"),
                    (true, Some(at)) => fmt(at),
                    (true, None) => t("admin-retention-at-next-start"),
                },
            }
        })
        .collect();
    let page = RetentionPage {
        chrome: Chrome::new(&user, "retention", None),
        forms,
        last_pass: stats.last_pass.map(|(t, ms)| format!("{} ({ms} ms)", fmt(t))),
    };
    html(StatusCode::OK, &page)
}
