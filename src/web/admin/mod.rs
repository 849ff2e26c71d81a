//! The admin pages under `/admin`: every page needs a session, every state-changing
//! request an admin and the session's CSRF token, and every action writes an audit row.

mod api_tokens;
pub mod audit;
mod audit_page;
mod conflicts;
pub mod cookies;
mod dashboard;
mod data_lifecycle;
mod duplicates;
mod effects;
mod files;
mod filters;
pub mod flash;
mod form_editor;
mod form_preview;
pub mod form_versions;
mod forms_page;
pub mod guard;
mod import_page;
mod login;
pub mod oidc;
mod spam_release;
mod submissions;
mod upload;
mod users;

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;

use crate::base::i18n::{Arg, Locale, TimeZone};
use crate::domain::states::TextEnum;
use crate::domain::Role;
use crate::services::duplicates::reason::Reason;
use crate::services::storage::DbError;
use guard::SessionUser;

/// `?flash=`: the message a redirect after an action carries to the page.
#[derive(Deserialize)]
pub struct FlashQuery {
    pub flash: Option<String>,
}

/// `?status=&flash=` of a review queue (conflicts, duplicates).
#[derive(Deserialize)]
pub struct QueueQuery {
    status: Option<String>,
    pub flash: Option<String>,
}

impl QueueQuery {
    /// The requested status if it is one of `statuses`, else `open`.
    pub fn status<S: TextEnum>(&self, statuses: &[S], open: S) -> S {
        statuses.iter().copied().find(|s| Some(s.as_str()) == self.status.as_deref()).unwrap_or(open)
    }
}

/// Rows per status in `statuses` order, 0 where a status has none.
pub fn status_counts<S: TextEnum>(statuses: &[S], counts: &[(S, i64)]) -> Vec<(S, i64)> {
    statuses.iter().map(|&s| (s, counts.iter().filter(|(st, _)| *st == s).map(|(_, n)| n).sum())).collect()
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    login::routes(cfg);
    oidc::routes(cfg);
    dashboard::routes(cfg);
    submissions::routes(cfg);
    form_versions::routes(cfg);
    form_editor::routes(cfg);
    forms_page::routes(cfg);
    form_preview::routes(cfg);
    files::routes(cfg);
    spam_release::routes(cfg);
    effects::routes(cfg);
    conflicts::routes(cfg);
    duplicates::routes(cfg);
    audit_page::routes(cfg);
    users::routes(cfg);
    api_tokens::routes(cfg);
    data_lifecycle::routes(cfg);
    data_lifecycle::more_routes(cfg);
    import_page::routes(cfg);
}

/// What every admin page shows around its content, and the words of its language.
pub struct Chrome {
    pub email: String,
    pub role: Role,
    pub csrf: String,
    pub section: &'static str,
    pub flash: Option<String>,
    pub locale: Locale,
    pub zone: TimeZone,
}

impl Chrome {
    pub fn new(user: &SessionUser, section: &'static str, flash: Option<&str>) -> Chrome {
        Chrome {
            email: user.email.clone(),
            role: user.role,
            csrf: user.csrf.clone(),
            section,
            flash: flash.and_then(|f| flash::message(f, user.locale)),
            locale: user.locale,
            zone: user.zone,
        }
    }

    /// The signed-in user may act, not only read.
    pub fn is_admin(&self) -> bool {
        self.role.is_admin()
    }

    /// The text `key` (`admin-…`) in the user's language.
    pub fn t(&self, key: &str) -> String {
        self.locale.text(key)
    }

    /// The text `key` with one placeable, `$name`, filled with `value`.
    pub fn t1(&self, key: &str, name: &str, value: impl std::fmt::Display) -> String {
        self.locale.format(key, &[(name, Arg::Str(&value.to_string()))])
    }

    /// The text `key` with two placeables.
    pub fn t2<A: std::fmt::Display, B: std::fmt::Display>(
        &self,
        key: &str,
        (n1, v1): &(&str, A),
        (n2, v2): &(&str, B),
    ) -> String {
        let (n1, n2) = (*n1, *n2);
        let (v1, v2) = (v1.to_string(), v2.to_string());
        self.locale.format(key, &[(n1, Arg::Str(&v1)), (n2, Arg::Str(&v2))])
    }

    /// The text `key` with any number of placeables.
    pub fn tn(&self, key: &str, args: &[(&str, String)]) -> String {
        let args: Vec<(&str, Arg<'_>)> = args.iter().map(|(n, v)| (*n, Arg::Str(v))).collect();
        self.locale.format(key, &args)
    }

    /// A stored state, status or label in words (`admin-KIND-VALUE`, e.g. `admin-pair-same_sender`);
    /// the value itself where no locale has words for it.
    pub fn word(&self, kind: &str, value: impl std::fmt::Display) -> String {
        let value = value.to_string();
        words(self.locale, kind, &value)
    }

    /// The detector's stored reasons in words, joined.
    pub fn reasons(&self, list: Vec<Reason>) -> String {
        list.iter().map(|r| r.words(self.locale, None)).collect::<Vec<_>>().join("; ")
    }

    /// A stored UTC time in `[admin] time_zone`, with the zone: `2026-12-05 21:05:00 (Asia/Taipei)`.
    pub fn when(&self, t: chrono::NaiveDateTime) -> String {
        when(self.zone, t)
    }
}

/// `value` (a stored identifier of `kind`) in words in `locale`, or `value` itself.
pub fn words(locale: Locale, kind: &str, value: &str) -> String {
    locale.lookup(&format!("admin-{kind}-{value}"), &[]).unwrap_or_else(|| value.to_string())
}

/// A stored UTC time in `zone`, to the second, the zone named.
pub fn when(zone: TimeZone, t: chrono::NaiveDateTime) -> String {
    let local = t.and_utc().with_timezone(&zone.0);
    format!("{} ({})", local.format("%Y-%m-%d %H:%M:%S"), zone)
}

/// Back to `location` after an action, with a known message shown there.
pub fn done(location: &str, flash: flash::Flash) -> HttpResponse {
    let sep = if location.contains('?') { '&' } else { '?' };
    let flash: String = form_urlencode(&flash.encode());
    HttpResponse::SeeOther().insert_header(("Location", format!("{location}{sep}flash={flash}"))).finish()
}

fn form_urlencode(s: &str) -> String {
    serde_urlencoded::to_string([("", s)]).map(|e| e[1..].to_string()).unwrap_or_default()
}

/// Runs `f` (database work) on the blocking thread pool.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, DbError> + Send + 'static,
) -> Result<T, DbError> {
    web::block(f).await.map_err(|_| DbError::Unavailable("blocking pool".into()))?
}

/// A database failure on an admin page, said in `locale` (who asked: their language; before
/// sign-in, `[admin] locale`).
pub fn db_failure_in(locale: Locale, e: impl std::fmt::Display) -> HttpResponse {
    tracing::warn!(error = %e, "admin page: database error");
    plain(StatusCode::SERVICE_UNAVAILABLE, locale.text("admin-db-unavailable"))
}

/// A refused action: the record is not in a state that allows it.
pub fn refused(message: &str) -> HttpResponse {
    plain(StatusCode::CONFLICT, message.to_string())
}

/// An action's refusal: its status and its text in the reader's words.
pub trait Refusal: std::fmt::Debug + std::fmt::Display {
    fn status(&self) -> StatusCode;
    /// The text in `locale` (`admin-db-unavailable` for a database failure).
    fn text(&self, locale: Locale) -> String;
}

/// A refusal said in the language of the user who asked.
#[derive(Debug)]
pub struct Said<E> {
    pub locale: Locale,
    pub error: E,
}

impl<E: Refusal> std::fmt::Display for Said<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.error, f)
    }
}

impl<E: Refusal> actix_web::ResponseError for Said<E> {
    fn status_code(&self) -> StatusCode {
        self.error.status()
    }

    fn error_response(&self) -> HttpResponse {
        if self.error.status() == StatusCode::SERVICE_UNAVAILABLE {
            tracing::warn!(error = %self.error, "admin action: database error");
        }
        plain(self.error.status(), self.error.text(self.locale))
    }
}

/// `result`'s refusal, said in `locale`.
pub fn said<T, E>(locale: Locale, result: Result<T, E>) -> Result<T, Said<E>> {
    result.map_err(|error| Said { locale, error })
}

/// A plain-text answer (a refusal, a missing record), already in the reader's language.
pub fn plain(status: StatusCode, message: String) -> HttpResponse {
    HttpResponse::build(status).content_type("text/plain; charset=utf-8").body(message)
}
