//! What static sites load from onceform: `GET /embed.js` and the ALTCHA challenge (with
//! the solver for onceform's own form page).

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::problem::{Problem, ProblemKind};
use super::TrustedProxies;
use crate::base::i18n::{Arg, Locale};
use crate::config::CaptchaProvider;
use crate::services::spam::altcha;
use crate::web::state::AppState;

const EMBED_JS: &str = include_str!("../../../static/embed.js");
const ALTCHA_JS: &str = include_str!("../../../static/altcha.js");

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/embed.js", web::get().to(embed_js))
        .route("/static/altcha.js", web::get().to(|| script(ALTCHA_JS)));
    super::cors::api(cfg).route("/api/forms/{form}/altcha", web::get().to(altcha_challenge));
}

/// A script: dependency-free, cached for an hour, loadable from any page.
async fn script(body: impl Into<String>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/javascript; charset=utf-8")
        .insert_header(("Cache-Control", "public, max-age=3600"))
        .insert_header(("Cross-Origin-Resource-Policy", "cross-origin"))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .body(body.into())
}

/// The messages embed.js shows (`embed-*` in `locales/`).
const EMBED_KEYS: [&str; 13] = [
    "embed-checking",
    "embed-sending",
    "embed-errors",
    "embed-thanks",
    "embed-reference",
    "embed-unreachable",
    "embed-retrying",
    "embed-conflict",
    "embed-rate-limited",
    "embed-unavailable",
    "embed-forbidden",
    "embed-failed",
    "embed-file-too-large",
];

#[derive(Deserialize)]
struct EmbedQuery {
    form: Option<String>,
}

/// `GET /embed.js[?form=NAME]`: the script with its messages in the locales the form offers
/// (all shipped ones without a form) and the form's own locale as its default; the page's
/// `lang` (or the form element's `data-onceform-lang`) picks among them.
async fn embed_js(state: web::Data<AppState>, q: web::Query<EmbedQuery>) -> HttpResponse {
    let in_force = state.forms();
    let form = q.form.as_deref().and_then(|n| in_force.config.form(n));
    let (offered, default) = match form {
        Some(f) => (f.offered_locales(), f.locale_for(None)),
        None => (Locale::ALL.to_vec(), Locale::En),
    };
    let messages: Map<String, Value> = offered
        .iter()
        .map(|l| {
            let texts = EMBED_KEYS
                .iter()
                .map(|k| (k.to_string(), Value::from(l.format(k, &[("seconds", Arg::Str("{seconds}"))]))))
                .collect::<Map<_, _>>();
            (l.tag().to_string(), Value::Object(texts))
        })
        .collect();
    let body = EMBED_JS
        .replacen("/*ONCEFORM_MESSAGES*/{}", &Value::Object(messages).to_string(), 1)
        .replacen("/*ONCEFORM_LOCALE*/\"en\"", &Value::from(default.tag()).to_string(), 1);
    script(body).await
}

/// `GET /api/forms/{form}/altcha`: a fresh, signed, expiring proof-of-work challenge.
/// A client holding as many live solutions as one client may gets a 429 until the oldest
/// expires (the used-answer memory is bounded per client, see `spam::used`).
async fn altcha_challenge(
    req: HttpRequest,
    state: web::Data<AppState>,
    proxies: web::Data<TrustedProxies>,
    form: web::Path<String>,
) -> HttpResponse {
    let f = match super::form(&state, &form) {
        Ok(f) => f,
        Err(p) => return p.response(),
    };
    let captcha = f.captcha.as_ref().filter(|c| c.provider == CaptchaProvider::Altcha);
    let Some(captcha) = captcha else {
        return Problem::new(ProblemKind::NotFound, "this form does not use ALTCHA").response();
    };
    if let Some(wait) = state.spam.challenge_wait(proxies.client_of(&req)) {
        let seconds = wait.as_secs().max(1);
        return Problem::new(
            ProblemKind::RateLimited,
            format!("too many challenges solved from this client; retry in {seconds} s"),
        )
        .retry_after(seconds)
        .response();
    }
    HttpResponse::Ok().insert_header(("Cache-Control", "no-store")).json(altcha::challenge(
        state.spam.secret(),
        captcha,
        crate::base::clock::unix_seconds(),
    ))
}
