//! `/admin/forms/new` and `/admin/forms/{form}/edit`: an admin defines a form, or changes
//! one defined here, as one `[forms.NAME]` section in the configuration file's syntax
//! (`services::admin_forms::save`: checked by the `check-config` rules, stored as a new
//! version, audited, in force at once). A viewer sees the text read-only; a form the
//! configuration file defines is shown read-only and its save is refused (409), because the
//! file is authoritative for the forms it names.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::flash::Flash;
use super::guard::{AdminAction, CsrfForm, SessionUser};
use super::{blocking, db_failure_in, done, Chrome};
use crate::config::admin_forms::MAX_SECTION_BYTES;
use crate::db::admin_forms::AdminForms;
use crate::db::DbError;
use crate::services::admin_forms::{SaveError, Saved};
use crate::web::render::html;
use crate::web::state::AppState;
use crate::with_conn;

pub fn routes(cfg: &mut web::ServiceConfig) {
    // A section is read whole: room for the longest one, its escaping and the CSRF token.
    let body = || web::FormConfig::default().limit(3 * MAX_SECTION_BYTES + 1024);
    cfg.service(
        web::resource("/admin/forms/new")
            .app_data(body())
            .route(web::get().to(new))
            .route(web::post().to(create)),
    )
    .service(
        web::resource("/admin/forms/{form}/edit")
            .app_data(body())
            .route(web::get().to(edit))
            .route(web::post().to(update)),
    );
}

/// What a new form's editor starts with.
const STARTER: &str = r#"[forms.quote]
title = "Ask for a quote"
effects = ["owner_notification"]
notify = ["sales@example.com"]
locale = "auto"
locales = ["en", "zh-TW"]

[[forms.quote.fields]]
name = "email"
type = "email"
required = true

[[forms.quote.fields]]
name = "message"
type = "textarea"
label = "What do you need?"

[forms.quote.texts.zh-TW]
title = "索取報價"
"#;

#[derive(Template)]
#[template(path = "admin/form_editor.html")]
struct EditorPage {
    chrome: Chrome,
    /// The form edited (`None`: a new one).
    form: Option<String>,
    action: String,
    /// The section shown (as stored, or as just typed).
    source: String,
    /// The version the editor was opened on (a save checks it is still the stored one).
    base: String,
    /// The configuration file defines the form: read-only, no save.
    in_file: bool,
    /// Why the last save changed nothing (each at its line where it has one).
    problems: Vec<String>,
}

impl EditorPage {
    fn new(user: &SessionUser, form: Option<&str>) -> EditorPage {
        let action = match form {
            Some(name) => edit_href(name),
            None => "/admin/forms/new".into(),
        };
        EditorPage {
            chrome: Chrome::new(user, "forms", None),
            form: form.map(String::from),
            action,
            source: String::new(),
            base: String::new(),
            in_file: false,
            problems: Vec::new(),
        }
    }
}

/// The editor of the admin-defined form `form`.
pub fn edit_href(form: &str) -> String {
    super::form_versions::href(form).replace("/versions", "/edit")
}

/// The editor's form: the CSRF token, the section, and the version it was opened on.
#[derive(Deserialize)]
struct EditForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    source: String,
    #[serde(default)]
    base: String,
}

impl CsrfForm for EditForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

async fn new(user: SessionUser) -> HttpResponse {
    let mut page = EditorPage::new(&user, None);
    page.source = STARTER.into();
    html(StatusCode::OK, &page)
}

async fn edit(state: web::Data<AppState>, user: SessionUser, path: web::Path<String>) -> HttpResponse {
    let name = path.into_inner();
    let mut page = EditorPage::new(&user, Some(&name));
    if state.form(&name).is_some_and(|f| f.origin.is_file()) {
        page.in_file = true;
        return html(StatusCode::OK, &page);
    }
    let (pool, key) = (state.pool.clone(), name.clone());
    match blocking(move || with_conn!(&pool, |c| c.admin_form(&key).map_err(DbError::from))).await {
        Ok(Some(row)) => {
            page.source = row.source;
            page.base = row.version;
            html(StatusCode::OK, &page)
        }
        Ok(None) => HttpResponse::NotFound()
            .content_type("text/plain; charset=utf-8")
            .body("No form of this name was defined in the admin."),
        Err(e) => db_failure_in(user.locale, e),
    }
}

async fn create(state: web::Data<AppState>, action: AdminAction<EditForm>) -> HttpResponse {
    save(state, action, None).await
}

async fn update(
    state: web::Data<AppState>,
    path: web::Path<String>,
    action: AdminAction<EditForm>,
) -> HttpResponse {
    save(state, action, Some(path.into_inner())).await
}

async fn save(
    state: web::Data<AppState>,
    action: AdminAction<EditForm>,
    editing: Option<String>,
) -> HttpResponse {
    let (user, form) = (action.user, action.form);
    let (live, pool, actor) = (state.forms.clone(), state.pool.clone(), user.actor());
    let (name, text) = (editing.clone(), form.source.clone());
    let base = Some(form.base.clone()).filter(|b| !b.is_empty());
    let saved = web::block(move || {
        crate::services::admin_forms::save(&live, &pool, &actor, name.as_deref(), base.as_deref(), &text)
    })
    .await;
    let mut page = EditorPage::new(&user, editing.as_deref());
    page.source = form.source;
    page.base = form.base;
    match saved {
        Ok(Ok(Saved::Created(_))) => done("/admin/forms", Flash::new("form_created")),
        Ok(Ok(Saved::Changed(_))) => done("/admin/forms", Flash::new("form_saved")),
        Ok(Ok(Saved::Unchanged)) => done("/admin/forms", Flash::new("form_unchanged")),
        Ok(Err(SaveError::FileForm)) => {
            page.in_file = true;
            html(StatusCode::CONFLICT, &page)
        }
        Ok(Err(SaveError::Invalid(problems))) => {
            page.problems = problems;
            html(StatusCode::UNPROCESSABLE_ENTITY, &page)
        }
        Ok(Err(SaveError::Db(e))) => db_failure_in(user.locale, e),
        Err(e) => db_failure_in(user.locale, e),
    }
}
