//! Side effects as types: one `Effect` trait, one file per kind, one registration line each.
//!
//! Adding a form effect kind: a file here with a unit struct implementing `Kind` (its name,
//! its `[forms.F.NAME]` table if it takes one, its check-config rules, whether a submission
//! gets one) whose `effect` builds the `Effect` that delivers and reconciles its records;
//! HTTP kinds classify answers with `http::answered`. Then one line in `KINDS`, and a
//! section in docs/CONFIGURATION.md. `slack.rs` is a small example; a CRM adapter becomes a
//! kind of its own with one line (`crm_form.rs`). The handlers of inbound events are kinds
//! too (`handler.rs`), one line each in `HANDLERS`: a kind that is both is one effect
//! (`webhook.rs`).

mod chat;
mod chat_hook;
mod confirmation_email;
pub mod crm;
mod crm_form;
mod crm_lead;
mod crm_note;
mod dingtalk;
mod discord;
mod feishu;
mod forward;
mod handler;
pub mod http;
mod kind;
mod line;
pub mod mail;
mod outcome;
mod owner_notification;
mod settings;
mod sheets;
mod slack;
mod teams;
mod telegram;
pub mod webhook;
mod wecom;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use chrono::NaiveDateTime;

use serde::de::{self, Deserializer};
use serde::Deserialize;

use crate::config::hooks::HandlerKind;
use crate::config::kind_settings::unknown_name;
use crate::config::{Config, FormConfig, RouteConfig, Secrets};
use crate::db::models::JobRow;
use crate::domain::keyring::Keyring;
use crate::domain::{EffectId, EffectKind, RecordKind, SubmissionId};
use handler::Handler;
pub use kind::{Deps, Kind, KindSettings, Settings};
pub use outcome::{Lookup, Outcome, Report};

/// Every kind of form side effect, one line each: a new kind is a file beside this one
/// (see `Kind`) and its line here.
static KINDS: &[&dyn Kind] = &[
    &crm_lead::CrmLeadKind,
    &crm_note::CrmNoteKind,
    &crm_form::PIPEDRIVE,
    &crm_form::ZOHO,
    &confirmation_email::ConfirmationEmailKind,
    &owner_notification::OwnerNotificationKind,
    &slack::SlackKind,
    &teams::TeamsKind,
    &discord::DiscordKind,
    &telegram::TelegramKind,
    &line::LineKind,
    &wecom::WecomKind,
    &dingtalk::DingtalkKind,
    &feishu::FeishuKind,
    &sheets::SheetsKind,
    &webhook::WebhookKind,
];

/// Every handler kind of inbound events, one line each: a kind that is also a form kind
/// lives in that kind's file (see `handler`).
static HANDLERS: &[&dyn Handler] = &[
    &forward::ForwardHandler,
    &crm_lead::CrmLeadHandler,
    &owner_notification::OwnerNotificationHandler,
    &webhook::WebhookHandler,
];

/// The names of every kind, in registration order.
pub fn kind_names() -> Vec<String> {
    KINDS.iter().map(|k| k.name().as_str().to_owned()).collect()
}

/// Every kind's problems with `form` (called `at`, i.e. `forms.NAME`).
pub fn problems(at: &str, form: &FormConfig) -> Vec<String> {
    KINDS.iter().flat_map(|k| k.check(at, form)).collect()
}

/// What is wrong with the secrets the kinds read for `form` from `env` (`Kind::secret_problems`).
pub fn secret_problems(at: &str, form: &FormConfig, env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    KINDS.iter().flat_map(|k| k.secret_problems(at, form, env)).collect()
}

/// The kinds' tables a submission of `form` that took `route` is delivered with: the form's,
/// each kind's table on the route laid over the form's (`Kind::on_route`); and the kinds
/// whose table a route may not hold, which keep the form's.
pub fn route_settings(form: &FormConfig, route: &RouteConfig) -> (KindSettings, Vec<EffectKind>) {
    let mut settings = form.settings.clone();
    let mut refused = Vec::new();
    for kind in route.settings.kinds() {
        let laid = route
            .settings
            .raw(kind)
            .and_then(|own| kind::find(kind.as_str())?.on_route(form.settings.raw(kind), own));
        match laid {
            Some(s) => settings.set(kind.clone(), s),
            None => refused.push(kind.clone()),
        }
    }
    (settings, refused)
}

/// Whether a submission of `form` gets a record of `kind` (`filled`: it has a value for that field).
pub fn applies(kind: &EffectKind, form: &FormConfig, filled: &dyn Fn(&str) -> bool) -> bool {
    kind::find(kind.as_str()).is_none_or(|k| k.applies(form, filled))
}

/// The registered handler kind named `name`.
fn find_handler(name: &str) -> Option<&'static dyn Handler> {
    HANDLERS.iter().copied().find(|k| k.name() == name)
}

impl<'de> Deserialize<'de> for HandlerKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        match find_handler(&name) {
            Some(kind) => Ok(HandlerKind(kind)),
            None => {
                Err(de::Error::custom(unknown_name("handler kind", &name, HANDLERS.iter().map(|k| k.name()))))
            }
        }
    }
}

/// Registers every configured handler of every source, with what the form effect kinds
/// get (`effects::Deps`: the same CRM adapter, mailer and call timeout).
pub fn register_handlers(registry: &mut Registry, deps: &Deps<'_>) -> anyhow::Result<()> {
    for (source, hook) in &deps.config.hooks {
        for h in &hook.handlers {
            let at = format!("hooks.{source}.handlers.{}", h.name);
            let kind =
                find_handler(h.kind.as_str()).ok_or_else(|| anyhow::anyhow!("{at}: unknown handler kind"))?;
            let effect = kind.effect(h, deps).map_err(|e| anyhow::anyhow!("{at}: {e}"))?;
            registry.register_as(RecordKind::hook(source, &h.name), effect);
        }
    }
    Ok(())
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One claimed side-effect record and what it reads of its owner (a submission, or an
/// inbound event).
#[derive(Debug, Clone)]
pub struct Job {
    pub id: EffectId,
    pub kind: RecordKind,
    /// The effect's own key: sent as Idempotency-Key / external reference / Message-ID.
    pub effect_key: String,
    /// This attempt's number (1 for the first).
    pub attempt: i32,
    /// The owner's ID: the submission's, or the inbound event's row ID.
    pub submission_id: SubmissionId,
    /// The submission's form; an event's: its source's scope (`RecordKind::source_scope`).
    pub form: String,
    /// The submission's fields (empty for an event's record, and once purged).
    pub fields: BTreeMap<String, String>,
    /// The inbound event owning the record; `None`: a submission owns it.
    pub event: Option<InboundEvent>,
    pub received_at: NaiveDateTime,
    pub journey_id: Option<String>,
    /// The visitor's negotiated locale (`locale = "auto"` forms); `None`: the form's.
    pub locale: Option<crate::base::i18n::Locale>,
    /// The route the submission took (`[[forms.F.routes]]`, as stored); `None`: none, or
    /// an event's record.
    pub route: Option<String>,
    /// The submission an admin decided this one is a duplicate of (as the record was claimed).
    pub duplicate_of: Option<SubmissionId>,
}

/// What a handler reads of the inbound event owning its record.
#[derive(Debug, Clone)]
pub struct InboundEvent {
    pub source: String,
    pub event_id: String,
    pub content_type: String,
    /// The verified body (WeCom: decrypted); `None` once purged.
    pub body: Option<String>,
}

impl Job {
    /// The job of a claimed row; an error (a record that cannot be delivered as it is) when
    /// it has no owner or its stored fields do not parse.
    pub fn from_row(row: JobRow) -> Result<Job, String> {
        let (submission_id, form, fields, event, received_at, journey_id, locale, route, duplicate_of) =
            match (row.submission, row.event) {
                (Some(s), _) => {
                    let fields = match s.fields_json.as_deref() {
                        Some(j) => crate::domain::stored_fields::parse(j).map_err(|e| e.to_string())?,
                        None => BTreeMap::new(),
                    };
                    (
                        s.id,
                        s.form,
                        fields,
                        None,
                        s.received_at,
                        s.journey_id,
                        s.locale,
                        s.route,
                        s.duplicate_of,
                    )
                }
                (None, Some(e)) => {
                    let scope = RecordKind::source_scope(&e.source);
                    let event = InboundEvent {
                        source: e.source,
                        event_id: e.event_id,
                        content_type: e.content_type,
                        body: e.body,
                    };
                    (e.id.into(), scope, BTreeMap::new(), Some(event), e.received_at, None, None, None, None)
                }
                (None, None) => return Err("the record has no owner".into()),
            };
        Ok(Job {
            kind: row.kind,
            id: row.id,
            effect_key: row.effect_key,
            attempt: row.attempts,
            submission_id,
            form,
            fields,
            event,
            received_at,
            journey_id,
            locale: locale.as_deref().and_then(crate::base::i18n::Locale::parse),
            route,
            duplicate_of,
        })
    }

    /// The reference people see (receipt page, emails): the random tail of the submission ID.
    pub fn reference(&self) -> String {
        crate::base::format::reference(&self.submission_id)
    }
}

/// A kind of side effect and how to deliver and reconcile it.
/// Registered under the record kind it delivers (see `Registry`).
pub trait Effect: Send + Sync {
    /// An UNKNOWN outcome can be looked up (else it waits for an admin).
    fn can_reconcile(&self) -> bool;
    /// Sending again has no further effect (an upsert): ambiguous failures are simply retried.
    fn idempotent(&self) -> bool;
    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report>;
    fn reconcile<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Lookup>;
}

/// The record kinds this process can deliver: the form effect kinds and each inbound
/// webhook handler.
#[derive(Default, Clone)]
pub struct Registry {
    effects: BTreeMap<RecordKind, Arc<dyn Effect>>,
    /// The forms whose settings it was built with.
    forms: std::collections::BTreeSet<String>,
}

impl Registry {
    /// The form effect kinds; `also` registers further record kinds with the same CRM
    /// adapter and mailer (the inbound webhook handlers, see `app::registry`).
    /// The effects of `config`'s kinds (and those `also` registers); `keyring` signs the file
    /// links a CRM gets; the kinds read their secrets from `secrets`.
    pub fn from_config(
        config: Arc<Config>,
        keyring: Arc<Keyring>,
        secrets: &Secrets,
        also: impl FnOnce(&mut Registry, &Deps<'_>) -> anyhow::Result<()>,
    ) -> anyhow::Result<Registry> {
        let timeout = Duration::from_millis(config.worker.call_timeout_ms);
        let crm = crm::adapter(&config.crm, secrets, timeout)?;
        let mailer = Arc::new(mail::Mailer::new(&config.smtp, timeout)?);
        mail::template::warn_stale_overrides(config.forms.keys());
        let mut registry = Registry { forms: config.forms.keys().cloned().collect(), ..Registry::default() };
        let mut files = crate::services::files::Files::stored(&config.server, &config.database);
        if let Some(url) = &config.server.public_url {
            files = files.with_links(crate::services::files::FileLinks::new(keyring, url));
        }
        let deps = Deps { config: &config, crm: &crm, mailer: &mailer, files: &files, secrets, timeout };
        also(&mut registry, &deps)?;
        for kind in KINDS {
            registry.register_as(kind.name().into(), kind.effect(&deps)?);
        }
        Ok(registry)
    }

    /// Registers `effect` for records of kind `kind` (inbound webhook handlers).
    pub fn register_as(&mut self, kind: RecordKind, effect: Arc<dyn Effect>) {
        self.effects.insert(kind, effect);
    }

    /// Whether it was built with the settings of the form `form` (a form saved in the admin
    /// since may not be among them yet).
    pub fn knows_form(&self, form: &str) -> bool {
        self.forms.contains(form)
    }

    pub fn get(&self, kind: &RecordKind) -> Option<Arc<dyn Effect>> {
        self.effects.get(kind).cloned()
    }

    /// The kinds whose UNKNOWN outcomes can be looked up.
    pub fn reconcilable(&self) -> Vec<RecordKind> {
        self.effects.iter().filter(|(_, e)| e.can_reconcile()).map(|(k, _)| k.clone()).collect()
    }
}

/// check-config's problems of the demo configuration with the contact form's `effects` line
/// replaced by `effects` and `extra` (tables) after it, those naming `about` (a kind's tests).
#[cfg(test)]
pub(crate) fn demo_problems(effects: &str, extra: &str, about: &str) -> Vec<String> {
    let text = crate::config::DEFAULT_CONFIG
        .replace(r#"effects = ["crm_lead", "confirmation_email", "owner_notification"]"#, effects)
        + "\n"
        + extra;
    let config = crate::config::Config::parse(&text).unwrap_or_else(|e| panic!("{e}"));
    let mut out = crate::services::check_config::problems(&config);
    out.retain(|p| p.contains(about));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::models::OwningSubmission;
    use crate::domain::EffectState;

    fn row(fields_json: Option<&str>) -> JobRow {
        JobRow {
            id: "e-1".into(),
            kind: EffectKind::CRM_LEAD.into(),
            batch: 0,
            effect_key: "s-1:crm_lead:0".into(),
            state: EffectState::Sending,
            attempts: 1,
            submission: Some(OwningSubmission {
                id: "s-1".into(),
                form: "contact".into(),
                fields_json: fields_json.map(str::to_string),
                received_at: chrono::NaiveDateTime::default(),
                journey_id: None,
                locale: None,
                route: None,
                duplicate_of: None,
            }),
            event: None,
        }
    }

    #[test]
    fn a_job_whose_fields_do_not_parse_is_an_error_not_an_empty_lead() {
        let job = Job::from_row(row(Some(r#"{"name":"Ada"}"#))).unwrap();
        assert_eq!(job.fields.get("name").map(String::as_str), Some("Ada"));
        let err = Job::from_row(row(Some(r#"{"name":"Ada""#))).unwrap_err();
        assert!(err.contains("do not parse"), "{err}");
        assert!(!err.contains("Ada"), "the reason holds no content: {err}");
        let err = Job::from_row(row(Some(r#"{"name":"Grace","age":36}"#))).unwrap_err();
        assert!(!err.contains("36"), "the reason holds no content: {err}");
        assert!(Job::from_row(row(Some(r#"["Ada"]"#))).is_err(), "not a map of fields");
        let purged = Job::from_row(row(None)).unwrap();
        assert!(purged.fields.is_empty(), "purged content is no error (the worker cancels it)");
        let orphan = JobRow { submission: None, ..row(None) };
        assert!(Job::from_row(orphan).is_err());
    }

    #[test]
    fn text_forms_round_trip() {
        for name in kind_names() {
            let k: EffectKind = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(k.as_str(), name);
            assert_eq!(serde_json::to_value(k).unwrap(), name);
        }
    }
}
