//! `webhook`: the submission as JSON to the form owner's own endpoint (Zapier, Make, n8n or
//! their code), signed per the Standard Webhooks specification so that the receiver can
//! verify it and deduplicate retries:
//!
//! - `webhook-id`: the record's key with batch 0 (`{submission}:webhook:0`): the same on every
//!   retry, and on an admin's replay as a new batch (the same event for the receiver);
//! - `webhook-timestamp`: when this attempt was sent (Unix seconds);
//! - `webhook-signature`: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` per secret of
//!   `secret_env` (`whsec_…`; several, space-separated, during a rotation).
//!
//! A 2xx is delivery. Since the receiver deduplicates by `webhook-id`, an ambiguous outcome
//! (a timeout, a dropped connection, a 5xx) is retried with the same ID rather than left
//! UNKNOWN; 429 and 503 honour `Retry-After`; any other 4xx (410 Gone included) is final.
//!
//! The `webhook` handler of inbound events is the same effect with one receiver: it sends the
//! event, with `webhook-id` = the handler record's key with batch 0.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::Deserialize;
use serde_json::json;
use sha2::Sha256;

use super::handler::Handler;
use super::http::{answered, client, reach, Client, Reach, ServerErrors};
use super::settings::{check_table, settings_of};
use super::{BoxFuture, Deps, Effect, Job, Kind, Lookup, Outcome, Report, Settings};
use crate::config::hooks::{HandlerConfig, HandlerRules};
use crate::config::{FormConfig, Secrets};
use crate::domain::EffectKind;

const WEBHOOK: EffectKind = EffectKind::named("webhook");

/// `[forms.F.webhook]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookSettings {
    url: String,
    /// The environment variable holding the `whsec_…` secret(s), space-separated.
    secret_env: String,
    /// Also send `Idempotency-Key` (the `webhook-id`), for receivers that look for it.
    #[serde(default)]
    idempotency_key: bool,
    /// Further headers sent with every request (e.g. a tenant ID the receiver expects).
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Allow a receiver at a private or reserved address (`http::reach`), written in the URL
    /// or resolved from its host name (`http://` stays loopback-only).
    #[serde(default)]
    allow_private: bool,
}

/// The shortest key a signing secret may hold: 24 bytes (192 bits), the Standard Webhooks
/// specification's minimum. Every HMAC secret onceform signs or verifies with is held to it.
pub const MIN_KEY_BYTES: usize = 24;

/// The key bytes of a `whsec_…` secret: the base64 after the prefix, at least
/// `MIN_KEY_BYTES` of them. The error says what is wrong, never the value.
pub fn decode_secret(secret: &str) -> Result<Vec<u8>, String> {
    let not_whsec = || "a secret is not `whsec_` followed by base64".to_string();
    let b64 = secret.strip_prefix("whsec_").ok_or_else(not_whsec)?;
    let key = STANDARD.decode(b64).map_err(|_| not_whsec())?;
    if key.len() < MIN_KEY_BYTES {
        return Err(format!("a secret's key is shorter than {MIN_KEY_BYTES} bytes"));
    }
    Ok(key)
}

/// The keys of the `whsec_` secrets in `value` (space-separated, several during a rotation),
/// the value of the variable `var`; the error names the variable, never its value.
pub fn read_secrets(var: &str, value: Option<String>) -> Result<Vec<Vec<u8>>, String> {
    let value = value.filter(|v| !v.trim().is_empty()).ok_or_else(|| format!("{var} is not set"))?;
    value
        .split_whitespace()
        .map(decode_secret)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{var}: {e}"))
}

/// `v1,<base64>`: the Standard Webhooks signature of `id.timestamp.body` with `key`.
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else { return String::new() };
    for part in [id.as_bytes(), b".", timestamp.to_string().as_bytes(), b".", body] {
        mac.update(part);
    }
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// The `webhook-id` of a record: its key with batch 0, so that a replay is the same event.
fn webhook_id(effect_key: &str) -> String {
    match effect_key.rsplit_once(':') {
        Some((stem, batch)) if batch.chars().all(|c| c.is_ascii_digit()) => format!("{stem}:0"),
        _ => effect_key.to_string(),
    }
}

/// What is wrong with a receiver's URL (`at` names the setting): not `https://` (`http://`
/// only to loopback), or a private address or `localhost` unless `allow_private`
/// (`http::reach`; a host name is checked again each time it is resolved).
pub fn url_problems(at: &str, url: &str, allow_private: bool) -> Vec<String> {
    let mut out: Vec<String> = super::http::url_policy::check(at, url, false).err().into_iter().collect();
    out.extend(reach::problem(at, url, Reach::allowing_private(allow_private)));
    out
}

pub struct WebhookKind;

impl Kind for WebhookKind {
    fn name(&self) -> EffectKind {
        WEBHOOK
    }

    fn settings(&self, table: toml::Value) -> Option<Result<Settings, String>> {
        Some(settings_of::<WebhookSettings>(table))
    }

    fn check(&self, at: &str, form: &FormConfig) -> Vec<String> {
        let listed = form.effects.contains(&WEBHOOK);
        let Some(s) = form.settings.get::<WebhookSettings>(&WEBHOOK) else {
            return if listed {
                vec![format!("{at}.webhook: the webhook effect needs url and secret_env")]
            } else {
                Vec::new()
            };
        };
        let mut out = Vec::new();
        if !listed {
            out.push(format!("{at}.webhook: set, but `webhook` is not in {at}.effects"));
        }
        out.extend(s.problems(&format!("{at}.webhook")));
        out
    }

    /// The `whsec_` secrets of `secret_env`, as `effect` reads them at start.
    fn secret_problems(
        &self,
        at: &str,
        form: &FormConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        let Some(s) = form.settings.get::<WebhookSettings>(&WEBHOOK) else { return Vec::new() };
        s.secret_problems(&format!("{at}.webhook"), env)
    }

    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        let mut targets = BTreeMap::new();
        for (name, form) in &deps.config.forms {
            let Some(s) = form.settings.get::<WebhookSettings>(&WEBHOOK).filter(|_| form.lists(&WEBHOOK))
            else {
                continue;
            };
            targets.insert(name.clone(), s.endpoint(&format!("forms.{name}.webhook.secret_env"), deps)?);
        }
        Ok(Arc::new(Webhook { targets: Targets::Forms(targets) }))
    }
}

/// The `webhook` handler of inbound events (`[[hooks.S.handlers]] kind = "webhook"`, with
/// the form table's keys): the same `Webhook` effect with the one receiver it names; the
/// body is the event (`payload`).
pub struct WebhookHandler;

impl HandlerRules for WebhookHandler {
    fn name(&self) -> &'static str {
        "webhook"
    }

    fn check_settings(&self, own: &toml::Value) -> Result<(), String> {
        check_table::<WebhookSettings>(own)
    }

    fn problems(&self, at: &str, h: &HandlerConfig) -> Vec<String> {
        h.own::<WebhookSettings>().map(|s| s.problems(at)).unwrap_or_default()
    }

    fn secret_problems(
        &self,
        at: &str,
        h: &HandlerConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        h.own::<WebhookSettings>().map(|s| s.secret_problems(at, env)).unwrap_or_default()
    }
}

impl Handler for WebhookHandler {
    fn effect(&self, h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        let s: WebhookSettings = h.own().map_err(|e| anyhow::anyhow!(e))?;
        let endpoint = s.endpoint("secret_env", deps)?;
        Ok(Arc::new(Webhook { targets: Targets::One(endpoint) }))
    }
}

impl WebhookSettings {
    /// check-config: what is wrong with these settings (the table called `at`).
    fn problems(&self, at: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.secret_env.is_empty() {
            out.push(format!("{at}.secret_env: names no variable"));
        }
        out.extend(url_problems(&format!("{at}.url"), &self.url, self.allow_private));
        out
    }

    /// The `whsec_` secrets of `secret_env`, as `endpoint` reads them at start.
    fn secret_problems(&self, at: &str, env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
        if self.secret_env.is_empty() {
            return Vec::new();
        }
        let read = read_secrets(&self.secret_env, env(&self.secret_env));
        read.err().map(|e| format!("{at}.secret_env: {e}")).into_iter().collect()
    }

    /// The receiver, with its secrets read (`at` names `secret_env` in an error).
    fn endpoint(&self, at: &str, deps: &Deps<'_>) -> anyhow::Result<Endpoint> {
        Endpoint::new(
            at,
            &self.url,
            (&self.secret_env, deps.secrets),
            self.headers.clone(),
            self.idempotency_key,
            Reach::allowing_private(self.allow_private),
            deps.timeout,
        )
    }
}

/// One receiver and how to sign for it. No `Debug`: it holds the secrets.
struct Endpoint {
    client: Client,
    url: String,
    keys: Vec<Vec<u8>>,
    headers: BTreeMap<String, String>,
    idempotency_key: bool,
}

impl Endpoint {
    /// `url` signed with the `whsec_` secrets in the variable `secret_env` of `secrets` (named `at`),
    /// reached as `reach` allows.
    fn new(
        at: &str,
        url: &str,
        (secret_env, secrets): (&str, &Secrets),
        headers: BTreeMap<String, String>,
        idempotency_key: bool,
        reach: Reach,
        timeout: std::time::Duration,
    ) -> anyhow::Result<Endpoint> {
        let keys =
            read_secrets(secret_env, secrets.var(secret_env)).map_err(|e| anyhow::anyhow!("{at}: {e}"))?;
        Ok(Endpoint { client: client(timeout, reach)?, url: url.into(), keys, headers, idempotency_key })
    }

    /// POSTs `body` as the event `effect_key` names (its `webhook-id`: batch 0's key).
    async fn post(&self, effect_key: &str, body: String) -> Report {
        let id = webhook_id(effect_key);
        let timestamp = chrono::Utc::now().timestamp();
        let signatures: Vec<String> =
            self.keys.iter().map(|k| sign(k, &id, timestamp, body.as_bytes())).collect();
        let mut req = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("webhook-id", &id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signatures.join(" "));
        for (name, value) in &self.headers {
            req = req.header(name, value);
        }
        if self.idempotency_key {
            req = req.header("idempotency-key", &id);
        }
        match answered(self.client.send(req.body(body)).await, ServerErrors::MayHaveActed).await {
            Ok(resp) => Report::sent(id).with_http(resp.status().as_u16()),
            Err(report) => report,
        }
    }
}

/// The `webhook` effect: a submission (the form kind) or an inbound event (the handler) to
/// its receiver.
struct Webhook {
    targets: Targets,
}

enum Targets {
    /// The form kind's: one receiver per form that lists `webhook`, by form name.
    Forms(BTreeMap<String, Endpoint>),
    /// A handler's receiver.
    One(Endpoint),
}

/// The body a receiver gets: a submission in the contract's shape, or an inbound event
/// (`{"type": "event.received", "source", "event_id", "content_type", "body"}`).
fn payload(job: &Job) -> String {
    if let Some(e) = &job.event {
        return json!({
            "type": "event.received",
            "source": e.source,
            "event_id": e.event_id,
            "content_type": e.content_type,
            "body": e.body.as_deref().unwrap_or_default(),
        })
        .to_string();
    }
    json!({
        "type": "submission.accepted",
        "submission_id": job.submission_id.to_string(),
        "form": job.form,
        "received_at": crate::base::format::rfc3339(job.received_at),
        "fields": job.fields,
        "journey_id": job.journey_id,
    })
    .to_string()
}

impl Effect for Webhook {
    fn can_reconcile(&self) -> bool {
        false
    }

    /// The receiver deduplicates by `webhook-id`: sending again has no further effect.
    fn idempotent(&self) -> bool {
        true
    }

    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let endpoint = match &self.targets {
                Targets::Forms(by_form) => by_form.get(&job.form),
                Targets::One(endpoint) => Some(endpoint),
            };
            match endpoint {
                Some(endpoint) => endpoint.post(&job.effect_key, payload(job)).await,
                None => Report::failed(Outcome::Permanent, "webhook_not_configured"),
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
    fn the_id_is_the_first_batchs_key() {
        assert_eq!(webhook_id("0193:webhook:0"), "0193:webhook:0");
        assert_eq!(webhook_id("0193:webhook:3"), "0193:webhook:0", "a replay is the same event");
    }

    #[test]
    fn the_signature_matches_the_specifications_example() {
        // From the Standard Webhooks specification's test vectors (simple example).
        let key = decode_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            sign(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    /// Issue 45: `whsec_` decoded to an empty key, `AA==` to one byte, and both were used.
    #[test]
    fn an_empty_short_or_unprefixed_secret_is_refused_without_showing_it() {
        for bad in [
            "whsec_",
            "AA==",
            "whsec_AA==",
            "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVlc=",
            "whsec_!!",
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        ] {
            let e = decode_secret(bad).expect_err(bad);
            let fixed =
                ["a secret is not `whsec_` followed by base64", "a secret's key is shorter than 24 bytes"];
            assert!(fixed.contains(&e.as_str()), "{e}");
        }
        assert_eq!(decode_secret("whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldY").unwrap().len(), MIN_KEY_BYTES);
        let e = read_secrets("HOOK_KEY", Some("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw whsec_".into()))
            .unwrap_err();
        assert_eq!(e, "HOOK_KEY: a secret's key is shorter than 24 bytes");
        assert_eq!(read_secrets("HOOK_KEY", Some("  ".into())).unwrap_err(), "HOOK_KEY is not set");
    }

    #[test]
    fn private_receivers_need_allow_private() {
        for private in [
            "https://10.0.0.5/x",
            "https://192.168.1.1/",
            "https://[fd00::1]/",
            "https://169.254.169.254/",
            "https://[::ffff:169.254.169.254]/",
            "https://100.100.100.200/",
            "http://localhost:9/",
        ] {
            assert_eq!(url_problems("u", private, false).len(), 1, "{private}");
            assert_eq!(url_problems("u", private, true), Vec::<String>::new(), "{private}");
        }
        for public in ["https://hooks.example.com/x", "https://8.8.8.8/", "http://127.0.0.1:9/"] {
            assert_eq!(url_problems("u", public, false), Vec::<String>::new(), "{public}");
        }
    }
}
