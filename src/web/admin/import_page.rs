//! The historic import's upload page (admin role): a CSV file, the options of
//! `onceform import`, and the same report, from the same code (`lifecycle::import`).

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use askama::Template;

use super::guard::SessionUser;
use super::upload::{Upload, UploadError};
use super::{blocking, db_failure_in, Chrome};
use crate::base::i18n::{Arg, Locale};
use crate::config::Config;
use crate::domain::keyring::Keyring;
use crate::services::lifecycle::import::{import_audited, ImportOptions};
use crate::services::storage::{DbError, Pool};
use crate::web::render::html;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/import", web::get().to(import_page)).route("/admin/import", web::post().to(upload));
}

/// The largest CSV the upload page takes (larger files: `onceform import` on the server).
const IMPORT_LIMIT: usize = 4 * 1024 * 1024;
/// The longest source name (it is part of every imported row's key).
const SOURCE_MAX: usize = 64;

#[derive(Template)]
#[template(path = "admin/import.html")]
struct ImportPage {
    chrome: Chrome,
    forms: Vec<String>,
    limit_mib: usize,
    report: Option<Vec<String>>,
    error: Option<String>,
}

impl ImportPage {
    fn new(state: &AppState, user: &SessionUser) -> ImportPage {
        ImportPage {
            chrome: Chrome::new(user, "retention", None),
            forms: state.forms().config.forms.keys().cloned().collect(),
            limit_mib: IMPORT_LIMIT / (1024 * 1024),
            report: None,
            error: None,
        }
    }

    fn refused(state: &AppState, user: &SessionUser, status: StatusCode, error: String) -> HttpResponse {
        html(status, &ImportPage { error: Some(error), ..ImportPage::new(state, user) })
    }
}

async fn import_page(state: web::Data<AppState>, user: SessionUser) -> HttpResponse {
    html(StatusCode::OK, &ImportPage::new(&state, &user))
}

/// What the page asked for, taken from an upload whose CSRF token matched.
struct ImportRequest {
    form: String,
    source: String,
    dry_run: bool,
    with_effects: bool,
    text: String,
}

impl ImportRequest {
    fn of(upload: &Upload, locale: Locale) -> Result<ImportRequest, String> {
        let source = upload.field("source").map(str::trim).filter(|s| !s.is_empty()).unwrap_or("import");
        if source.chars().count() > SOURCE_MAX {
            let max = Arg::Num(SOURCE_MAX as i64);
            return Err(locale.format("admin-import-source-too-long", &[("max", max)]));
        }
        let file = upload.file("csv").ok_or_else(|| locale.text("admin-import-no-file"))?;
        let declared = match upload.field("encoding").unwrap_or("auto") {
            "auto" | "" => None,
            name => Some(
                crate::services::lifecycle::csv::encoding_named(name)
                    .map_err(|e| nothing_imported(locale, &e.to_string()))?,
            ),
        };
        let text = crate::services::lifecycle::csv::decode(file, declared)
            .map_err(|e| nothing_imported(locale, &capitalised(&e)))?;
        Ok(ImportRequest {
            form: upload.field("form").unwrap_or("").to_string(),
            source: source.to_string(),
            dry_run: upload.ticked("dry_run"),
            with_effects: upload.ticked("with_effects"),
            text,
        })
    }
}

/// `why` (the decoder's own words), then "nothing was imported" in `locale`.
fn nothing_imported(locale: Locale, why: &str) -> String {
    locale.format("admin-import-refused", &[("value", Arg::Str(why))])
}

fn capitalised(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// `POST /admin/import` (admin, CSRF, `multipart/form-data`): the same report as
/// `onceform import`, recorded in the audit log.
async fn upload(
    state: web::Data<AppState>,
    user: SessionUser,
    req: HttpRequest,
    payload: web::Payload,
) -> HttpResponse {
    let refused = |status, error: String| ImportPage::refused(&state, &user, status, error);
    let locale = user.locale;
    let request = match Upload::read(&req, &user, payload, IMPORT_LIMIT).await {
        Ok(upload) => ImportRequest::of(&upload, locale),
        Err(UploadError::Auth(e)) => return e.error_response(),
        Err(UploadError::TooLarge(limit)) => {
            let mib = Arg::Num((limit / (1024 * 1024)) as i64);
            return refused(
                StatusCode::PAYLOAD_TOO_LARGE,
                locale.format("admin-import-too-large", &[("n", mib)]),
            );
        }
        Err(e) => {
            return refused(StatusCode::BAD_REQUEST, nothing_imported(locale, &capitalised(&e.to_string())))
        }
    };
    let request = match request {
        Ok(r) => r,
        Err(error) => return refused(StatusCode::BAD_REQUEST, error),
    };
    let (pool, config, who) = (state.pool.clone(), state.config.clone(), user.clone());
    let keyring = state.keyring.clone();
    match blocking(move || run(&pool, &config, &keyring, &who, &request)).await {
        Ok(lines) => {
            html(StatusCode::OK, &ImportPage { report: Some(lines), ..ImportPage::new(&state, &user) })
        }
        Err(e) => db_failure_in(locale, e),
    }
}

/// Imports as `onceform import` does, audited (`import_audited`); the report in the admin's words.
fn run(
    pool: &Pool,
    config: &Config,
    keyring: &Arc<Keyring>,
    user: &SessionUser,
    r: &ImportRequest,
) -> Result<Vec<String>, DbError> {
    let options = ImportOptions {
        form: &r.form,
        source: &r.source,
        dry_run: r.dry_run,
        with_effects: r.with_effects,
        files: None,
    };
    let locale = user.locale;
    Ok(match import_audited(pool, config, keyring, &user.actor(), &r.text, &options)? {
        Ok(report) => report.lines_in(locale, config.form(&r.form)),
        Err(e) => vec![locale.format("admin-import-nothing", &[("value", Arg::Str(&e.to_string()))])],
    })
}
