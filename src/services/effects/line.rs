//! `line`: one text message per submission pushed by a LINE Official Account to one user,
//! group or room through the Messaging API (`POST {api_url}/v2/bot/message/push`): the
//! form's title, the reference, the route, the fields `[forms.F.line] fields` names and a
//! link to the submission in the admin (`[server] public_url`). The channel access token is
//! read from the environment (`token_env`), sent as `Authorization: Bearer …` and never
//! logged. A route may hold its own table (`line = { to_env = "LINE_SUPPORT_GROUP" }`),
//! laid over the form's.
//!
//! LINE takes a retry key: every request carries `X-Line-Retry-Key`, a UUID derived from the
//! record's effect key (the same for every attempt of one record), and LINE accepts one
//! request per key; a repeat is answered 409 with `X-Line-Accepted-Request-Id`, which means
//! the message was already accepted: the record is SENT, nothing is sent twice. So a 5xx or
//! a 429 (the rate limit, or the monthly message limit) is retried with the usual backoff
//! (and any `Retry-After`), and a timeout, a dropped connection or a worker that died
//! mid-call leaves the record UNKNOWN only until the reconciliation sends it again under the
//! same key (409: it had gone; 200: it had not, and now has). LINE honours a retry key for
//! 24 hours after its first request: past `RESEND_WITHIN` of the submission's arrival an
//! UNKNOWN record is not sent again but waits for an admin. Any other refusal (an invalid
//! token, a recipient who is no friend of the account) is final, with LINE's `message` and
//! `details` on the attempt. The text is plain, so nothing a visitor typed is formatting.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Response;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::chat::{admin_base, field_problems, no_wait, plain_text_utf16, refused, Message};
use super::http::{client, excerpt, id_of, read_head, transport_error, Client, Reach};
use super::settings::{parse_table, settings_of};
use super::{BoxFuture, Deps, Effect, Job, Kind, Lookup, Outcome, Report, Settings};
use crate::config::{Config, FormConfig};
use crate::domain::EffectKind;

const LINE: EffectKind = EffectKind::named("line");

/// A text message's `text` at most, in UTF-16 code units (as LINE counts).
const TEXT_MAX: usize = 5000;

/// How long after a submission arrived its record may still be sent again under its retry
/// key (LINE honours a key for 24 hours after its first request; an hour's margin).
const RESEND_WITHIN: Duration = Duration::from_secs(23 * 3600);

/// The header LINE names the request that was accepted under a retry key with, on a 409.
const ACCEPTED_ID: &str = "x-line-accepted-request-id";

/// `[forms.F.line]`, or a route's `line = { … }` (each key laid over the form's).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LineSettings {
    /// The environment variable holding the channel access token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token_env: Option<String>,
    /// The user, group or room the messages go to (`U…`, `C…`, `R…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    to: Option<String>,
    /// The environment variable holding that ID, instead of `to`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    to_env: Option<String>,
    /// The Messaging API's server (`https://api.line.me`; a test's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_url: Option<String>,
    /// The fields whose values the message shows (none by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fields: Option<Vec<String>>,
}

impl LineSettings {
    /// `route`'s keys laid over these: a recipient (`to` or `to_env`) replaces both.
    fn under(&self, route: &LineSettings) -> LineSettings {
        let recipient = match route.to.is_some() || route.to_env.is_some() {
            true => (route.to.clone(), route.to_env.clone()),
            false => (self.to.clone(), self.to_env.clone()),
        };
        LineSettings {
            token_env: route.token_env.clone().or_else(|| self.token_env.clone()),
            to: recipient.0,
            to_env: recipient.1,
            api_url: route.api_url.clone().or_else(|| self.api_url.clone()),
            fields: route.fields.clone().or_else(|| self.fields.clone()),
        }
    }

    fn api_url(&self) -> &str {
        self.api_url.as_deref().map(str::trim).unwrap_or("https://api.line.me")
    }

    fn fields(&self) -> &[String] {
        self.fields.as_deref().unwrap_or_default()
    }

    /// check-config's problems with these settings (at `at`, i.e. `forms.NAME.line`), the
    /// kind being listed.
    fn problems(&self, at: &str, form: &FormConfig) -> Vec<String> {
        let mut out = Vec::new();
        match self.token_env.as_deref().map(str::trim) {
            None => out.push(format!("{at}: the line effect needs token_env")),
            Some("") => out.push(format!("{at}.token_env: names no variable")),
            Some(_) => {}
        }
        match (self.to.as_deref().map(str::trim), self.to_env.as_deref().map(str::trim)) {
            (None, None) => out.push(format!("{at}: the line effect needs to (or to_env)")),
            (Some(_), Some(_)) => out.push(format!("{at}: to and to_env both set; set one")),
            (Some(to), None) if !is_recipient(to) => out.push(format!("{at}.to: {NOT_AN_ID}")),
            (None, Some("")) => out.push(format!("{at}.to_env: names no variable")),
            _ => {}
        }
        out.extend(api_url_problem(&format!("{at}.api_url"), self.api_url()));
        out.extend(field_problems(at, form, self.fields()));
        out
    }

    /// Where these settings send, as read from `env` (the process's environment at start,
    /// check-config's when it checks secrets); `Err` names the setting and the variable,
    /// never a value.
    fn target(&self, at: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Target, String> {
        if let Some(problem) = api_url_problem(&format!("{at}.api_url"), self.api_url()) {
            return Err(problem);
        }
        let read = |setting: &str, var: &str| {
            env(var)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .ok_or_else(|| format!("{at}.{setting}: the environment variable {var} is not set"))
        };
        let var = self.token_env.as_deref().unwrap_or_default().trim();
        let token = read("token_env", var)?;
        if !is_token(&token) {
            return Err(format!("{at}.token_env: the variable {var} does not hold a channel access token"));
        }
        let to = match (&self.to, &self.to_env) {
            (Some(to), _) => to.trim().to_string(),
            (None, Some(var)) => {
                let to = read("to_env", var.trim())?;
                if !is_recipient(&to) {
                    return Err(format!("{at}.to_env: the variable {} holds {NOT_AN_ID}", var.trim()));
                }
                to
            }
            (None, None) => return Err(format!("{at}: the line effect needs to (or to_env)")),
        };
        if !is_recipient(&to) {
            return Err(format!("{at}.to: {NOT_AN_ID}"));
        }
        let url = format!("{}/v2/bot/message/push", self.api_url().trim_end_matches('/'));
        Ok(Target { url, token, to, fields: self.fields().to_vec() })
    }
}

const NOT_AN_ID: &str = "not a LINE user, group or room ID (U, C or R and 32 hex digits)";

pub struct LineKind;

impl Kind for LineKind {
    fn name(&self) -> EffectKind {
        LINE
    }

    fn settings(&self, table: toml::Value) -> Option<Result<Settings, String>> {
        Some(settings_of::<LineSettings>(table))
    }

    fn on_route(&self, form: Option<&Settings>, route: &Settings) -> Option<Settings> {
        let route = parse_table::<LineSettings>(route.clone()).ok()?;
        let form = form.and_then(|f| parse_table::<LineSettings>(f.clone()).ok()).unwrap_or_default();
        toml::Value::try_from(form.under(&route)).ok()
    }

    fn check(&self, at: &str, form: &FormConfig) -> Vec<String> {
        let listed = form.effects.contains(&LINE);
        match form.settings.get::<LineSettings>(&LINE) {
            None if listed => vec![format!("{at}.line: the line effect needs token_env and to (or to_env)")],
            Some(_) if !listed => vec![format!("{at}.line: set, but `line` is not in {at}.effects")],
            Some(s) => s.problems(&format!("{at}.line"), form),
            None => Vec::new(),
        }
    }

    /// The channel access token and the recipient's ID, as `effect` reads them at start
    /// (of each table that is otherwise right).
    fn secret_problems(
        &self,
        at: &str,
        form: &FormConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        uses(form)
            .into_iter()
            .map(|(here, s)| (format!("{at}{here}"), s))
            // What check-config names already (no token_env, no recipient) is not named again.
            .filter(|(here, s)| s.problems(here, form).is_empty())
            .filter_map(|(here, s)| s.target(&here, env).err())
            .collect()
    }

    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        let mut targets = BTreeMap::new();
        let env = |var: &str| deps.secrets.var(var);
        for (name, form) in &deps.config.forms {
            for (route, s) in targeted(form) {
                let at = format!("forms.{name}{}", uses_at(form, route.as_deref()));
                let target = s.target(&at, &env).map_err(|e| anyhow::anyhow!(e))?;
                targets.insert((name.clone(), route), target);
            }
        }
        Ok(Arc::new(Line {
            client: client(deps.timeout, Reach::Public)?,
            targets,
            admin: admin_base(deps.config),
            config: deps.config.clone(),
        }))
    }
}

/// The settings `form` sends with: the form's own (`None`) where the form, or a route without
/// a table of its own, lists `line`; each route's (by its label) that lists it and has one.
fn targeted(form: &FormConfig) -> Vec<(Option<String>, LineSettings)> {
    let own = form.settings.get::<LineSettings>(&LINE);
    let mut out = Vec::new();
    let mut form_needed = form.effects.contains(&LINE);
    for (i, route) in form.routes.iter().enumerate() {
        if !route.effects.as_ref().unwrap_or(&form.effects).contains(&LINE) {
            continue;
        }
        match route.settings.get::<LineSettings>(&LINE) {
            Some(r) => out.push((Some(route.label(i)), own.clone().unwrap_or_default().under(&r))),
            None => form_needed = true,
        }
    }
    if form_needed {
        out.insert(0, (None, own.unwrap_or_default()));
    }
    out
}

/// `targeted`, each named where check-config names it (`.line`, `.routes[0] (x).line`).
fn uses(form: &FormConfig) -> Vec<(String, LineSettings)> {
    targeted(form).into_iter().map(|(route, s)| (uses_at(form, route.as_deref()), s)).collect()
}

fn uses_at(form: &FormConfig, route: Option<&str>) -> String {
    let index = route.and_then(|r| form.routes.iter().enumerate().position(|(i, x)| x.label(i) == r));
    match (route, index) {
        (Some(label), Some(i)) => format!(".routes[{i}] ({label}).line"),
        _ => ".line".into(),
    }
}

/// What is wrong with the Messaging API's URL (`at` names the setting): not `https://`
/// (`http://` only to loopback).
fn api_url_problem(at: &str, url: &str) -> Option<String> {
    super::http::url_policy::check(at, url, false)
        .err()
        .map(|_| format!("{at}: must be an https:// URL (http:// only to loopback)"))
}

/// A channel access token as LINE issues them (a long-lived token, or a JWT-shaped v2.1
/// one): visible ASCII without spaces, so it stays one header value.
fn is_token(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic())
}

/// A user (`U`), group (`C`) or room (`R`) ID: the letter and 32 lowercase hex digits.
fn is_recipient(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some('U' | 'C' | 'R'))
        && id.len() == 33
        && chars.all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
}

/// The record's retry key: a UUID (version 8, LINE asks for a UUID) made of the SHA-256 of
/// its effect key, so every attempt of one record sends the same and no two records do.
fn retry_key(effect_key: &str) -> String {
    let digest = Sha256::new().chain_update(b"onceform line retry key\0").chain_update(effect_key).finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes).into_uuid().hyphenated().to_string()
}

/// Where one form's (or route's) messages go and what they show. No `Debug`: it holds the token.
struct Target {
    /// `{api_url}/v2/bot/message/push`.
    url: String,
    token: String,
    to: String,
    fields: Vec<String>,
}

/// No `Debug`: the targets hold the tokens.
struct Line {
    client: Client,
    /// By form name and route label (`None`: the form's own).
    targets: BTreeMap<(String, Option<String>), Target>,
    /// The admin's submission URL without the ID.
    admin: Option<String>,
    config: Arc<Config>,
}

/// LINE's words: its `message`, and each detail's (`messages[0].text: Length must be
/// between 0 and 5000`).
fn words(body: &Value) -> Option<String> {
    let message = body["message"].as_str()?;
    let mut out = vec![message.to_string()];
    for d in body["details"].as_array().into_iter().flatten() {
        match (d["property"].as_str(), d["message"].as_str()) {
            (Some(p), Some(m)) => out.push(format!("{p}: {m}")),
            (None, Some(m)) => out.push(m.to_string()),
            (Some(p), None) => out.push(p.to_string()),
            (None, None) => {}
        }
    }
    Some(out.join("; "))
}

/// The ID of the first message LINE says it sent (`sentMessages[0].id`).
fn sent_id(body: &Value) -> Option<String> {
    id_of(&body["sentMessages"][0], "id")
}

/// A 409: the request already accepted under this retry key (LINE names it in
/// `X-Line-Accepted-Request-Id`) is SENT; a 409 without that header is not known to be LINE's.
async fn conflict(resp: Response) -> Report {
    let accepted = resp.headers().get(ACCEPTED_ID).and_then(|v| v.to_str().ok()).map(str::to_string);
    let head = read_head(resp).await;
    let body: Value = serde_json::from_slice(&head).unwrap_or(Value::Null);
    let said = words(&body).and_then(|w| excerpt(w.as_bytes())).or_else(|| excerpt(&head));
    match accepted.filter(|a| !a.trim().is_empty()) {
        Some(id) => Report::sent(sent_id(&body).unwrap_or(id)).with_http(409).with_detail(said),
        None => Report::failed(Outcome::Ambiguous, "http_409").with_http(409).with_detail(said),
    }
}

impl Line {
    /// Pushes `job`'s message under its retry key.
    async fn push(&self, job: &Job) -> Report {
        let route_target = self.targets.get(&(job.form.clone(), job.route.clone()));
        let target = route_target.or_else(|| self.targets.get(&(job.form.clone(), None)));
        let (Some(target), Some(form)) = (target, self.config.forms.get(&job.form)) else {
            return Report::failed(Outcome::Permanent, "line_not_configured");
        };
        let message = Message::of(form, job, &target.fields, self.admin.as_deref());
        let body = json!({
            "to": target.to,
            "messages": [{ "type": "text", "text": plain_text_utf16(&message, TEXT_MAX) }],
        });
        let sent = self
            .client
            .post(&target.url)
            .bearer_auth(&target.token)
            .header("X-Line-Retry-Key", retry_key(&job.effect_key))
            .json(&body)
            .send()
            .await;
        match sent {
            Err(e) => transport_error(&e),
            Ok(resp) if resp.status().is_success() => {
                let status = resp.status().as_u16();
                let request = resp.headers().get("x-line-request-id").and_then(|v| v.to_str().ok());
                let request = request.map(str::to_string);
                // Accepted: the message's ID when the answer can be read, else the request's.
                let answer: Option<Value> = resp.json().await.ok();
                let id = answer.as_ref().and_then(sent_id).or(request);
                Report::sent(id.unwrap_or_else(|| job.effect_key.clone())).with_http(status)
            }
            Ok(resp) if resp.status().as_u16() == 409 => conflict(resp).await,
            Ok(resp) => refused(resp, words, no_wait).await,
        }
    }
}

impl Effect for Line {
    /// An UNKNOWN record is settled by sending it again under its retry key (within
    /// `RESEND_WITHIN`): LINE answers 409 if it had been accepted.
    fn can_reconcile(&self) -> bool {
        true
    }

    /// A timeout is not simply retried: it becomes UNKNOWN and the reconciliation resends it
    /// only while LINE still honours its retry key.
    fn idempotent(&self) -> bool {
        false
    }

    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report> {
        Box::pin(self.push(job))
    }

    fn reconcile<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            let age = (crate::base::clock::now() - job.received_at).to_std().unwrap_or_default();
            if age > RESEND_WITHIN {
                return Lookup::Failed { error_class: "retry_key_expired".into() };
            }
            let report = self.push(job).await;
            match report.outcome {
                Outcome::Sent { provider_ref } => Lookup::Found { provider_ref },
                _ => Lookup::Failed { error_class: report.error_class.unwrap_or_else(|| "lookup".into()) },
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::i18n::Locale;

    /// check-config's problems of the demo form with `effects` and `extra` after it.
    fn problems(effects: &str, extra: &str) -> Vec<String> {
        crate::services::effects::demo_problems(effects, extra, "line")
    }

    const GROUP: &str = "C0123456789abcdef0123456789abcdef";

    #[test]
    fn check_config_names_each_wrong_setting() {
        let listed = r#"effects = ["line"]"#;
        let good =
            format!("[forms.contact.line]\ntoken_env = \"T\"\nto = \"{GROUP}\"\nfields = [\"message\"]\n");
        assert_eq!(problems(listed, &good), Vec::<String>::new());
        assert_eq!(
            problems(
                listed,
                "[forms.contact.line]\ntoken_env = \"\"\nto = \"someone\"\napi_url = \"http://line.example\"\nfields = [\"phone\"]\n"
            ),
            [
                "forms.contact.line.token_env: names no variable",
                "forms.contact.line.to: not a LINE user, group or room ID (U, C or R and 32 hex digits)",
                "forms.contact.line.api_url: must be an https:// URL (http:// only to loopback)",
                "forms.contact.line.fields: `phone` is not a field of this form",
            ]
        );
        assert_eq!(
            problems(listed, "[forms.contact.line]\ntoken_env = \"T\"\nto = \"x\"\nto_env = \"Y\"\n"),
            ["forms.contact.line: to and to_env both set; set one"]
        );
        assert_eq!(
            problems(listed, ""),
            ["forms.contact.line: the line effect needs token_env and to (or to_env)"]
        );
        let unlisted = problems(r#"effects = []"#, &good);
        assert_eq!(unlisted, ["forms.contact.line: set, but `line` is not in forms.contact.effects"]);
    }

    #[test]
    fn a_route_sets_its_own_recipient_over_the_forms_table() {
        let routes = "[[forms.contact.routes]]\nname = \"support\"\nwhen = { topic = \"Support\" }\n\
                      effects = [\"line\"]\nline = { to_env = \"LINE_SUPPORT_GROUP\" }\n";
        // The form's table gives the token; only the route sends, with its own recipient.
        let form = "[forms.contact.line]\ntoken_env = \"T\"\n";
        assert_eq!(problems(r#"effects = []"#, &format!("{form}{routes}")), Vec::<String>::new());
        // The form itself sends too: its own table needs a recipient.
        assert_eq!(
            problems(r#"effects = ["line"]"#, &format!("{form}{routes}")),
            ["forms.contact.line: the line effect needs to (or to_env)"]
        );
        // A route without a token anywhere.
        assert_eq!(
            problems(r#"effects = []"#, routes),
            ["forms.contact.routes[0] (support).line: the line effect needs token_env"]
        );
        let text = crate::config::DEFAULT_CONFIG.to_string() + "\n" + form + routes;
        let config = crate::config::Config::parse(&text).unwrap();
        let form = &config.forms["contact"];
        let env = |var: &str| match var {
            "T" => Some("tok.en-1/x=".to_string()),
            "LINE_SUPPORT_GROUP" => Some(GROUP.to_string()),
            _ => None,
        };
        let used = uses(form);
        assert_eq!(used.len(), 1, "only the route sends");
        let (at, s) = &used[0];
        assert_eq!(at, ".routes[0] (support).line");
        let target =
            s.target("forms.contact.routes[0] (support).line", &env).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((target.to.as_str(), target.token.as_str()), (GROUP, "tok.en-1/x="));
        assert_eq!(target.url, "https://api.line.me/v2/bot/message/push");
        let secrets = LineKind.secret_problems("forms.contact", form, &|_| None);
        assert_eq!(
            secrets,
            ["forms.contact.routes[0] (support).line.token_env: the environment variable T is not set"]
        );
        let bad = LineKind.secret_problems("forms.contact", form, &|v| (v == "T").then(|| "x".to_string()));
        assert_eq!(
            bad,
            ["forms.contact.routes[0] (support).line.to_env: the environment variable LINE_SUPPORT_GROUP is not set"]
        );
    }

    #[test]
    fn ids_tokens_and_retry_keys_have_lines_shapes() {
        assert!(is_recipient(GROUP));
        assert!(is_recipient("U4af4980629abcdef0123456789abcdef"));
        for bad in ["", "U123", "X0123456789abcdef0123456789abcdef", "U0123456789ABCDEF0123456789ABCDEF"] {
            assert!(!is_recipient(bad), "{bad}");
        }
        assert!(is_token("eyJhbGciOiJIUzI1NiJ9.abc+/="));
        assert!(!is_token("two words") && !is_token("") && !is_token("a\nb"));
        let key = retry_key("s-1:line:0");
        assert_eq!(key, retry_key("s-1:line:0"), "the same for every attempt");
        assert_ne!(key, retry_key("s-1:line:1"));
        let parsed = uuid::Uuid::parse_str(&key).unwrap();
        assert_eq!(parsed.get_version_num(), 8);
        assert_eq!(key, parsed.hyphenated().to_string(), "lowercase, hyphenated");
    }

    #[test]
    fn a_long_message_keeps_its_link_within_lines_limit_and_lines_words_name_the_property() {
        let m = Message {
            locale: Locale::Ja,
            title: "新しいお問い合わせ：お問い合わせ".into(),
            reference: "受付番号：OF-1".into(),
            route: Some("振り分け：support".into()),
            fields: vec![("メッセージ".into(), "😀".repeat(4000))],
            link: Some(("管理画面で開く".into(), "https://forms.example.com/admin/submissions/s-1".into())),
        };
        let t = plain_text_utf16(&m, TEXT_MAX);
        assert!(t.encode_utf16().count() <= TEXT_MAX, "{}", t.encode_utf16().count());
        assert!(
            t.starts_with("新しいお問い合わせ：お問い合わせ\n受付番号：OF-1\n振り分け：support\n"),
            "{t}"
        );
        assert!(t.ends_with("https://forms.example.com/admin/submissions/s-1"), "{t}");
        let body = json!({"message": "The request body has 1 error(s)",
            "details": [{"message": "Length must be between 0 and 5000", "property": "messages[0].text"}]});
        assert_eq!(
            words(&body).unwrap(),
            "The request body has 1 error(s); messages[0].text: Length must be between 0 and 5000"
        );
    }
}
