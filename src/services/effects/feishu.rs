//! `feishu`: one text message per submission from a Feishu / Lark (飞书) custom bot: the form's
//! title, the reference, the fields `[forms.F.feishu] fields` names and a link to the
//! submission in the admin (`[server] public_url`). The bot's webhook URL
//! (`https://open.feishu.cn/open-apis/bot/v2/hook/TOKEN`, from `url_env`) and its signing
//! secret (from `secret_env`) are read from the environment and never logged. Each request is
//! signed in its body: `timestamp` (seconds, as a string) and `sign`, the base64 of
//! HMAC-SHA256 keyed with `timestamp + "\n" + secret` over an empty message (Feishu refuses a
//! timestamp more than an hour off).
//!
//! Feishu answers `{"code": 0, "msg": "success"}` when it sent; a non-zero `code` did not
//! send: 11232 (the bot's rate, 100 a minute and 5 a second) is retried later, any other code
//! (19021: a wrong signature or an old timestamp; 9499: a malformed request) is final, with
//! Feishu's `msg` on the attempt. An HTTP 429 waits as `Retry-After` says, a 5xx is retried.
//! The bot takes no idempotency key and cannot be asked what was sent: a timeout or a dropped
//! connection may have sent, so it stays UNKNOWN until an admin decides, never resent
//! blindly. The text is plain (`msg_type: text`).

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;

use super::chat::{admin_base, no_wait, plain_text, refused, Message, RobotCodes};
use super::chat_hook::{Hook, Target};
use super::http::{client, read_head, Client, Reach};
use super::{BoxFuture, Deps, Effect, Job, Kind, Lookup, Outcome, Report, Settings};
use crate::config::{Config, FormConfig};
use crate::domain::EffectKind;

const FEISHU: EffectKind = EffectKind::named("feishu");

const HOOK: Hook = Hook { kind: FEISHU, signed: true };

/// A text's content at most, in UTF-8 bytes: well under Feishu's 20 KB request body, escapes
/// included.
const TEXT_MAX: usize = 8000;

/// Feishu's code for a bot over its rate (100 messages a minute, 5 a second).
const CODES: RobotCodes = RobotCodes { code: "code", message: "msg", rate_limited: 11232 };

pub struct FeishuKind;

impl Kind for FeishuKind {
    fn name(&self) -> EffectKind {
        FEISHU
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
        Ok(Arc::new(FeishuBot {
            client: client(deps.timeout, Reach::Public)?,
            targets,
            admin,
            config: deps.config.clone(),
        }))
    }
}

/// No `Debug`: the URLs hold the bots' tokens, and the secrets are secrets.
struct FeishuBot {
    client: Client,
    /// By form name.
    targets: BTreeMap<String, Target>,
    /// The admin's submission URL without the ID.
    admin: Option<String>,
    config: Arc<Config>,
}

/// `sign` for `timestamp` (seconds): base64(HMAC-SHA256 keyed with `timestamp + "\n" + secret`,
/// over nothing).
fn sign(timestamp: i64, secret: &str) -> Option<String> {
    let mac = Hmac::<Sha256>::new_from_slice(format!("{timestamp}\n{secret}").as_bytes()).ok()?;
    Some(STANDARD.encode(mac.finalize().into_bytes()))
}

impl Effect for FeishuBot {
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
                return Report::failed(Outcome::Permanent, "feishu_not_configured");
            };
            let message = Message::of(form, job, &target.fields, self.admin.as_deref());
            let timestamp = chrono::Utc::now().timestamp();
            let Some(sign) = sign(timestamp, &target.secret) else {
                return Report::failed(Outcome::Permanent, "feishu_secret");
            };
            let body = json!({
                "timestamp": timestamp.to_string(),
                "sign": sign,
                "msg_type": "text",
                "content": { "text": plain_text(&message, TEXT_MAX) },
            });
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

    #[test]
    fn the_signature_is_keyed_with_timestamp_and_secret_over_nothing() {
        // Feishu's own example: HmacSHA256 keyed with "1599360473\nSECRET", doFinal(new byte[]{}).
        let s = sign(1_599_360_473, "test-secret").unwrap();
        let mac = Hmac::<Sha256>::new_from_slice(b"1599360473\ntest-secret").unwrap();
        assert_eq!(s, STANDARD.encode(mac.finalize().into_bytes()));
        let mut dingtalk_way = Hmac::<Sha256>::new_from_slice(b"test-secret").unwrap();
        dingtalk_way.update(b"1599360473\ntest-secret");
        assert_ne!(s, STANDARD.encode(dingtalk_way.finalize().into_bytes()));
    }

    #[test]
    fn only_code_zero_is_sent_and_11232_is_retried() {
        let ok = CODES.answered(200, br#"{"code":0,"msg":"success","data":{}}"#, "k");
        assert!(matches!(ok.outcome, Outcome::Sent { .. }));
        let slow = CODES.answered(200, br#"{"code":11232,"msg":"frequency limited","data":{}}"#, "k");
        assert!(matches!(slow.outcome, Outcome::Transient { .. }));
        let bad = CODES.answered(200, br#"{"code":19021,"msg":"sign match fail","data":{}}"#, "k");
        assert_eq!(bad.outcome, Outcome::Permanent);
        assert_eq!(bad.detail.as_deref(), Some("19021: sign match fail"));
    }
}
