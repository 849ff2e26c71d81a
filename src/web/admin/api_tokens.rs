//! `/admin/api-tokens` (admin role only): the read API's tokens with their scopes, form,
//! expiry, last use, uses of the last day and revocation; a form to make one (its secret is
//! shown on the answer page, once, and stored nowhere), and revoking. Each action is
//! CSRF-checked and audited (`services::read_api::tokens`).

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse, ResponseError};
use askama::Template;
use serde::Deserialize;

use super::flash::Flash;
use super::guard::{AdminAction, AuthError, CsrfForm, SessionUser};
use super::{db_failure_in, done, plain, Chrome, FlashQuery};
use crate::base::i18n::{Arg, Locale};
use crate::domain::{ApiScope, Scopes};
use crate::services::audit::Actor;
use crate::services::read_api::tokens::ApiTokenRow;
use crate::services::read_api::tokens::{self, Created, TokenError, TokenRequest, TokenRule};
use crate::services::storage::DbError;
use crate::web::render::html;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/api-tokens", web::get().to(list))
        .route("/admin/api-tokens", web::post().to(create))
        .route("/admin/api-tokens/{id}/revoke", web::post().to(revoke));
}

#[derive(Template)]
#[template(path = "admin/api_tokens.html")]
struct TokensPage {
    chrome: Chrome,
    /// Each token with its uses of the last 24 hours.
    tokens: Vec<(ApiTokenRow, i64)>,
    forms: Vec<String>,
    scopes: Vec<&'static str>,
    /// A token just made (its secret shown this once), or why it was not.
    created: Option<Created>,
    error: Option<String>,
}

fn actor(user: &SessionUser) -> Actor {
    Actor { id: user.id.clone(), label: user.email.clone() }
}

/// The page with the current tokens (read on a blocking thread).
async fn page(
    state: &AppState,
    user: &SessionUser,
    flash: Option<&str>,
    status: StatusCode,
    created: Option<Created>,
    error: Option<String>,
) -> HttpResponse {
    let pool = state.pool.clone();
    let listed = match web::block(move || tokens::list(&pool)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return db_failure_in(user.locale, e),
        Err(_) => return db_failure_in(user.locale, DbError::Unavailable("blocking pool".into())),
    };
    let page = TokensPage {
        chrome: Chrome::new(user, "api-tokens", flash),
        tokens: listed,
        forms: state.forms().iter().map(|f| f.name().to_string()).collect(),
        scopes: ApiScope::ALL.iter().map(|s| s.as_str()).collect(),
        created,
        error,
    };
    html(status, &page)
}

async fn list(state: web::Data<AppState>, user: SessionUser, q: web::Query<FlashQuery>) -> HttpResponse {
    if !user.role.is_admin() {
        return AuthError::Forbidden.said_in(user.locale).error_response();
    }
    page(&state, &user, q.flash.as_deref(), StatusCode::OK, None, None).await
}

/// The create form: `name`, a checkbox named by each scope, `form` (empty: any),
/// `expires_days` (empty: never), `csrf`.
#[derive(Deserialize)]
struct CreateForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    name: String,
    #[serde(default, rename = "read:submissions")]
    read_submissions: Option<String>,
    #[serde(default, rename = "read:effects")]
    read_effects: Option<String>,
    #[serde(default, rename = "write:decisions")]
    write_decisions: Option<String>,
    #[serde(default)]
    form: String,
    #[serde(default)]
    expires_days: String,
}

impl CsrfForm for CreateForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// A broken rule of the request in `locale`'s words.
fn rule_text(locale: Locale, rule: &TokenRule) -> String {
    match rule {
        TokenRule::Name { max } => locale.format("admin-token-bad-name", &[("max", Arg::Num(*max as i64))]),
        TokenRule::NoForm(form) => locale.format("admin-token-bad-form", &[("form", Arg::Str(form))]),
        TokenRule::Expiry { days, max } => {
            locale.format("admin-token-bad-expiry", &[("n", Arg::Num(*days)), ("max", Arg::Num(*max))])
        }
    }
}

impl CreateForm {
    fn request(&self, locale: Locale) -> Result<TokenRequest, String> {
        let ticked = [
            (ApiScope::ReadSubmissions, &self.read_submissions),
            (ApiScope::ReadEffects, &self.read_effects),
            (ApiScope::WriteDecisions, &self.write_decisions),
        ];
        let scopes = Scopes::of(ticked.into_iter().filter(|(_, v)| v.is_some()).map(|(s, _)| s))
            .ok_or_else(|| locale.text("admin-token-no-scope"))?;
        let expires_days = match self.expires_days.trim() {
            "" => None,
            days => Some(days.parse::<i64>().map_err(|_| locale.text("admin-token-bad-days"))?),
        };
        let form = Some(self.form.trim()).filter(|f| !f.is_empty()).map(String::from);
        Ok(TokenRequest { name: self.name.clone(), scopes, form, expires_days })
    }
}

async fn create(state: web::Data<AppState>, action: AdminAction<CreateForm>) -> HttpResponse {
    let AdminAction { user, form } = action;
    let locale = user.locale;
    let request = match form.request(locale) {
        Ok(r) => r,
        Err(e) => return page(&state, &user, None, StatusCode::UNPROCESSABLE_ENTITY, None, Some(e)).await,
    };
    let (app, who) = (state.clone(), actor(&user));
    let made = web::block(move || {
        let forms = app.forms();
        tokens::create(&app.pool, &request, |f| forms.get(f).is_some(), &who)
    })
    .await;
    match made {
        Ok(Ok(created)) => page(&state, &user, None, StatusCode::CREATED, Some(created), None).await,
        Ok(Err(TokenError::Invalid(rule))) => {
            let e = rule_text(locale, &rule);
            page(&state, &user, None, StatusCode::UNPROCESSABLE_ENTITY, None, Some(e)).await
        }
        Ok(Err(e)) => db_failure_in(locale, e),
        Err(_) => db_failure_in(locale, DbError::Unavailable("blocking pool".into())),
    }
}

#[derive(Deserialize)]
struct PlainForm {
    #[serde(default)]
    csrf: String,
}

impl CsrfForm for PlainForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

async fn revoke(
    state: web::Data<AppState>,
    id: web::Path<String>,
    action: AdminAction<PlainForm>,
) -> HttpResponse {
    let (pool, who, locale) = (state.pool.clone(), actor(&action.user), action.user.locale);
    match web::block(move || tokens::revoke(&pool, &id, &who)).await {
        Ok(Ok(_)) => done("/admin/api-tokens", Flash::new("api_token_revoked")),
        Ok(Err(TokenError::NotFound(_))) => HttpResponse::NotFound().finish(),
        Ok(Err(TokenError::AlreadyRevoked(_))) => {
            plain(StatusCode::CONFLICT, locale.text("admin-token-already-revoked"))
        }
        Ok(Err(e)) => db_failure_in(locale, e),
        Err(_) => db_failure_in(locale, DbError::Unavailable("blocking pool".into())),
    }
}
