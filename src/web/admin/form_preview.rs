//! `/admin/forms/{form}/preview` (admin or viewer): a link to the visitor's form page as
//! served (`/f/{form}`; it may not be framed, so it opens on its own), and, for an admin, a
//! test submission of the form's fields (`POST /admin/forms/{form}/test`, CSRF-checked and
//! audited) stored marked `test`, with no side effects (`Acceptor::test_submission`).

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::flash::Flash;
use super::forms_page::{inputs, SnippetInput};
use super::guard::{AdminAction, CsrfForm, SessionUser};
use super::{blocking, db_failure_in, done, Chrome, FlashQuery};
use crate::services::accept::test_submission::TestError;
use crate::web::render::html;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/forms/{form}/preview", web::get().to(preview))
        .route("/admin/forms/{form}/test", web::post().to(test));
}

#[derive(Template)]
#[template(path = "admin/form_preview.html")]
struct PreviewPage {
    chrome: Chrome,
    form: String,
    title: String,
    inputs: Vec<SnippetInput>,
    /// Why the last test was refused (each problem).
    problems: Vec<String>,
}

async fn preview(
    state: web::Data<AppState>,
    user: SessionUser,
    path: web::Path<String>,
    q: web::Query<FlashQuery>,
) -> HttpResponse {
    page(&state, &user, &path.into_inner(), q.flash.as_deref(), Vec::new())
}

fn page(
    state: &AppState,
    user: &SessionUser,
    name: &str,
    flash: Option<&str>,
    problems: Vec<String>,
) -> HttpResponse {
    let Some(form) = state.form(name) else {
        return HttpResponse::NotFound()
            .content_type("text/plain; charset=utf-8")
            .body("No such form is in force.");
    };
    let status = if problems.is_empty() { StatusCode::OK } else { StatusCode::UNPROCESSABLE_ENTITY };
    let page = PreviewPage {
        chrome: Chrome::new(user, "forms", flash),
        form: name.to_string(),
        title: form.title.clone(),
        inputs: inputs(&form),
        problems,
    };
    html(status, &page)
}

/// The test form: the CSRF token and the form's fields as typed.
#[derive(Deserialize)]
#[serde(transparent)]
struct TestForm(Vec<(String, String)>);

impl CsrfForm for TestForm {
    fn csrf(&self) -> &str {
        self.0.iter().find(|(k, _)| k == "csrf").map_or("", |(_, v)| v.as_str())
    }
}

/// `POST /admin/forms/{form}/test`: stores the fields as a test submission and opens it; a
/// refused one is shown back with its problems.
async fn test(
    state: web::Data<AppState>,
    path: web::Path<String>,
    action: AdminAction<TestForm>,
) -> HttpResponse {
    let name = path.into_inner();
    let (user, TestForm(pairs)) = (action.user, action.form);
    let Some(form) = state.form(&name) else {
        return HttpResponse::NotFound()
            .content_type("text/plain; charset=utf-8")
            .body("No such form is in force.");
    };
    let raw: Vec<(String, String)> = pairs.into_iter().filter(|(k, _)| k != "csrf").collect();
    let (acceptor, pool, actor) = (state.acceptor.clone(), state.pool.clone(), user.clone());
    let stored = blocking(move || {
        let outcome = acceptor.test_submission(&form, &raw);
        if let Ok(receipt) = &outcome {
            let id = receipt.submission_id.to_string();
            let target = ("submission", id.as_str());
            crate::services::audit::write(
                &pool,
                &actor.actor(),
                "form.test_submission",
                target,
                Some(form.name()),
            )?;
        }
        Ok(outcome)
    })
    .await;
    match stored {
        Ok(Ok(receipt)) => {
            done(&format!("/admin/submissions/{}", receipt.submission_id), Flash::new("test_submitted"))
        }
        Ok(Err(TestError::Invalid(problems))) => page(&state, &user, &name, None, problems),
        Ok(Err(TestError::Store(e))) | Err(e) => db_failure_in(user.locale, e),
    }
}
