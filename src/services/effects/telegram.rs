//! `telegram`: one message per submission from a Telegram bot (`sendMessage`) to one chat:
//! the form's title, the reference, the fields `[forms.F.telegram] fields` names and a link
//! to the submission in the admin (`[server] public_url`). The bot's token is read from the
//! environment (`token_env`) and never logged; it goes into the URL path
//! (`{api_url}/bot{token}/sendMessage`), so it must look like a token (`123456:AbC-_…`).
//!
//! The Bot API takes no idempotency key and cannot be asked what was sent: a timeout or a
//! dropped connection may have sent, so it stays UNKNOWN until an admin decides, never resent
//! blindly. A 5xx did not send (retried); a 429 (`"parameters": {"retry_after": N}`) waits N
//! seconds; any other refusal (`chat not found`, a bot removed from the chat) is final, with
//! Telegram's `description` on the attempt. The text is plain (no `parse_mode`), so nothing a
//! visitor typed is read as formatting, and links are not previewed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use super::chat::{
    admin_base, field_problems, plain_text_utf16, refused, seconds, secret_var, Message, Refusal,
};
use super::http::{client, id_of, Client, Reach};
use super::settings::settings_of;
use super::{BoxFuture, Deps, Effect, Job, Kind, Lookup, Outcome, Report, Settings};
use crate::config::{Config, FormConfig};
use crate::domain::EffectKind;

const TELEGRAM: EffectKind = EffectKind::named("telegram");

/// A message's text at most, in UTF-16 code units (as Telegram counts).
const TEXT_MAX: usize = 4096;

/// `[forms.F.telegram]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelegramSettings {
    /// The environment variable holding the bot's token.
    token_env: String,
    /// The chat the messages go to: its ID (`-1001234567890`) or a channel's `@username`.
    chat_id: ChatId,
    /// The Bot API server (a self-hosted one, or a test's).
    #[serde(default = "default_api_url")]
    api_url: String,
    /// The fields whose values the message shows (none by default).
    #[serde(default)]
    fields: Vec<String>,
}

/// A chat as the Bot API names it.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum ChatId {
    Id(i64),
    Name(String),
}

impl ChatId {
    fn json(&self) -> Value {
        match self {
            ChatId::Id(id) => json!(id),
            ChatId::Name(name) => json!(name.trim()),
        }
    }

    fn is_empty(&self) -> bool {
        matches!(self, ChatId::Name(n) if n.trim().is_empty())
    }
}

fn default_api_url() -> String {
    "https://api.telegram.org".into()
}

pub struct TelegramKind;

impl Kind for TelegramKind {
    fn name(&self) -> EffectKind {
        TELEGRAM
    }

    fn settings(&self, table: toml::Value) -> Option<Result<Settings, String>> {
        Some(settings_of::<TelegramSettings>(table))
    }

    fn check(&self, at: &str, form: &FormConfig) -> Vec<String> {
        let listed = form.effects.contains(&TELEGRAM);
        let Some(s) = form.settings.get::<TelegramSettings>(&TELEGRAM) else {
            return match listed {
                true => vec![format!("{at}.telegram: the telegram effect needs token_env and chat_id")],
                false => Vec::new(),
            };
        };
        let mut out = Vec::new();
        if !listed {
            out.push(format!("{at}.telegram: set, but `telegram` is not in {at}.effects"));
        }
        if s.token_env.is_empty() {
            out.push(format!("{at}.telegram.token_env: names no variable"));
        }
        if s.chat_id.is_empty() {
            out.push(format!("{at}.telegram.chat_id: names no chat"));
        }
        out.extend(api_url_problem(&format!("{at}.telegram.api_url"), &s.api_url));
        out.extend(field_problems(&format!("{at}.telegram"), form, &s.fields));
        out
    }

    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        let mut targets = BTreeMap::new();
        for (name, form) in &deps.config.forms {
            let Some(s) = form.settings.get::<TelegramSettings>(&TELEGRAM).filter(|_| form.lists(&TELEGRAM))
            else {
                continue;
            };
            let at = format!("forms.{name}.telegram");
            if let Some(problem) = api_url_problem(&format!("{at}.api_url"), &s.api_url) {
                anyhow::bail!(problem);
            }
            let token = secret_var(deps.secrets, &format!("{at}.token_env"), &s.token_env)?;
            if !is_token(&token) {
                anyhow::bail!("{at}.token_env: the variable {} does not hold a bot token", s.token_env);
            }
            let url = format!("{}/bot{token}/sendMessage", s.api_url.trim().trim_end_matches('/'));
            targets.insert(name.clone(), Target { url, chat: s.chat_id.json(), fields: s.fields.clone() });
        }
        let admin = admin_base(deps.config);
        Ok(Arc::new(Telegram {
            client: client(deps.timeout, Reach::Public)?,
            targets,
            admin,
            config: deps.config.clone(),
        }))
    }
}

/// What is wrong with the Bot API's URL (`at` names the setting): not `https://` (`http://`
/// only to loopback).
fn api_url_problem(at: &str, url: &str) -> Option<String> {
    super::http::url_policy::check(at, url, false)
        .err()
        .map(|_| format!("{at}: must be an https:// URL (http:// only to loopback)"))
}

/// A bot token as BotFather writes it: the bot's ID, `:`, letters, digits, `-` and `_`; so
/// it stays one path segment.
fn is_token(token: &str) -> bool {
    match token.split_once(':') {
        Some((id, secret)) => {
            !id.is_empty()
                && id.bytes().all(|b| b.is_ascii_digit())
                && !secret.is_empty()
                && secret.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        }
        None => false,
    }
}

/// Where one form's messages go and what they show.
struct Target {
    /// `…/bot{token}/sendMessage`.
    url: String,
    chat: Value,
    fields: Vec<String>,
}

/// No `Debug`: the URLs hold the token.
struct Telegram {
    client: Client,
    /// By form name.
    targets: BTreeMap<String, Target>,
    /// The admin's submission URL without the ID.
    admin: Option<String>,
    config: Arc<Config>,
}

/// The message as plain text (at most 4096 UTF-16 code units; the fields are cut first).
fn text(m: &Message) -> String {
    plain_text_utf16(m, TEXT_MAX)
}

/// Telegram's words: its `description` (`Bad Request: chat not found`).
fn words(body: &Value) -> Option<String> {
    body["description"].as_str().map(str::to_string)
}

/// How long Telegram asks to wait (`parameters.retry_after`, seconds).
fn wait(r: &Refusal<'_>) -> Option<Duration> {
    seconds(&r.body["parameters"]["retry_after"])
}

impl Effect for Telegram {
    fn can_reconcile(&self) -> bool {
        false
    }

    fn idempotent(&self) -> bool {
        false
    }

    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let (Some(target), Some(form)) = (self.targets.get(&job.form), self.config.forms.get(&job.form))
            else {
                return Report::failed(Outcome::Permanent, "telegram_not_configured");
            };
            let message = Message::of(form, job, &target.fields, self.admin.as_deref());
            let body = json!({
                "chat_id": target.chat,
                "text": text(&message),
                "link_preview_options": { "is_disabled": true },
            });
            match self.client.send(self.client.post(&target.url).json(&body)).await {
                Err(failed) => failed,
                Ok(resp) if resp.status().is_success() => {
                    let status = resp.status().as_u16();
                    // Sent: the message's ID when the answer can be read, else the record's key.
                    let sent: Option<Value> = resp.json().await.ok();
                    let id = sent.as_ref().and_then(|s| id_of(&s["result"], "message_id"));
                    Report::sent(id.unwrap_or_else(|| job.effect_key.clone())).with_http(status)
                }
                Ok(resp) => refused(resp, words, wait).await,
            }
        })
    }

    fn reconcile<'a>(&'a self, _job: &'a Job) -> BoxFuture<'a, Lookup> {
        Box::pin(async { Lookup::Failed { error_class: "no_lookup".into() } })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::i18n::Locale;

    /// check-config's problems of the demo form with `effects` and `table` as its telegram table.
    fn problems(effects: &str, table: &str) -> Vec<String> {
        crate::services::effects::demo_problems(
            effects,
            &format!(
                "[forms.contact.telegram]
{table}"
            ),
            "telegram",
        )
    }

    #[test]
    fn check_config_names_each_wrong_setting() {
        let listed = r#"effects = ["telegram"]"#;
        assert_eq!(
            problems(listed, "token_env = \"T\"\nchat_id = -100\nfields = [\"message\"]\n"),
            Vec::<String>::new()
        );
        assert_eq!(
            problems(
                listed,
                "token_env = \"\"\nchat_id = \" \"\napi_url = \"http://bot.example\"\nfields = [\"phone\"]\n"
            ),
            [
                "forms.contact.telegram.token_env: names no variable",
                "forms.contact.telegram.chat_id: names no chat",
                "forms.contact.telegram.api_url: must be an https:// URL (http:// only to loopback)",
                "forms.contact.telegram.fields: `phone` is not a field of this form",
            ]
        );
        let unlisted = problems(r#"effects = []"#, "token_env = \"T\"\nchat_id = \"@sales\"\n");
        assert_eq!(unlisted, ["forms.contact.telegram: set, but `telegram` is not in forms.contact.effects"]);
    }

    #[test]
    fn only_a_token_shaped_value_goes_into_the_path() {
        assert!(is_token("123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"));
        for bad in ["", "123456", ":abc", "12a:abc", "123:", "123:ab/../x", "123:a b", "123:a?x=1"] {
            assert!(!is_token(bad), "{bad}");
        }
    }

    #[test]
    fn a_long_message_keeps_its_link_within_telegrams_limit() {
        let m = Message {
            locale: Locale::En,
            title: "New inquiry: Contact".into(),
            reference: "Reference: OF-1".into(),
            route: None,
            fields: vec![("Message".into(), "😀".repeat(5000))],
            link: Some((
                "Open in the admin".into(),
                "https://forms.example.com/admin/submissions/s-1".into(),
            )),
        };
        let t = text(&m);
        assert!(t.encode_utf16().count() <= TEXT_MAX, "{}", t.encode_utf16().count());
        assert!(t.ends_with("Open in the admin: https://forms.example.com/admin/submissions/s-1"), "{t}");
    }
}
