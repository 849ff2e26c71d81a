//! `pipedrive`: a person and a lead linked to it, the lead carrying the external reference in
//! one of its custom fields (`reference_field`, the field's 40-character key); the lead is
//! looked up by that field before anything is sent, so a repeat never makes a second lead.
//!
//! Held to Pipedrive's API reference (the OpenAPI descriptions behind its official clients):
//! - Lookup: `GET /api/v2/itemSearch?term=…&item_types=lead&fields=custom_fields&exact_match=true`
//!   (`data.items[].item`, `type` `lead`, `id` a UUID). Pipedrive's search index may trail a
//!   create by a moment, so a lead created just before a lost answer is still found by the
//!   reconciliation, which comes later (`[worker] reconcile_after_ms`).
//! - The person: `GET /api/v2/persons/search?term=…&fields=email&exact_match=true` finds it by
//!   its email; else `POST /api/v2/persons` (`name`, `emails`, `phones` as
//!   `[{value, primary, label}]`). A lead without an email gets a new person each time it is
//!   sent (a repeat after an unknown outcome may leave a second person, never a second lead).
//! - The lead: `POST /api/v1/leads` (`title`, `person_id`, custom fields by key; leads take
//!   the deals' custom fields).
//! - Auth: the API token in the `x-api-token` header (`auth = "api_token"`, so it never stands
//!   in a URL), or an OAuth access token as `Authorization: Bearer` (`auth = "oauth"`).
//! - Answers: `{"success": false, "error": …, "error_info": …}` on failure (the `error` is
//!   kept on the attempt); 429 with `x-ratelimit-reset` (seconds left in the window).
//!
//! The mapping (`crm_fields`) names `name`, `email`, `phone` (the person) and `title` (the
//! lead); any other name is a lead custom field's key. check-config holds it to what a lead
//! needs: a title and a person's name, each at most 255 characters (Pipedrive's text fields).
//!
//! A decided duplicate's note (`add_note`): `POST /api/v1/notes` with `content` (HTML: the
//! text and the note's key) and `lead_id` (the duplicate's lead, found as `lookup` finds it;
//! the original's lead ID is named in the text where Pipedrive has it). Before creating it,
//! and to reconcile, the lead's notes (`GET /api/v1/notes?lead_id=…&limit=500`) are read for
//! one holding the key.

use std::sync::Arc;
use std::time::Duration;

use reqwest::RequestBuilder;
use serde_json::{json, Map, Value};

use super::answer::Answer;
use super::{
    may_be_blank, note_lead_absent, own, too_long, url_of, url_problems, AdapterKind, Capabilities,
    CrmAdapter, Lead, LeadNote,
};
use crate::config::kind_settings::Settings;
use crate::config::{CrmConfig, FormConfig};
use crate::services::effects::http::{client, lookup_failed, Client, Reach, Secret, ServerErrors};
use crate::services::effects::settings::settings_of;
use crate::services::effects::{BoxFuture, Lookup, Outcome, Report};

/// The mapping's names for the person's fields and the lead's title.
const NAME: &str = "name";
const EMAIL: &str = "email";
const PHONE: &str = "phone";
const TITLE: &str = "title";

/// A text field's length (Pipedrive's `varchar`), the person's name and the lead's title.
const TEXT_MAX: usize = 255;

/// `[crm.pipedrive]`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PipedriveSettings {
    /// The key of the lead custom field (a text field) that holds the external reference.
    #[serde(default)]
    reference_field: String,
    #[serde(default)]
    auth: Auth,
}

/// How the token is sent.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Auth {
    /// A personal API token, in `x-api-token`.
    #[default]
    ApiToken,
    /// An OAuth access token, as a bearer token.
    Oauth,
}

pub struct PipedriveKind;

impl AdapterKind for PipedriveKind {
    fn name(&self) -> &'static str {
        "pipedrive"
    }

    fn settings(&self, table: toml::Table) -> Result<Settings, String> {
        settings_of::<PipedriveSettings>(toml::Value::Table(table))
    }

    fn problems(&self, crm: &CrmConfig) -> Vec<String> {
        let mut out = url_problems(crm);
        if crm.token_env.trim().is_empty() {
            out.push("crm.token_env: names the environment variable holding the API token".into());
        }
        if let Ok(s) = own::<PipedriveSettings>(crm, self) {
            let key = s.reference_field.trim();
            if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                out.push(
                    "crm.pipedrive.reference_field: names the key of the lead custom field (a text \
                     field) that holds the reference, e.g. `9dc80c50d78a15f9c11d9c9e8d5d4c4b8f2a6c31`"
                        .into(),
                );
            }
        }
        out
    }

    fn mapping_warnings(&self, at: &str, form: &FormConfig) -> Vec<String> {
        mapping_warnings(at, form)
    }

    fn secret_vars(&self, crm: &CrmConfig) -> Vec<(&'static str, String)> {
        vec![("token_env", crm.token_env.clone())]
    }

    fn build(
        &self,
        crm: &CrmConfig,
        token: Option<Secret>,
        _secrets: &crate::config::Secrets,
        timeout: Duration,
    ) -> anyhow::Result<Arc<dyn CrmAdapter>> {
        let s = own::<PipedriveSettings>(crm, self)?;
        Ok(Arc::new(Pipedrive {
            client: client(timeout, Reach::allowing_private(crm.allow_private))?,
            base_url: url_of(crm)?.trim_end_matches('/').to_string(),
            reference_field: s.reference_field.trim().to_string(),
            auth: s.auth,
            token,
        }))
    }
}

/// check-config: `form`'s mapping against a Pipedrive person and lead (see the module's notes).
fn mapping_warnings(at: &str, form: &FormConfig) -> Vec<String> {
    if form.crm_fields.is_empty() {
        return vec![format!(
            "{at}.crm_fields: none, so every field goes under its own name and Pipedrive takes \
             those other than name, email, phone and title as custom field keys (refused when the \
             lead has no such field); map each field"
        )];
    }
    let mut out = Vec::new();
    for (to, what) in [(NAME, "Person.name"), (TITLE, "Lead.title")] {
        for (from, max) in too_long(form, to, TEXT_MAX) {
            out.push(format!(
                "{at}.{from}: up to {max} characters, but {what} holds {TEXT_MAX}; set max_length = {TEXT_MAX}"
            ));
        }
        if let Some(why) = may_be_blank(form, to) {
            out.push(format!(
                "{at}.crm_fields: {what} is required and {why}, so Pipedrive would refuse such a lead; \
                 set crm_defaults.{to} (used when it is blank)"
            ));
        }
    }
    out
}

/// No `Debug`: it holds the token.
pub struct Pipedrive {
    client: Client,
    base_url: String,
    reference_field: String,
    auth: Auth,
    token: Option<Secret>,
}

/// Pipedrive's words on a failure: its `error`, and `error_info` where it says more.
fn words(body: &Value) -> Option<String> {
    let error = body["error"].as_str()?;
    Some(match body["error_info"].as_str().filter(|i| !i.is_empty()) {
        Some(info) => format!("{error} ({info})"),
        None => error.to_string(),
    })
}

/// The first item of a search answer (`data.items[].item`) of type `kind`: its `id`.
fn first_item(body: &Value, kind: &str) -> Option<Value> {
    let items = body["data"]["items"].as_array()?;
    items.iter().map(|i| &i["item"]).find(|i| i["type"] == kind).map(|i| i["id"].clone())
}

fn id_text(id: &Value) -> Option<String> {
    match id {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl Pipedrive {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    fn authorized(&self, req: RequestBuilder) -> RequestBuilder {
        match (self.auth, &self.token) {
            (_, None) => req,
            (Auth::ApiToken, Some(Secret(t))) => req.header("x-api-token", t),
            (Auth::Oauth, Some(Secret(t))) => req.bearer_auth(t),
        }
    }

    /// Sends `req`: the answer's JSON when it succeeded, else the report of its refusal.
    async fn call(&self, req: RequestBuilder, server_errors: ServerErrors) -> Result<(u16, Value), Report> {
        let answer = Answer::read(self.client.send(self.authorized(req)).await?, "pipedrive_body").await?;
        match answer.ok() && answer.body["success"] != Value::Bool(false) {
            true => Ok((answer.code(), answer.body)),
            false => Err(answer.refused(server_errors, words(&answer.body))),
        }
    }

    /// The lead that carries `reference`, by an exact search of the leads' custom fields.
    async fn find_lead(&self, reference: &str) -> Result<Option<String>, Report> {
        let query = [
            ("term", reference),
            ("item_types", "lead"),
            ("fields", "custom_fields"),
            ("exact_match", "true"),
            ("limit", "10"),
        ];
        let req = self.client.get(self.url("/api/v2/itemSearch")).query(&query);
        let (_, body) = self.call(req, ServerErrors::DidNotAct).await?;
        Ok(first_item(&body, "lead").as_ref().and_then(id_text))
    }

    /// The person of the lead: found by its email, else created.
    async fn person(&self, lead: &Lead) -> Result<Value, Report> {
        let field = |name: &str| lead.fields.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        if let Some(email) = field(EMAIL) {
            let query = [("term", email), ("fields", "email"), ("exact_match", "true"), ("limit", "1")];
            let req = self.client.get(self.url("/api/v2/persons/search")).query(&query);
            let (_, found) = self.call(req, ServerErrors::DidNotAct).await?;
            if let Some(id) = first_item(&found, "person") {
                return Ok(id);
            }
        }
        let mut person = Map::new();
        person.insert("name".into(), json!(lead.fields.get(NAME).cloned().unwrap_or_default()));
        if let Some(email) = field(EMAIL) {
            person.insert("emails".into(), json!([{"value": email, "primary": true, "label": "work"}]));
        }
        if let Some(phone) = field(PHONE) {
            person.insert("phones".into(), json!([{"value": phone, "primary": true, "label": "work"}]));
        }
        let req = self.client.post(self.url("/api/v2/persons")).json(&person);
        let (status, created) = self.call(req, ServerErrors::MayHaveActed).await?;
        match &created["data"]["id"] {
            id @ Value::Number(_) => Ok(id.clone()),
            _ => Err(Report::failed(Outcome::Ambiguous, "pipedrive_person_no_id").with_http(status)),
        }
    }

    /// The lead's body: its title, its person, the reference and its custom fields.
    fn lead_body(&self, lead: &Lead, person_id: Value) -> Map<String, Value> {
        let mut body: Map<String, Value> = lead
            .fields
            .iter()
            .filter(|(k, _)| ![NAME, EMAIL, PHONE].contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        body.entry(TITLE).or_insert_with(|| json!(""));
        body.insert("person_id".into(), person_id);
        body.insert(self.reference_field.clone(), json!(lead.external_ref));
        body
    }
}

/// How a duplicate note's key is written in its content (and found there again).
fn key_mark(key: &str) -> String {
    format!("[onceform {}]", key.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;"))
}

impl Pipedrive {
    /// The ID of the lead under `reference`; a failed search is a transient failure.
    async fn lead_of(&self, reference: &str) -> Result<Option<String>, Report> {
        self.find_lead(reference).await.map_err(|failed| {
            Report::failed(Outcome::Transient { retry_after: None }, "note_lead_lookup")
                .with_detail(failed.detail)
        })
    }

    /// The note on `lead_id` whose content holds `key`, if there is one.
    async fn find_keyed_note(&self, lead_id: &str, key: &str) -> Result<Option<String>, Report> {
        let query = [("lead_id", lead_id), ("start", "0"), ("limit", "500")];
        let req = self.client.get(self.url("/api/v1/notes")).query(&query);
        let (_, body) = self.call(req, ServerErrors::DidNotAct).await?;
        let mark = key_mark(key);
        let notes = body["data"].as_array().cloned().unwrap_or_default();
        Ok(notes
            .iter()
            .filter(|n| n["content"].as_str().is_some_and(|c| c.contains(&mark)))
            .find_map(|n| id_text(&n["id"])))
    }

    async fn add_keyed_note(&self, note: &LeadNote) -> Result<Report, Report> {
        let Some(lead_id) = self.lead_of(&note.on).await? else { return Ok(note_lead_absent()) };
        if let Some(id) = self.find_keyed_note(&lead_id, &note.key).await? {
            return Ok(Report::sent(id));
        }
        let escape = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        let mut content = escape(&note.text);
        if let Some(original) = self.lead_of(&note.about).await? {
            content.push_str(&format!(" The original's lead: {}.", escape(&original)));
        }
        content.push_str(&format!("<br>{}", key_mark(&note.key)));
        let req = self
            .client
            .post(self.url("/api/v1/notes"))
            .json(&json!({"content": content, "lead_id": lead_id}));
        let (status, created) = self.call(req, ServerErrors::MayHaveActed).await?;
        Ok(match id_text(&created["data"]["id"]) {
            Some(id) => Report::sent(id).with_http(status),
            None => Report::failed(Outcome::Ambiguous, "pipedrive_note_no_id").with_http(status),
        })
    }
}

impl CrmAdapter for Pipedrive {
    fn capabilities(&self) -> Capabilities {
        // Two requests, no upsert: an unknown outcome is looked up before anything is resent.
        Capabilities { idempotent_upsert: false, lookup: true, notes: true }
    }

    fn create<'a>(&'a self, lead: &'a Lead) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            match self.find_lead(&lead.external_ref).await {
                Ok(Some(id)) => return Report::sent(id),
                Ok(None) => {}
                Err(failed) => return failed,
            }
            let person_id = match self.person(lead).await {
                Ok(id) => id,
                Err(failed) => return failed,
            };
            let req = self.client.post(self.url("/api/v1/leads")).json(&self.lead_body(lead, person_id));
            match self.call(req, ServerErrors::MayHaveActed).await {
                Ok((status, created)) => match id_text(&created["data"]["id"]) {
                    Some(id) => Report::sent(id).with_http(status),
                    None => Report::failed(Outcome::Ambiguous, "pipedrive_lead_no_id").with_http(status),
                },
                Err(failed) => failed,
            }
        })
    }

    fn add_note<'a>(&'a self, note: &'a LeadNote) -> BoxFuture<'a, Report> {
        Box::pin(async move { self.add_keyed_note(note).await.unwrap_or_else(|failed| failed) })
    }

    fn find_note<'a>(&'a self, note: &'a LeadNote) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            let holder = self.lead_of(&note.on).await;
            super::find_note_on(
                holder,
                "lead",
                |id| async move { self.find_keyed_note(&id, &note.key).await },
            )
            .await
        })
    }

    fn lookup<'a>(&'a self, external_ref: &'a str) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            match self.find_lead(external_ref).await {
                Ok(Some(provider_ref)) => Lookup::Found { provider_ref },
                Ok(None) => Lookup::Absent,
                Err(failed) => lookup_failed(match failed.http_status {
                    Some(s) => format!("lookup_http_{s}"),
                    None => "lookup_transport".to_string(),
                }),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_answers_give_the_first_item_of_the_kind() {
        let body = json!({"success": true, "data": {"items": [
            {"result_score": 1.0, "item": {"id": 7, "type": "person"}},
            {"result_score": 0.9, "item": {"id": "adf21080-0e10-11eb-879b-05d71fb426ec", "type": "lead"}}
        ]}});
        assert_eq!(first_item(&body, "person"), Some(json!(7)));
        let lead = first_item(&body, "lead");
        assert_eq!(lead.as_ref().and_then(id_text).as_deref(), Some("adf21080-0e10-11eb-879b-05d71fb426ec"));
        assert_eq!(first_item(&json!({"success": true, "data": {"items": []}}), "lead"), None);
    }

    #[test]
    fn pipedrive_words_name_the_error_and_its_info() {
        let body =
            json!({"success": false, "error": "Lead title is required", "error_info": "Check the title"});
        assert_eq!(words(&body).as_deref(), Some("Lead title is required (Check the title)"));
        assert_eq!(
            words(&json!({"success": false, "error": "Unauthorized"})).as_deref(),
            Some("Unauthorized")
        );
    }
}
