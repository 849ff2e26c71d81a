//! `slack`: a short message to a Slack incoming webhook per submission: the form's title, the
//! visitor's name, the reference and a link to the submission in the admin; nothing else the
//! visitor typed. The webhook URL holds its token, so it is read from the environment
//! (`[forms.F.slack] url_env`) and never logged.
//!
//! Incoming webhooks take no idempotency key and cannot be looked up: a 5xx means Slack did
//! not post (retried), but a timeout or a dropped connection may have posted, so it stays
//! UNKNOWN until an admin decides; it is never resent blindly.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::http::{answered, client, Client, Reach, ServerErrors};
use super::settings::settings_of;
use super::{BoxFuture, Deps, Effect, Job, Kind, Lookup, Outcome, Report, Settings};
use crate::config::FormConfig;
use crate::domain::EffectKind;

const SLACK: EffectKind = EffectKind::named("slack");

/// Characters of the visitor's name a message shows at most.
const NAME_MAX: usize = 100;

/// `[forms.F.slack]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackSettings {
    /// The environment variable holding the incoming-webhook URL.
    url_env: String,
    /// Where the admin pages are served (`https://forms.example.com`); the message links there.
    admin_url: String,
}

pub struct SlackKind;

impl Kind for SlackKind {
    fn name(&self) -> EffectKind {
        SLACK
    }

    fn settings(&self, table: toml::Value) -> Option<Result<Settings, String>> {
        Some(settings_of::<SlackSettings>(table))
    }

    fn check(&self, at: &str, form: &FormConfig) -> Vec<String> {
        let listed = form.effects.contains(&SLACK);
        match form.settings.get::<SlackSettings>(&SLACK) {
            None if listed => vec![format!("{at}.slack: the slack effect needs url_env and admin_url")],
            Some(_) if !listed => vec![format!("{at}.slack: set, but `slack` is not in {at}.effects")],
            Some(s) if s.url_env.is_empty() => vec![format!("{at}.slack.url_env: names no variable")],
            _ => Vec::new(),
        }
    }

    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        let mut targets = BTreeMap::new();
        for (name, form) in &deps.config.forms {
            let Some(s) = form.settings.get::<SlackSettings>(&SLACK).filter(|_| form.lists(&SLACK)) else {
                continue;
            };
            let at = format!("forms.{name}.slack.url_env");
            let url =
                deps.secrets.non_empty(&s.url_env).map(str::to_string).ok_or_else(|| {
                    anyhow::anyhow!("{at}: the environment variable {} is not set", s.url_env)
                })?;
            super::http::url_policy::check(&at, &url, false).map_err(|_| {
                anyhow::anyhow!("{at}: the webhook URL must be https:// (http:// only to loopback)")
            })?;
            if let Some(problem) = super::http::reach::problem(&at, &url, Reach::Public) {
                anyhow::bail!(problem);
            }
            let link = format!("{}/admin/submissions/", s.admin_url.trim_end_matches('/'));
            targets.insert(name.clone(), Target { url, title: form.title.clone(), link });
        }
        Ok(Arc::new(Slack { client: client(deps.timeout, Reach::Public)?, targets }))
    }
}

/// Where one form's messages go and what they say besides the submission.
struct Target {
    url: String,
    title: String,
    /// The admin's submission URL without the ID.
    link: String,
}

/// No `Debug`: the URLs are secrets.
struct Slack {
    client: Client,
    /// By form name.
    targets: BTreeMap<String, Target>,
}

impl Target {
    /// Slack `mrkdwn`: `&`, `<` and `>` escaped in everything the operator or visitor wrote.
    fn message(&self, job: &Job) -> String {
        let name: String =
            job.fields.get("name").map_or("someone", String::as_str).chars().take(NAME_MAX).collect();
        let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
        format!(
            "New inquiry on {} from {} ({}): <{}{}|open it in the admin>",
            escape(&self.title),
            escape(&name),
            job.reference(),
            self.link,
            job.submission_id
        )
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

impl Effect for Slack {
    fn can_reconcile(&self) -> bool {
        false
    }

    fn idempotent(&self) -> bool {
        false
    }

    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let Some(target) = self.targets.get(&job.form) else {
                return Report::failed(Outcome::Permanent, "slack_not_configured");
            };
            let req = self.client.post(&target.url).json(&json!({ "text": target.message(job) }));
            let sent = self.client.send(req).await;
            match answered(sent, ServerErrors::DidNotAct).await {
                Ok(resp) => Report::sent(job.effect_key.clone()).with_http(resp.status().as_u16()),
                Err(report) => report,
            }
        })
    }

    fn reconcile<'a>(&'a self, _job: &'a Job) -> BoxFuture<'a, Lookup> {
        Box::pin(async { Lookup::Failed { error_class: "no_lookup".into() } })
    }
}
