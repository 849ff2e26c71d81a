//! The files of a submission: listed on its page, downloaded only by a signed-in user, as an
//! attachment the browser never renders (`nosniff`, a sandboxing CSP), each download
//! audited. A spam submission's files (malware among them) only by an admin, after a warning.

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::guard::SessionUser;
use super::{blocking, db_failure_in, plain, words, Chrome};
use crate::base::i18n::Locale;
use crate::config::Config;
use crate::domain::{FileRef, ScanState};
use crate::services::audit;
use crate::services::browse::{self, SubmissionRow, SubmissionView};
use crate::web::render::html;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/submissions/{id}/files/{sha256}", web::get().to(download));
}

/// One file on a submission's page.
pub struct FileView {
    pub field: String,
    pub shown: String,
    pub href: String,
    /// What the malware scan said of it; `None` when its form does not scan.
    pub scan: Option<ScanState>,
}

/// The files `row`'s file fields name, in the form's order, each with its field's label in
/// `locale`.
pub fn files_of(config: &Config, row: &SubmissionRow, locale: Locale) -> Vec<(String, FileRef)> {
    let values = row.fields();
    let Some(form) = config.form(&row.form) else { return Vec::new() };
    form.files(|name| values.get(name).map(String::as_str))
        .into_iter()
        .map(|(f, r)| (form.admin_label(f, locale).to_string(), r))
        .collect()
}

/// The files of `row` as its page lists them, each with its scan state from `scans`.
pub fn views(
    config: &Config,
    row: &SubmissionRow,
    scans: &BTreeMap<String, ScanState>,
    locale: Locale,
) -> Vec<FileView> {
    files_of(config, row, locale)
        .into_iter()
        .map(|(field, file)| FileView {
            field,
            shown: file.shown(),
            href: format!("/admin/submissions/{}/files/{}", row.id, file.sha256),
            scan: scans.get(&file.sha256).copied().filter(|s| *s != ScanState::NotScanned),
        })
        .collect()
}

#[derive(Deserialize)]
struct DownloadQuery {
    /// The admin read the warning about a spam submission's file.
    #[serde(default)]
    confirm: Option<String>,
}

#[derive(Template)]
#[template(path = "admin/file_warning.html")]
struct WarningPage {
    chrome: Chrome,
    reference: String,
    why: String,
    name: String,
    href: String,
}

async fn download(
    state: web::Data<AppState>,
    user: SessionUser,
    path: web::Path<(String, String)>,
    q: web::Query<DownloadQuery>,
) -> HttpResponse {
    let (id, sha256) = path.into_inner();
    let locale = user.locale;
    let (pool, wanted) = (state.pool.clone(), id.clone());
    let page = match blocking(move || browse::submission(&pool, &wanted)).await {
        Ok(Some(page)) => page,
        Ok(None) => return not_found(locale),
        Err(e) => return db_failure_in(locale, e),
    };
    let row = page.submission;
    // Only a file this submission names: a digest alone opens nothing.
    let Some((_, file)) = files_of(&state.config, &row, locale).into_iter().find(|(_, f)| f.sha256 == sha256)
    else {
        return not_found(locale);
    };
    if row.spam {
        if !user.role.is_admin() {
            return plain(StatusCode::FORBIDDEN, locale.text("admin-file-spam-admins-only"));
        }
        if q.confirm.as_deref() != Some("1") {
            let warning = WarningPage {
                chrome: Chrome::new(&user, "submissions", None),
                reference: crate::base::format::reference(&row.id),
                why: words(locale, "spam", row.spam_reason().as_str()),
                name: file.name.clone(),
                href: format!("/admin/submissions/{}/files/{}?confirm=1", row.id, file.sha256),
            };
            return html(StatusCode::OK, &warning);
        }
    }
    let store = state.files.clone();
    let digest = file.sha256.clone();
    let opened = web::block(move || {
        let size = store.store().size(&digest)?;
        Some((size, store.store().open(&digest).ok()?))
    });
    let (size, reader) = match opened.await {
        Ok(Some(opened)) => opened,
        _ => return plain(StatusCode::GONE, locale.text("admin-file-gone")),
    };
    let (pool, who, target) = (state.pool.clone(), user, row.id.to_string());
    let note = format!("file {} ({} bytes)", &file.sha256[..16], file.size);
    let audited = blocking(move || {
        audit::write(&pool, &who.actor(), "submissions.file_download", ("submissions", &target), Some(&note))
    })
    .await;
    if let Err(e) = audited {
        return db_failure_in(locale, e); // no download goes unrecorded
    }
    crate::web::render::download_stream(&file.name, size, reader)
}

fn not_found(locale: Locale) -> HttpResponse {
    plain(StatusCode::NOT_FOUND, locale.text("admin-no-such-file"))
}
