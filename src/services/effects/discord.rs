//! `discord`: one message per submission to a Discord channel webhook
//! (`https://discord.com/api/webhooks/{id}/{token}`): the form's title, the reference, the
//! fields `[forms.F.discord] fields` names and a link to the submission in the admin
//! (`[server] public_url`). The URL holds the webhook's token, so it is read from the
//! environment (`url_env`) and never logged.
//!
//! Each message is posted with `?wait=true`: Discord answers only once the message is saved,
//! with the message, whose `id` is kept as the provider's reference. Discord takes no
//! idempotency key, so a timeout or a dropped connection may have posted: it stays UNKNOWN
//! until an admin decides, never resent blindly. A 5xx did not post (retried); a 429 waits as
//! long as the longest of its `retry_after` (seconds, with decimals), `X-RateLimit-Reset-After`
//! and `Retry-After`; any other refusal (an unknown webhook, an invalid token) is final, with
//! Discord's `message` on the attempt.
//!
//! What the operator or the visitor wrote is escaped (no Markdown, no masked links) and the
//! message mentions no one (`allowed_mentions` parses nothing).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use serde::Deserialize;
use serde_json::{json, Value};

use super::chat::{
    admin_base, field_problems, header_seconds, refused, seconds, secret_var, Message, Refusal,
};
use super::http::{client, id_of, Client, Reach};
use super::settings::settings_of;
use super::{BoxFuture, Deps, Effect, Job, Kind, Lookup, Outcome, Report, Settings};
use crate::config::{Config, FormConfig};
use crate::domain::EffectKind;

const DISCORD: EffectKind = EffectKind::named("discord");

/// A message's `content` at most, in characters.
const CONTENT_MAX: usize = 2000;

/// `[forms.F.discord]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscordSettings {
    /// The environment variable holding the webhook URL.
    url_env: String,
    /// The fields whose values the message shows (none by default).
    #[serde(default)]
    fields: Vec<String>,
}

pub struct DiscordKind;

impl Kind for DiscordKind {
    fn name(&self) -> EffectKind {
        DISCORD
    }

    fn settings(&self, table: toml::Value) -> Option<Result<Settings, String>> {
        Some(settings_of::<DiscordSettings>(table))
    }

    fn check(&self, at: &str, form: &FormConfig) -> Vec<String> {
        let listed = form.effects.contains(&DISCORD);
        match form.settings.get::<DiscordSettings>(&DISCORD) {
            None if listed => vec![format!("{at}.discord: the discord effect needs url_env")],
            Some(_) if !listed => vec![format!("{at}.discord: set, but `discord` is not in {at}.effects")],
            Some(s) if s.url_env.is_empty() => vec![format!("{at}.discord.url_env: names no variable")],
            Some(s) => field_problems(&format!("{at}.discord"), form, &s.fields),
            None => Vec::new(),
        }
    }

    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        let mut targets = BTreeMap::new();
        for (name, form) in &deps.config.forms {
            let Some(s) = form.settings.get::<DiscordSettings>(&DISCORD).filter(|_| form.lists(&DISCORD))
            else {
                continue;
            };
            let at = format!("forms.{name}.discord.url_env");
            let url = secret_var(deps.secrets, &at, &s.url_env)?;
            super::http::url_policy::check(&at, &url, false).map_err(|_| {
                anyhow::anyhow!("{at}: the webhook URL must be https:// (http:// only to loopback)")
            })?;
            let url = waiting(&url).ok_or_else(|| {
                anyhow::anyhow!("{at}: not a Discord webhook URL (…/api/webhooks/ID/TOKEN)")
            })?;
            targets.insert(name.clone(), Target { url, fields: s.fields.clone() });
        }
        let admin = admin_base(deps.config);
        Ok(Arc::new(Discord {
            client: client(deps.timeout, Reach::Public)?,
            targets,
            admin,
            config: deps.config.clone(),
        }))
    }
}

/// A webhook URL (`…/webhooks/{numeric id}/{token}`) with `wait=true` (any other query, such
/// as `thread_id`, kept); `None` when it is not one.
fn waiting(url: &str) -> Option<Url> {
    let mut url = Url::parse(url.trim()).ok()?;
    let segments: Vec<&str> = url.path_segments()?.collect();
    let at = segments.iter().position(|s| *s == "webhooks")?;
    match &segments[at + 1..] {
        [id, token] if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) && !token.is_empty() => {}
        _ => return None,
    }
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| k != "wait")
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    url.query_pairs_mut().clear().extend_pairs(kept).append_pair("wait", "true");
    Some(url)
}

/// Where one form's messages go and what they show.
struct Target {
    url: Url,
    fields: Vec<String>,
}

/// No `Debug`: the URLs are secrets.
struct Discord {
    client: Client,
    /// By form name.
    targets: BTreeMap<String, Target>,
    /// The admin's submission URL without the ID.
    admin: Option<String>,
    config: Arc<Config>,
}

/// Markdown's characters escaped (`\*`): the text shows as written, links and all.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\*_~`|><#-+.![]():@".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `escaped` within `max` characters, cut (`…`) where an escape does not lose its character.
fn fit(escaped: &str, max: usize) -> String {
    if escaped.chars().count() <= max {
        return escaped.to_string();
    }
    let mut out: String = escaped.chars().take(max.saturating_sub(1)).collect();
    let slashes = out.chars().rev().take_while(|c| *c == '\\').count();
    if slashes % 2 == 1 {
        out.pop();
    }
    out.push('…');
    out
}

/// The message as Discord's `content` (at most 2000 characters; the fields are cut first).
fn content(m: &Message) -> String {
    let mut head = format!("**{}**\n{}", escape(&m.title), escape(&m.reference));
    if let Some(route) = &m.route {
        head = format!("{head}\n{}", escape(route));
    }
    let foot = match &m.link {
        Some((text, url)) => format!("\n[{}](<{url}>)", escape(text)),
        None => String::new(),
    };
    let fields: Vec<String> = m.fields.iter().map(|(l, v)| escape(&m.field_line(l, v))).collect();
    if fields.is_empty() {
        return fit(&format!("{head}{foot}"), CONTENT_MAX);
    }
    let room = CONTENT_MAX.saturating_sub(head.chars().count() + foot.chars().count() + 1);
    fit(&format!("{head}\n{}{foot}", fit(&fields.join("\n"), room)), CONTENT_MAX)
}

/// Discord's words: its `message`, and each field's error (`content: Must be 2000 or fewer in
/// length.`).
fn words(body: &Value) -> Option<String> {
    let message = body["message"].as_str()?;
    let mut out = vec![message.to_string()];
    fn walk(path: &str, v: &Value, out: &mut Vec<String>) {
        let Some(map) = v.as_object() else { return };
        for (k, v) in map {
            if k == "_errors" {
                for e in v.as_array().into_iter().flatten() {
                    if let Some(m) = e["message"].as_str() {
                        out.push(if path.is_empty() { m.to_string() } else { format!("{path}: {m}") });
                    }
                }
            } else {
                walk(&if path.is_empty() { k.clone() } else { format!("{path}.{k}") }, v, out);
            }
        }
    }
    walk("", &body["errors"], &mut out);
    Some(out.join("; "))
}

/// How long Discord asks to wait: the longest of `retry_after` and `X-RateLimit-Reset-After`.
fn wait(r: &Refusal<'_>) -> Option<Duration> {
    seconds(&r.body["retry_after"]).max(header_seconds(r.headers, "x-ratelimit-reset-after"))
}

impl Effect for Discord {
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
                return Report::failed(Outcome::Permanent, "discord_not_configured");
            };
            let message = Message::of(form, job, &target.fields, self.admin.as_deref());
            let body = json!({ "content": content(&message), "allowed_mentions": { "parse": [] } });
            match self.client.send(self.client.post(target.url.clone()).json(&body)).await {
                Err(failed) => failed,
                Ok(resp) if resp.status().is_success() => {
                    let status = resp.status().as_u16();
                    // Saved: the message's ID when the answer can be read, else the record's key.
                    let saved: Option<Value> = resp.json().await.ok();
                    let id = saved.as_ref().and_then(|m| id_of(m, "id"));
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

    fn message(value: &str) -> Message {
        Message {
            locale: Locale::En,
            title: "New inquiry: Contact".into(),
            reference: "Reference: OF-1".into(),
            route: None,
            fields: vec![("Message".into(), value.into())],
            link: Some((
                "Open in the admin".into(),
                "https://forms.example.com/admin/submissions/s-1".into(),
            )),
        }
    }

    #[test]
    fn visitor_markdown_is_shown_as_written_and_the_link_survives_a_long_message() {
        let c = content(&message("[reset](https://evil.example) @everyone **now**"));
        assert!(c.contains(r"\[reset\]\(https\://evil\.example\) \@everyone \*\*now\*\*"), "{c}");
        let long = content(&message(&"*".repeat(5000)));
        assert!(long.chars().count() <= CONTENT_MAX, "{}", long.chars().count());
        assert!(long.ends_with("(<https://forms.example.com/admin/submissions/s-1>)"), "{long}");
        assert!(!long.contains("\\…"), "no escape is left without its character");
    }

    #[test]
    fn only_webhook_urls_are_taken_and_each_waits() {
        let u = waiting("https://discord.com/api/webhooks/123/tok-en?thread_id=9&wait=false").unwrap();
        assert_eq!(u.as_str(), "https://discord.com/api/webhooks/123/tok-en?thread_id=9&wait=true");
        assert!(waiting("https://discord.com/api/webhooks/123").is_none());
        assert!(waiting("https://discord.com/api/webhooks/abc/tok").is_none());
        assert!(waiting("https://discord.com/api/channels/1/messages").is_none());
    }

    #[test]
    fn discords_words_name_the_field() {
        let body = json!({"code": 50035, "message": "Invalid Form Body",
            "errors": {"content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}]}}});
        assert_eq!(words(&body).unwrap(), "Invalid Form Body; content: Must be 2000 or fewer in length.");
    }
}
