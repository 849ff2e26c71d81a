//! `teams`: one Adaptive Card per submission to a Microsoft Teams channel through a Workflows
//! ("When a Teams webhook request is received") or incoming-webhook URL: the form's title,
//! the reference, the fields `[forms.F.teams] fields` names and a link to the submission in
//! the admin (`[server] public_url`). The URL holds its signature, so it is read from the
//! environment (`url_env`) and never logged.
//!
//! The webhook takes no idempotency key and cannot be looked up: a 5xx means Teams did not
//! post (retried), 429 waits as `Retry-After` says, and the old connectors' way of saying 429
//! (a 2xx whose body reads "Microsoft Teams endpoint returned HTTP error 429") is a 429 too.
//! A timeout or a dropped connection may have posted, so it stays UNKNOWN until an admin
//! decides; it is never resent blindly.
//!
//! Every text the operator or the visitor wrote goes into a `TextRun`, which Teams shows as
//! it is (no Markdown): a visitor cannot make a link or a heading of what they typed.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::chat::{admin_base, refused, Message, Refusal};
use super::chat_hook::{Hook, Target};
use super::http::{client, read_head, Client, Reach};
use super::{BoxFuture, Deps, Effect, Job, Kind, Lookup, Outcome, Report, Settings};
use crate::config::{Config, FormConfig};
use crate::domain::EffectKind;

const TEAMS: EffectKind = EffectKind::named("teams");

const HOOK: Hook = Hook { kind: TEAMS, signed: false };

/// What an old Office 365 connector writes in a 2xx body when it throttled the request.
const THROTTLED_IN_BODY: &str = "HTTP error 429";

pub struct TeamsKind;

impl Kind for TeamsKind {
    fn name(&self) -> EffectKind {
        TEAMS
    }

    fn settings(&self, table: toml::Value) -> Option<Result<Settings, String>> {
        HOOK.settings(table)
    }

    fn check(&self, at: &str, form: &FormConfig) -> Vec<String> {
        HOOK.check(at, form)
    }

    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        let targets = HOOK.targets(deps.config, deps.secrets)?;
        let admin = admin_base(deps.config);
        Ok(Arc::new(Teams {
            client: client(deps.timeout, Reach::Public)?,
            targets,
            admin,
            config: deps.config.clone(),
        }))
    }
}

/// No `Debug`: the URLs are secrets.
struct Teams {
    client: Client,
    /// By form name.
    targets: BTreeMap<String, Target>,
    /// The admin's submission URL without the ID.
    admin: Option<String>,
    config: Arc<Config>,
}

/// The message as Teams takes it: one Adaptive Card attachment.
fn card(m: &Message) -> Value {
    let run = |text: &str, bold: bool| {
        let mut r = json!({ "type": "TextRun", "text": text });
        if bold {
            r["weight"] = json!("Bolder");
        }
        r
    };
    let mut body = vec![
        json!({ "type": "RichTextBlock", "inlines": [run(&m.title, true)] }),
        json!({ "type": "RichTextBlock", "inlines": [run(&m.reference, false)] }),
    ];
    if let Some(route) = &m.route {
        body.push(json!({ "type": "RichTextBlock", "inlines": [run(route, false)] }));
    }
    for (label, value) in &m.fields {
        body.push(json!({
            "type": "RichTextBlock",
            "inlines": [run(&m.field_line(label, ""), true), run(value, false)],
        }));
    }
    let mut content = json!({
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": body,
    });
    if let Some((text, url)) = &m.link {
        content["actions"] = json!([{ "type": "Action.OpenUrl", "title": text, "url": url }]);
    }
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": content,
        }],
    })
}

/// An Azure error body's words (`{"error": {"code", "message"}}`).
fn words(body: &Value) -> Option<String> {
    let e = &body["error"];
    match (e["code"].as_str(), e["message"].as_str()) {
        (Some(code), Some(message)) => Some(format!("{code}: {message}")),
        (None, Some(message)) => Some(message.to_string()),
        (Some(code), None) => Some(code.to_string()),
        (None, None) => None,
    }
}

fn no_wait(_: &Refusal<'_>) -> Option<std::time::Duration> {
    None
}

impl Effect for Teams {
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
                return Report::failed(Outcome::Permanent, "teams_not_configured");
            };
            let message = Message::of(form, job, &target.fields, self.admin.as_deref());
            let sent = self.client.send(self.client.post(&target.url).json(&card(&message))).await;
            match sent {
                Err(failed) => failed,
                Ok(resp) if resp.status().is_success() => {
                    let status = resp.status().as_u16();
                    let head = read_head(resp).await;
                    if String::from_utf8_lossy(&head).contains(THROTTLED_IN_BODY) {
                        return Report::failed(Outcome::Transient { retry_after: None }, "http_429")
                            .with_http(status)
                            .with_detail(super::http::excerpt(&head));
                    }
                    Report::sent(job.effect_key.clone()).with_http(status)
                }
                Ok(resp) => refused(resp, words, no_wait).await,
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

    #[test]
    fn the_card_is_one_adaptive_card_whose_texts_are_plain_runs() {
        let m = Message {
            locale: Locale::En,
            title: "New inquiry: Contact".into(),
            reference: "Reference: OF-1".into(),
            route: None,
            fields: vec![("Message".into(), "[click](https://evil.example) **now**".into())],
            link: Some((
                "Open in the admin".into(),
                "https://forms.example.com/admin/submissions/s-1".into(),
            )),
        };
        let c = card(&m);
        assert_eq!(c["type"], "message");
        let a = &c["attachments"][0];
        assert_eq!(a["contentType"], "application/vnd.microsoft.card.adaptive");
        assert_eq!(a["content"]["type"], "AdaptiveCard");
        let texts: Vec<&Value> = a["content"]["body"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|b| b["inlines"].as_array().unwrap())
            .collect();
        assert!(texts.iter().all(|t| t["type"] == "TextRun"), "{texts:?}");
        assert_eq!(a["content"]["actions"][0]["url"], "https://forms.example.com/admin/submissions/s-1");
    }
}
