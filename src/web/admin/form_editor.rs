//! `/admin/forms/new` and `/admin/forms/{form}/edit`: an admin defines a form, or changes
//! one defined here, as one `[forms.NAME]` section in the configuration file's syntax
//! (`services::admin_forms::save`: checked by the `check-config` rules, stored as a new
//! version, audited, in force at once). A viewer sees the text read-only; a form the
//! configuration file defines is shown read-only and its save is refused (409), because the
//! file is authoritative for the forms it names. `/admin/forms/{form}/delete` deletes an
//! admin-defined form (`services::admin_forms::delete`: audited; refused while its
//! submissions have effects to deliver).

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::flash::Flash;
use super::guard::{AdminAction, CsrfForm, SessionUser};
use super::{blocking, db_failure_in, done, Chrome};
use crate::config::admin_forms::MAX_SECTION_BYTES;
use crate::services::admin_forms::{DeleteError, SaveError, Saved};
use crate::web::render::html;
use crate::web::state::AppState;

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
    )
    .route("/admin/forms/{form}/delete", web::post().to(delete));
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
    /// Why the delete just asked for changed nothing (in the admin's language).
    not_deleted: Option<String>,
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
            not_deleted: None,
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

/// The delete button's form: the CSRF token, the version the editor showed, and the
/// ticked confirmation.
#[derive(Deserialize)]
struct DeleteForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    base: String,
    #[serde(default)]
    confirm: String,
}

impl CsrfForm for DeleteForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
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
    let page = EditorPage::new(&user, Some(&path.into_inner()));
    stored_page(&state, page, StatusCode::OK).await
}

/// `page` (of a named form) with the form as stored, answered with `status`.
async fn stored_page(state: &AppState, mut page: EditorPage, status: StatusCode) -> HttpResponse {
    let name = page.form.clone().unwrap_or_default();
    if state.form(&name).is_some_and(|f| f.origin.is_file()) {
        page.in_file = true;
        return html(status, &page);
    }
    let pool = state.pool.clone();
    match blocking(move || crate::services::admin_forms::stored(&pool, &name)).await {
        Ok(Some(row)) => {
            page.source = row.source;
            page.base = row.version;
            html(status, &page)
        }
        Ok(None) => HttpResponse::NotFound()
            .content_type("text/plain; charset=utf-8")
            .body("No form of this name was defined in the admin."),
        Err(e) => db_failure_in(page.chrome.locale, e),
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

async fn delete(
    state: web::Data<AppState>,
    path: web::Path<String>,
    action: AdminAction<DeleteForm>,
) -> HttpResponse {
    let (user, form, name) = (action.user, action.form, path.into_inner());
    let mut page = EditorPage::new(&user, Some(&name));
    if form.confirm != "yes" {
        page.not_deleted = Some(page.chrome.t("admin-form-editor-delete-unconfirmed"));
        return stored_page(&state, page, StatusCode::UNPROCESSABLE_ENTITY).await;
    }
    let (live, pool, actor, key) = (state.forms.clone(), state.pool.clone(), user.actor(), name.clone());
    let deleted =
        web::block(move || crate::services::admin_forms::delete(&live, &pool, &actor, &key, &form.base))
            .await;
    let (status, text) = match deleted {
        Ok(Ok(())) => return done("/admin/forms", Flash::new("form_deleted")),
        Ok(Err(DeleteError::Db(e))) => return db_failure_in(user.locale, e),
        Err(e) => return db_failure_in(user.locale, e),
        Ok(Err(DeleteError::FileForm)) => (StatusCode::CONFLICT, None),
        Ok(Err(DeleteError::NotFound)) => (StatusCode::NOT_FOUND, None),
        Ok(Err(DeleteError::Stale(by, version))) => (
            StatusCode::CONFLICT,
            Some(page.chrome.t2("admin-form-editor-delete-stale", &("who", by), &("version", version))),
        ),
        Ok(Err(DeleteError::Unfinished(n))) => {
            (StatusCode::CONFLICT, Some(page.chrome.t1("admin-form-editor-delete-unfinished", "count", n)))
        }
    };
    page.not_deleted = text;
    stored_page(&state, page, status).await
}
