//! `dingtalk`: one text message per submission from a DingTalk (钉钉) custom robot: the form's
//! title, the reference, the fields `[forms.F.dingtalk] fields` names and a link to the
//! submission in the admin (`[server] public_url`). The robot's webhook URL
//! (`https://oapi.dingtalk.com/robot/send?access_token=TOKEN`, from `url_env`) and its signing
//! secret (`SEC…`, from `secret_env`) are read from the environment and never logged. Each
//! request is signed: `timestamp` (milliseconds) and `sign`, the base64 of
//! HMAC-SHA256(key = secret, message = `timestamp + "\n" + secret`), as query parameters
//! (DingTalk refuses a timestamp more than an hour off).
//!
//! DingTalk answers HTTP 200 whether it sent or not: `{"errcode": 0, "errmsg": "ok"}` is sent;
//! errcode 130101 (a robot sends at most 20 messages a minute) did not send and is retried
//! later; any other errcode (a wrong signature, an unknown token) is final, with DingTalk's
//! `errmsg` on the attempt. The robot takes no idempotency key and cannot be asked what was
//! sent: a timeout or a dropped connection may have sent, so it stays UNKNOWN until an admin
//! decides, never resent blindly. The text is plain (`msgtype: text`).

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

const DINGTALK: EffectKind = EffectKind::named("dingtalk");

const HOOK: Hook = Hook { kind: DINGTALK, signed: true };

/// A text message's content at most, in UTF-8 bytes (kept well under DingTalk's body limit).
const TEXT_MAX: usize = 4000;

/// DingTalk's errcode for a robot sending too fast (over 20 messages a minute).
const CODES: RobotCodes = RobotCodes { code: "errcode", message: "errmsg", rate_limited: 130101 };

pub struct DingtalkKind;

impl Kind for DingtalkKind {
    fn name(&self) -> EffectKind {
        DINGTALK
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
        Ok(Arc::new(DingtalkRobot {
            client: client(deps.timeout, Reach::Public)?,
            targets,
            admin,
            config: deps.config.clone(),
        }))
    }
}

/// No `Debug`: the URLs hold the robots' tokens, and the secrets are secrets.
struct DingtalkRobot {
    client: Client,
    /// By form name.
    targets: BTreeMap<String, Target>,
    /// The admin's submission URL without the ID.
    admin: Option<String>,
    config: Arc<Config>,
}

/// `sign` for `timestamp` (milliseconds): base64(HMAC-SHA256(secret, timestamp + "\n" + secret)),
/// not yet URL-encoded (the query encodes it).
fn sign(timestamp: i64, secret: &str) -> Option<String> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).ok()?;
    mac.update(format!("{timestamp}\n{secret}").as_bytes());
    Some(STANDARD.encode(mac.finalize().into_bytes()))
}

impl Effect for DingtalkRobot {
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
                return Report::failed(Outcome::Permanent, "dingtalk_not_configured");
            };
            let message = Message::of(form, job, &target.fields, self.admin.as_deref());
            let body = json!({ "msgtype": "text", "text": { "content": plain_text(&message, TEXT_MAX) } });
            let timestamp = chrono::Utc::now().timestamp_millis();
            let Some(sign) = sign(timestamp, &target.secret) else {
                return Report::failed(Outcome::Permanent, "dingtalk_secret");
            };
            let query = [("timestamp", timestamp.to_string()), ("sign", sign)];
            match self.client.send(self.client.post(&target.url).query(&query).json(&body)).await {
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
    fn the_signature_is_dingtalks_hmac_of_timestamp_and_secret() {
        // DingTalk's own example: secret `this is secret`, as its Python sample computes it
        // (hmac.new(secret, f"{timestamp}\n{secret}", sha256), base64).
        let s = sign(1_577_836_800_000, "this is secret").unwrap();
        let mut mac = Hmac::<Sha256>::new_from_slice(b"this is secret").unwrap();
        mac.update(b"1577836800000\nthis is secret");
        assert_eq!(s, STANDARD.encode(mac.finalize().into_bytes()));
        assert_ne!(s, sign(1_577_836_800_001, "this is secret").unwrap());
    }

    #[test]
    fn only_errcode_zero_is_sent_and_130101_is_retried() {
        let ok = CODES.answered(200, br#"{"errcode":0,"errmsg":"ok"}"#, "k");
        assert!(matches!(ok.outcome, Outcome::Sent { .. }));
        let slow = CODES.answered(200, br#"{"errcode":130101,"errmsg":"send too fast"}"#, "k");
        assert!(matches!(slow.outcome, Outcome::Transient { .. }));
        let bad = CODES.answered(200, br#"{"errcode":310000,"errmsg":"sign not match"}"#, "k");
        assert_eq!(bad.outcome, Outcome::Permanent);
        assert_eq!(bad.detail.as_deref(), Some("310000: sign not match"));
    }
}
