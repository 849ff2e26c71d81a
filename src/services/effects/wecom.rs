//! `wecom`: one text message per submission from a WeCom (企业微信) group robot: the form's
//! title, the reference, the fields `[forms.F.wecom] fields` names and a link to the
//! submission in the admin (`[server] public_url`). The robot's webhook URL
//! (`https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=KEY`) holds its key, so it is read
//! from the environment (`url_env`) and never logged.
//!
//! WeCom answers HTTP 200 whether it sent or not: `{"errcode": 0, "errmsg": "ok"}` is sent;
//! errcode 45009 (a robot sends at most 20 messages a minute) did not send and is retried
//! later; any other errcode is final, with WeCom's `errmsg` on the attempt. The robot takes no
//! idempotency key and cannot be asked what was sent: a timeout or a dropped connection may
//! have sent, so it stays UNKNOWN until an admin decides, never resent blindly. The text is
//! plain (`msgtype: text`), so nothing a visitor typed is read as Markdown.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;

use super::chat::{admin_base, no_wait, plain_text, refused, Message, RobotCodes};
use super::chat_hook::{Hook, Target};
use super::http::{client, read_head, Client, Reach};
use super::{BoxFuture, Deps, Effect, Job, Kind, Lookup, Outcome, Report, Settings};
use crate::config::{Config, FormConfig};
use crate::domain::EffectKind;

const WECOM: EffectKind = EffectKind::named("wecom");

const HOOK: Hook = Hook { kind: WECOM, signed: false };

/// A text message's content at most, in UTF-8 bytes.
const TEXT_MAX: usize = 2048;

/// WeCom's errcode for a robot over its rate (20 messages a minute).
const CODES: RobotCodes = RobotCodes { code: "errcode", message: "errmsg", rate_limited: 45009 };

pub struct WecomKind;

impl Kind for WecomKind {
    fn name(&self) -> EffectKind {
        WECOM
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
        Ok(Arc::new(WecomRobot {
            client: client(deps.timeout, Reach::Public)?,
            targets,
            admin,
            config: deps.config.clone(),
        }))
    }
}

/// No `Debug`: the URLs hold the robots' keys.
struct WecomRobot {
    client: Client,
    /// By form name.
    targets: BTreeMap<String, Target>,
    /// The admin's submission URL without the ID.
    admin: Option<String>,
    config: Arc<Config>,
}

impl Effect for WecomRobot {
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
                return Report::failed(Outcome::Permanent, "wecom_not_configured");
            };
            let message = Message::of(form, job, &target.fields, self.admin.as_deref());
            let body = json!({ "msgtype": "text", "text": { "content": plain_text(&message, TEXT_MAX) } });
            match self.client.send(self.client.post(&target.url).json(&body)).await {
                Err(failed) => failed,
                Ok(resp) if resp.status().is_success() => {
                    let status = resp.status().as_u16();
                    CODES.answered(status, &read_head(resp).await, &job.effect_key)
                }
                Ok(resp) => refused(resp, |b| CODES.words(b), no_wait).await,
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
    fn a_long_message_keeps_its_link_within_wecoms_byte_limit() {
        let m = Message {
            locale: Locale::ZhCn,
            title: "新询问：联系我们".into(),
            reference: "编号：OF-1".into(),
            route: None,
            fields: vec![("留言".into(), "长".repeat(1000))],
            link: Some(("在管理后台打开".into(), "https://forms.example.com/admin/submissions/s-1".into())),
        };
        let t = plain_text(&m, TEXT_MAX);
        assert!(t.len() <= TEXT_MAX, "{}", t.len());
        assert!(t.ends_with("https://forms.example.com/admin/submissions/s-1"), "{t}");
        assert_eq!(super::super::chat::clip_bytes("长长", 5), "…");
        assert_eq!(super::super::chat::clip_bytes("长长", 6), "长长");
    }

    #[test]
    fn only_errcode_zero_is_sent_and_45009_is_retried() {
        let ok = CODES.answered(200, br#"{"errcode":0,"errmsg":"ok"}"#, "k");
        assert!(matches!(ok.outcome, Outcome::Sent { .. }));
        let slow = CODES.answered(200, br#"{"errcode":45009,"errmsg":"api freq out of limit"}"#, "k");
        assert!(matches!(slow.outcome, Outcome::Transient { .. }));
        let bad = CODES.answered(200, br#"{"errcode":93000,"errmsg":"invalid webhook url"}"#, "k");
        assert_eq!(bad.outcome, Outcome::Permanent);
        assert_eq!(bad.detail.as_deref(), Some("93000: invalid webhook url"));
    }
}
