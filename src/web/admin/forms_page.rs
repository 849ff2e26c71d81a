//! `/admin/forms` (admin or viewer): each form in force with its fields, routes, effects,
//! retention, current version (linked to its versions page), where it is defined (the
//! configuration file, or the admin: then linked to its editor, `form_editor`), the
//! admin-defined forms left out and why, and the
//! `embed.js` snippet to paste into a page; and the "Reload configuration" button (admin
//! only, CSRF-checked, audited), which re-reads the configuration as `SIGHUP` does
//! (`services::reload`).

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::flash::Flash;
use super::guard::{AdminAction, CsrfForm, SessionUser};
use super::{blocking, db_failure_in, done, Chrome, FlashQuery};
use crate::config::{Form, FormOrigin, RetentionConfig};
use crate::web::render::html;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/forms", web::get().to(list)).route("/admin/forms/reload", web::post().to(reload));
}

/// One field as listed.
struct FieldView {
    name: String,
    kind: &'static str,
    label: String,
    required: bool,
    options: String,
}

/// One route as listed: its label, its conditions, and what it changes.
struct RouteView {
    label: String,
    when: String,
    /// `None`: the form's own.
    effects: Option<String>,
    notify: String,
}

/// One form as listed.
struct FormView {
    name: String,
    title: String,
    /// Who saved it in the admin and when (`None`: the configuration file defines it).
    saved: Option<(String, String)>,
    version: Option<String>,
    versions_href: String,
    fields: Vec<FieldView>,
    routes: Vec<RouteView>,
    effects: String,
    /// How long content and keys are kept (a window, or empty: kept).
    retention: (String, String),
    /// The HTML to paste into a page (shown escaped).
    snippet: String,
}

#[derive(Template)]
#[template(path = "admin/forms.html")]
struct FormsPage {
    chrome: Chrome,
    forms: Vec<FormView>,
    /// Why the last reload failed, while no good one has loaded since.
    reload_error: Option<String>,
    /// Forms saved in the admin that are not in force, each with why.
    ignored: Vec<(String, String)>,
}

/// The `embed.js` snippet of one form (its values escaped by the template).
#[derive(Template)]
#[template(path = "admin/embed_snippet.html")]
struct Snippet<'a> {
    base: &'a str,
    form: &'a Form,
    inputs: Vec<SnippetInput>,
}

/// One visible field of the snippet (and of the preview's test form): its name, label, and
/// the HTML input it becomes.
pub(super) struct SnippetInput {
    pub name: String,
    pub label: String,
    /// `textarea`, `select`, or an `<input type=…>`.
    pub tag: &'static str,
    pub input_type: &'static str,
    pub required: bool,
    /// A `select` of several values.
    pub multiple: bool,
    pub options: Vec<String>,
}

async fn list(
    state: web::Data<AppState>,
    user: SessionUser,
    req: HttpRequest,
    q: web::Query<FlashQuery>,
) -> HttpResponse {
    let base = public_base(&state, &req);
    let chrome = Chrome::new(&user, "forms", q.flash.as_deref());
    let in_force = state.forms();
    let forms = in_force.iter().map(|f| view(f, &base, &chrome)).collect();
    let ignored = in_force
        .config
        .admin_forms
        .ignored
        .iter()
        .map(|(name, why)| match in_force.get(name).is_some_and(|f| f.origin.is_file()) {
            true => (name.clone(), chrome.t("admin-forms-ignored-file")),
            false => (name.clone(), why.clone()),
        })
        .collect();
    let page = FormsPage { chrome, forms, reload_error: state.forms.last_error(), ignored };
    html(StatusCode::OK, &page)
}

/// The address pages reach this server at: `[server] public_url`, else the request's own.
fn public_base(state: &AppState, req: &HttpRequest) -> String {
    match &state.config.server.public_url {
        Some(url) => url.trim_end_matches('/').to_string(),
        None => {
            let info = req.connection_info();
            format!("{}://{}", info.scheme(), info.host())
        }
    }
}

fn view(form: &Form, base: &str, chrome: &Chrome) -> FormView {
    let list = |items: &mut dyn Iterator<Item = String>| items.collect::<Vec<_>>().join(", ");
    FormView {
        name: form.name().to_string(),
        title: form.title.clone(),
        saved: match &form.origin {
            FormOrigin::File => None,
            FormOrigin::Admin { saved_by, saved_at } => Some((saved_by.clone(), chrome.when(*saved_at))),
        },
        version: form.version().map(String::from),
        versions_href: super::form_versions::href(form.name()),
        fields: form
            .fields
            .iter()
            .map(|f| FieldView {
                name: f.name.clone(),
                kind: f.kind.as_str(),
                label: f.label().to_string(),
                required: f.required,
                options: f.options.join(", "),
            })
            .collect(),
        routes: form
            .routes
            .iter()
            .enumerate()
            .map(|(i, r)| RouteView {
                label: r.label(i),
                when: list(&mut r.when.iter().map(|(k, v)| format!("{k} = {}", v.accepted().join(" | ")))),
                effects: r.effects.as_ref().map(|e| list(&mut e.iter().map(|k| k.as_str().to_string()))),
                notify: r.notify.as_ref().map_or(String::new(), |n| n.join(", ")),
            })
            .collect(),
        effects: list(&mut form.effects.iter().map(|k| k.as_str().to_string())),
        retention: retention(&form.retention, chrome),
        snippet: snippet(form, base),
    }
}

fn retention(r: &RetentionConfig, chrome: &Chrome) -> (String, String) {
    let window = |w: Option<crate::config::Window>| w.map_or(chrome.t("admin-forms-kept"), |w| w.to_string());
    (window(r.content), window(r.keys))
}

fn snippet(form: &Form, base: &str) -> String {
    Snippet { base, form, inputs: inputs(form) }.render().unwrap_or_default()
}

/// The form's visible fields as HTML inputs.
pub(super) fn inputs(form: &Form) -> Vec<SnippetInput> {
    use crate::domain::FieldType as T;
    form.fields
        .iter()
        .filter(|f| f.kind != T::Hidden)
        .map(|f| {
            let (tag, input_type) = match f.kind {
                T::Textarea => ("textarea", ""),
                T::Select | T::Radio | T::Multiselect | T::Checkboxes => ("select", ""),
                T::Email => ("input", "email"),
                T::Phone => ("input", "tel"),
                T::Number => ("input", "number"),
                T::Date => ("input", "date"),
                T::Url => ("input", "url"),
                T::File => ("input", "file"),
                T::Checkbox | T::Consent => ("input", "checkbox"),
                T::Text | T::Hidden => ("input", "text"),
            };
            SnippetInput {
                name: f.name.clone(),
                label: f.label().to_string(),
                tag,
                input_type,
                required: f.required,
                multiple: matches!(f.kind, T::Multiselect | T::Checkboxes),
                options: f.options.clone(),
            }
        })
        .collect()
}

/// The reload button's form: only the CSRF token.
#[derive(Deserialize)]
struct ReloadForm {
    #[serde(default)]
    csrf: String,
}

impl CsrfForm for ReloadForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `POST /admin/forms/reload`: re-reads the configuration as `SIGHUP` does; the page then
/// says how it went (a refused file's error stays on it and on the dashboard).
async fn reload(state: web::Data<AppState>, action: AdminAction<ReloadForm>) -> HttpResponse {
    let user = action.user;
    let locale = user.locale;
    let (source, live, pool) = (state.source.clone(), state.forms.clone(), state.pool.clone());
    let reloaded = blocking(move || {
        let outcome = crate::services::reload::reload_from(&source, &live, &pool);
        let note = match &outcome {
            Ok(n) => format!("{n} form(s) in force"),
            Err(e) => format!("refused: {e}"),
        };
        crate::services::audit::write(
            &pool,
            &user.actor(),
            "config.reload",
            ("config", "forms"),
            Some(&note),
        )?;
        Ok(outcome)
    })
    .await;
    match reloaded {
        Ok(Ok(forms)) => done("/admin/forms", Flash::new("config_reloaded").arg(forms)),
        Ok(Err(_)) => done("/admin/forms", Flash::new("config_not_reloaded")),
        Err(e) => db_failure_in(locale, e),
    }
}
