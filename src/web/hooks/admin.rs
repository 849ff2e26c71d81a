//! Admin pages for inbound webhooks: an Inbound page per source (events, deliveries, each
//! handler's state, the raw body behind a click), the quarantine, conflicts side by side.
//! The actions (assign an event ID, discard, replay a handler) are in `admin_actions`.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use askama::Template;

use crate::base::i18n::Locale;
use crate::services::inbound::review::{self, AttemptRow, Conflict, Delivery, Effect, Event, Quarantined};
use crate::web::admin::guard::SessionUser;
use crate::web::admin::{blocking, db_failure_in, plain, Chrome, FlashQuery};
use crate::web::hooks::Hooks;
use crate::web::render::html;
use crate::web::state::AppState;

#[path = "admin_actions.rs"]
mod actions;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin/inbound", web::get().to(sources))
        .route("/admin/inbound/{source}", web::get().to(source_page))
        .route("/admin/inbound/{source}/events/{id}", web::get().to(event_page))
        .route("/admin/inbound/{source}/quarantine/{id}/{action}", web::post().to(actions::quarantine))
        .route("/admin/inbound/{source}/events/{id}/replay", web::post().to(actions::replay));
}

#[derive(Template)]
#[template(path = "admin/inbound_sources.html")]
struct SourcesPage {
    chrome: Chrome,
    sources: Vec<(String, &'static str, usize)>,
}

async fn sources(hooks: web::Data<Hooks>, user: SessionUser, q: web::Query<FlashQuery>) -> HttpResponse {
    let sources = hooks
        .sources()
        .map(|s| (s.name.clone(), s.config.verify.as_str(), s.config.handlers.len()))
        .collect();
    html(StatusCode::OK, &SourcesPage { chrome: Chrome::new(&user, "inbound", q.flash.as_deref()), sources })
}

/// One event as listed: its row and each handler record.
pub struct EventView {
    pub event: Event,
    pub handlers: Vec<Effect>,
}

impl EventView {
    /// `helpdesk:to-crm` shown as `to-crm`.
    pub fn handler_name(e: &Effect) -> &str {
        e.kind.short_name()
    }
}

#[derive(Template)]
#[template(path = "admin/inbound.html")]
struct SourcePage {
    chrome: Chrome,
    source: String,
    events: Vec<EventView>,
    quarantine: Vec<Quarantined>,
    conflicts: Vec<(Conflict, Event)>,
    /// Largest first-to-last arrival of one event ID among recent redeliveries, in seconds.
    spread_seconds: f64,
    /// The provider's documented redelivery span and the source's `retention.keys`.
    provider_span: String,
    keys_window: String,
}

async fn source_page(
    state: web::Data<AppState>,
    hooks: web::Data<Hooks>,
    user: SessionUser,
    path: web::Path<String>,
    q: web::Query<FlashQuery>,
) -> HttpResponse {
    let source = path.into_inner();
    let locale = user.locale;
    let Some(config) = hooks.source(&source).map(|s| &s.config) else {
        return not_found(locale, "admin-no-such-source");
    };
    // The provider's documented span, in words of the reader's language (the verifier's own
    // English sentence where no locale has words for it).
    let provider_span = config.verify.redelivery_span().map_or_else(
        || locale.text("admin-span-unknown"),
        |(_, why)| {
            locale.lookup(&format!("admin-span-{}", config.verify.as_str()), &[]).unwrap_or(why.into())
        },
    );
    let keys_window =
        config.retention.keys.map_or_else(|| locale.text("admin-kept-for-good"), |k| k.to_string());
    let (pool, name) = (state.pool.clone(), source.clone());
    let loaded = blocking(move || review::source(&pool, &name, 50)).await;
    match loaded {
        Ok(review::SourceView { events, quarantine, conflicts, spread_seconds }) => {
            let chrome = Chrome::new(&user, "inbound", q.flash.as_deref());
            let page = SourcePage {
                chrome,
                source,
                events: events.into_iter().map(|(event, handlers)| EventView { event, handlers }).collect(),
                quarantine,
                conflicts,
                spread_seconds,
                provider_span,
                keys_window,
            };
            html(StatusCode::OK, &page)
        }
        Err(e) => db_failure_in(locale, e),
    }
}

fn not_found(locale: Locale, key: &str) -> HttpResponse {
    plain(StatusCode::NOT_FOUND, locale.text(key))
}

#[derive(Template)]
#[template(path = "admin/inbound_event.html")]
struct EventPage {
    chrome: Chrome,
    source: String,
    event: Event,
    deliveries: Vec<Delivery>,
    /// Each handler record with its attempts (status, error, what the receiver answered).
    handlers: Vec<(Effect, Vec<AttemptRow>)>,
    /// Configured handler names (a replay makes a new batch of one of them).
    names: Vec<String>,
}

async fn event_page(
    state: web::Data<AppState>,
    hooks: web::Data<Hooks>,
    user: SessionUser,
    path: web::Path<(String, String)>,
    q: web::Query<FlashQuery>,
) -> HttpResponse {
    let (source, id) = path.into_inner();
    let locale = user.locale;
    let Some(src) = hooks.source(&source) else {
        return not_found(locale, "admin-no-such-source");
    };
    let names = src.config.handlers.iter().map(|h| h.name.clone()).collect();
    let pool = state.pool.clone();
    let loaded = blocking(move || review::event(&pool, &id)).await;
    match loaded {
        Ok(Some((event, deliveries, handlers))) if event.source == source => {
            let chrome = Chrome::new(&user, "inbound", q.flash.as_deref());
            html(StatusCode::OK, &EventPage { chrome, source, event, deliveries, handlers, names })
        }
        Ok(_) => not_found(locale, "admin-no-such-event"),
        Err(e) => db_failure_in(locale, e),
    }
}
