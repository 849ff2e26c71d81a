//! `zoho`: upsert a Lead in Zoho CRM with the external reference in an external-ID field named
//! as the `duplicate_check_fields`, so sending twice updates the same Lead; look it up by
//! that field.
//!
//! Held to Zoho CRM's API documentation:
//! - OAuth 2.0: an access token from the refresh token, `POST {accounts_url}/oauth/v2/token`
//!   (form body: `grant_type=refresh_token`, `client_id`, `client_secret`, `refresh_token`),
//!   answering `{access_token, expires_in, api_domain, token_type}` (or `{"error": …}`). The
//!   accounts server is the account's region (`accounts.zoho.com`, `.eu`, `.in`, `.com.au`,
//!   `.jp`, `.com.cn`); the API is at the answer's `api_domain` unless `api_url` is set. The
//!   token is kept until a minute before it expires, and fetched again once when the API
//!   answers `INVALID_TOKEN`. Every call sends `Authorization: Zoho-oauthtoken …`.
//! - "Insert or Update Records (Upsert)": `POST /crm/v8/Leads/upsert` with
//!   `{"data": [record], "duplicate_check_fields": [field]}`; each record's answer is
//!   `{code, details, message, status}` (`SUCCESS` with `details.id`, or an error code such as
//!   `MANDATORY_NOT_FOUND`, `INVALID_DATA`, `DUPLICATE_DATA` with `details.api_name`).
//! - "Search Records": `GET /crm/v8/Leads/search?criteria=(field:equals:value)` (`(`, `)`, `,`
//!   and `\` in the value escaped with `\`); 200 with `data`, or 204 when nothing matches.
//! - Errors: `{code, details, message, status: "error"}` (kept on the attempt as `CODE:
//!   message (field)`); 429 when over the limits, waited out by `Retry-After` or
//!   `X-RateLimit-Reset`.
//!
//! check-config holds each form's mapping to the Leads module's standard fields (Zoho CRM's
//! "Standard Modules & Fields"): the lengths of its text fields, and `Last_Name` and
//! `Company`, which a new Lead must have.
//!
//! A decided duplicate's note (`add_note`, "Create Notes"): `POST /crm/v8/Leads/{id}/Notes`
//! on the duplicate's Lead (found as `lookup` finds it), `{"data": [{Note_Title,
//! Note_Content}]}` (the record's parent is the Lead of the URL: `Parent_Id` and
//! `$se_module` = `Leads`, as the API returns them); the content holds the text, the
//! original's Lead ID where Zoho has it, and the note's key. Before creating it, and to
//! reconcile, "Get Notes" (`GET` of the same resource, `fields=Note_Title,Note_Content`; 204
//! when there is none) is read for one holding the key.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::AUTHORIZATION;
use reqwest::RequestBuilder;
use serde_json::{json, Map, Value};
use tokio::sync::Mutex;

use super::answer::Answer;
use super::{
    may_be_blank, note_lead_absent, own, too_long, AdapterKind, Capabilities, CrmAdapter, Lead, LeadNote,
};
use crate::config::kind_settings::Settings;
use crate::config::{CrmConfig, FormConfig};
use crate::services::effects::http::encode_segment;
use crate::services::effects::http::{
    client, lookup_failed, reach, url_policy, Client, Reach, Secret, ServerErrors,
};
use crate::services::effects::settings::settings_of;
use crate::services::effects::{BoxFuture, Lookup, Outcome, Report};

const API_VERSION: &str = "v8";

/// The Leads module's standard text fields and their lengths.
const LEAD_FIELDS: &[(&str, usize)] = &[
    ("First_Name", 40),
    ("Last_Name", 80),
    ("Designation", 100),
    ("Company", 100),
    ("Email", 100),
    ("Secondary_Email", 100),
    ("Phone", 30),
    ("Mobile", 30),
    ("Fax", 30),
    ("Skype_ID", 50),
    ("Website", 120),
    ("Description", 32000),
];

/// Required on a new Lead.
const LEAD_REQUIRED: &[&str] = &["Last_Name", "Company"];

/// `[crm.zoho]`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ZohoSettings {
    /// The account's accounts server (its region).
    #[serde(default = "default_accounts_url")]
    accounts_url: String,
    /// The API's base; unset: the token answer's `api_domain`.
    #[serde(default)]
    api_url: Option<String>,
    #[serde(default)]
    client_id: String,
    /// The environment variables holding the client secret and the refresh token.
    #[serde(default)]
    client_secret_env: String,
    #[serde(default)]
    refresh_token_env: String,
    /// The Leads field (unique, "Do not allow duplicate values") that holds the reference.
    #[serde(default = "default_external_id_field")]
    external_id_field: String,
}

fn default_accounts_url() -> String {
    "https://accounts.zoho.com".into()
}

fn default_external_id_field() -> String {
    "Onceform_Ref".into()
}

pub struct ZohoKind;

impl AdapterKind for ZohoKind {
    fn name(&self) -> &'static str {
        "zoho"
    }

    fn settings(&self, table: toml::Table) -> Result<Settings, String> {
        settings_of::<ZohoSettings>(toml::Value::Table(table))
    }

    fn problems(&self, crm: &CrmConfig) -> Vec<String> {
        let Ok(s) = own::<ZohoSettings>(crm, self) else { return Vec::new() };
        let reach = Reach::allowing_private(crm.allow_private);
        let mut out = Vec::new();
        let api_url = s.api_url.as_ref().or(crm.url.as_ref());
        for (at, url) in [("crm.zoho.accounts_url", Some(&s.accounts_url)), ("crm.zoho.api_url", api_url)] {
            let Some(url) = url else { continue };
            out.extend(
                url_policy::check(at, url, crm.allow_http).err().or_else(|| reach::problem(at, url, reach)),
            );
        }
        let needed = [
            ("client_id", &s.client_id),
            ("client_secret_env", &s.client_secret_env),
            ("refresh_token_env", &s.refresh_token_env),
        ];
        out.extend(
            needed
                .iter()
                .filter(|(_, v)| v.trim().is_empty())
                .map(|(k, _)| format!("crm.zoho.{k}: must be set")),
        );
        let field = &s.external_id_field;
        if field.is_empty() || !field.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            out.push(
                "crm.zoho.external_id_field: names the Leads field's API name (e.g. `Onceform_Ref`)".into(),
            );
        }
        out
    }

    fn mapping_warnings(&self, at: &str, form: &FormConfig) -> Vec<String> {
        mapping_warnings(at, form)
    }

    fn secret_vars(&self, crm: &CrmConfig) -> Vec<(&'static str, String)> {
        let Ok(s) = own::<ZohoSettings>(crm, self) else { return Vec::new() };
        vec![
            ("client_secret_env", s.client_secret_env.clone()),
            ("refresh_token_env", s.refresh_token_env.clone()),
        ]
    }

    fn build(
        &self,
        crm: &CrmConfig,
        _token: Option<Secret>,
        secrets: &crate::config::Secrets,
        timeout: Duration,
    ) -> anyhow::Result<Arc<dyn CrmAdapter>> {
        let s = own::<ZohoSettings>(crm, self)?;
        let secret =
            |key: &str, var: &str| {
                secrets.get(var).filter(|v| !v.trim().is_empty()).map(|v| Secret(v.to_string())).ok_or_else(
                    || anyhow::anyhow!("crm.zoho.{key}: the environment variable {var} is not set"),
                )
            };
        let api_url = s.api_url.clone().or(crm.url.clone()).map(|u| u.trim_end_matches('/').to_string());
        Ok(Arc::new(Zoho {
            client: client(timeout, Reach::allowing_private(crm.allow_private))?,
            accounts_url: s.accounts_url.trim_end_matches('/').to_string(),
            api_url,
            allow_http: crm.allow_http,
            client_id: s.client_id.clone(),
            client_secret: secret("client_secret_env", &s.client_secret_env)?,
            refresh_token: secret("refresh_token_env", &s.refresh_token_env)?,
            field: s.external_id_field.clone(),
            token: Mutex::new(None),
        }))
    }
}

/// check-config: `form`'s mapping against the Leads module (see the module's notes).
fn mapping_warnings(at: &str, form: &FormConfig) -> Vec<String> {
    if form.crm_fields.is_empty() {
        return vec![format!(
            "{at}.crm_fields: none, so every field goes under its own name, which a Lead does not \
             have (Zoho refuses it: INVALID_DATA); map each field to a Leads field's API name"
        )];
    }
    let mut out = Vec::new();
    for (field, length) in LEAD_FIELDS {
        for (from, max) in too_long(form, field, *length) {
            out.push(format!(
                "{at}.{from}: up to {max} characters, but Leads.{field} holds {length}; Zoho refuses \
                 a longer value (INVALID_DATA): set max_length = {length}"
            ));
        }
    }
    for required in LEAD_REQUIRED {
        if let Some(why) = may_be_blank(form, required) {
            out.push(format!(
                "{at}.crm_fields: Leads.{required} is required and {why}, so Zoho would refuse such \
                 a lead (MANDATORY_NOT_FOUND); set crm_defaults.{required} (used when it is blank)"
            ));
        }
    }
    out
}

/// An access token and where the API is for it.
struct AccessToken {
    value: Secret,
    api: String,
    until: Instant,
}

/// No `Debug`: it holds the secrets.
pub struct Zoho {
    client: Client,
    accounts_url: String,
    api_url: Option<String>,
    allow_http: bool,
    client_id: String,
    client_secret: Secret,
    refresh_token: Secret,
    field: String,
    /// The access token, until shortly before it expires (one refresh at a time).
    token: Mutex<Option<AccessToken>>,
}

/// Zoho's words on an error: `CODE: message (field)`.
fn words(error: &Value) -> Option<String> {
    let code = error["code"].as_str()?;
    let mut text = match error["message"].as_str() {
        Some(m) => format!("{code}: {m}"),
        None => code.to_string(),
    };
    if let Some(field) = error["details"]["api_name"].as_str() {
        text.push_str(&format!(" ({field})"));
    }
    Some(text)
}

/// A value inside search criteria: `(`, `)`, `,` and `\` escaped with `\`.
fn criteria_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 4);
    for c in value.chars() {
        if matches!(c, '(' | ')' | ',' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl Zoho {
    /// The access token and the API base: the cached one, else a new one from the refresh token.
    async fn access(&self) -> Result<(Secret, String), Report> {
        let mut cached = self.token.lock().await;
        if let Some(t) = cached.as_ref().filter(|t| t.until > Instant::now()) {
            return Ok((t.value.clone(), t.api.clone()));
        }
        let form = [
            ("grant_type", "refresh_token"),
            ("client_id", self.client_id.as_str()),
            ("client_secret", self.client_secret.0.as_str()),
            ("refresh_token", self.refresh_token.0.as_str()),
        ];
        let url = format!("{}/oauth/v2/token", self.accounts_url);
        let answer =
            Answer::read(self.client.send(self.client.post(url).form(&form)).await?, "zoho_token_body")
                .await?;
        // The token call creates nothing: a 5xx may simply be tried again.
        let refused = |why: Option<String>| answer.refused(ServerErrors::DidNotAct, why);
        if !answer.ok() {
            return Err(refused(answer.body["error"].as_str().map(str::to_string)));
        }
        let Some(value) = answer.body["access_token"].as_str().filter(|t| !t.is_empty()) else {
            let said = answer.body["error"].as_str().map(|e| format!("token refused: {e}"));
            return Err(Report::failed(Outcome::Permanent, "zoho_token_refused").with_detail(said));
        };
        let api = match (&self.api_url, answer.body["api_domain"].as_str()) {
            (Some(api), _) => api.clone(),
            (None, Some(domain)) if url_policy::check("api_domain", domain, self.allow_http).is_ok() => {
                domain.trim_end_matches('/').to_string()
            }
            _ => return Err(Report::failed(Outcome::Permanent, "zoho_api_domain")),
        };
        let lifetime = answer.body["expires_in"].as_u64().unwrap_or(3600).saturating_sub(60);
        let token = AccessToken {
            value: Secret(value.to_string()),
            api,
            until: Instant::now() + Duration::from_secs(lifetime),
        };
        let out = (token.value.clone(), token.api.clone());
        *cached = Some(token);
        Ok(out)
    }

    /// Sends the request `make` builds for the API base, with the access token; an answer of
    /// `INVALID_TOKEN` drops the token and sends once more with a new one.
    async fn call(&self, make: impl Fn(&str) -> RequestBuilder) -> Result<Answer, Report> {
        for fresh in [false, true] {
            let (token, api) = self.access().await?;
            let req = make(&api).header(AUTHORIZATION, format!("Zoho-oauthtoken {}", token.0));
            let answer = Answer::read(self.client.send(req).await?, "zoho_body").await?;
            if answer.code() == 401 && answer.body["code"] == "INVALID_TOKEN" && !fresh {
                *self.token.lock().await = None;
                continue;
            }
            return Ok(answer);
        }
        Err(Report::failed(Outcome::Permanent, "zoho_token_refused"))
    }

    /// The Lead's record: its fields and the reference in the external-ID field.
    fn record(&self, lead: &Lead) -> Map<String, Value> {
        let mut record: Map<String, Value> = lead.fields.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        record.insert(self.field.clone(), json!(lead.external_ref));
        record
    }
}

/// The upsert's answer: the record's `SUCCESS` and id, else its error.
fn upserted(answer: &Answer) -> Report {
    let result = &answer.body["data"][0];
    if answer.ok() && result["code"] == "SUCCESS" {
        return match result["details"]["id"].as_str().filter(|id| !id.is_empty()) {
            Some(id) => Report::sent(id).with_http(answer.code()),
            None => Report::failed(Outcome::Ambiguous, "zoho_no_id").with_http(answer.code()),
        };
    }
    // A record's error (400 or 207), else the request's own (`{code, message, …}` at the top).
    let error = if result.is_object() { result } else { &answer.body };
    let said = words(error);
    if answer.ok() {
        return Report::failed(Outcome::Permanent, "zoho_record_error")
            .with_http(answer.code())
            .with_detail(said);
    }
    if error["code"] == "DUPLICATE_DATA" {
        return Report::failed(Outcome::Permanent, "duplicate_data")
            .with_http(answer.code())
            .with_detail(said);
    }
    answer.refused(ServerErrors::MayHaveActed, said)
}

/// How a duplicate note's key is written in its content (and found there again).
fn key_mark(key: &str) -> String {
    format!("[onceform {key}]")
}

impl Zoho {
    /// The Lead's ID under `reference`; a failed search is a transient failure.
    async fn lead_of(&self, reference: &str) -> Result<Option<String>, Report> {
        match self.lookup(reference).await {
            Lookup::Found { provider_ref } => Ok(Some(provider_ref)),
            Lookup::Absent => Ok(None),
            Lookup::Failed { error_class } => {
                Err(Report::failed(Outcome::Transient { retry_after: None }, error_class))
            }
        }
    }

    /// The URL path of a Lead's notes.
    fn notes_path(lead_id: &str) -> Result<String, Report> {
        let id =
            encode_segment(lead_id).ok_or_else(|| Report::failed(Outcome::Permanent, "bad_reference"))?;
        Ok(format!("/crm/{API_VERSION}/Leads/{id}/Notes"))
    }

    /// The note on `lead_id` whose content holds `key`, if there is one.
    async fn find_keyed_note(&self, lead_id: &str, key: &str) -> Result<Option<String>, Report> {
        let path = Self::notes_path(lead_id)?;
        let make = |api: &str| {
            let query = [("fields", "Note_Title,Note_Content"), ("per_page", "200")];
            self.client.get(format!("{api}{path}")).query(&query)
        };
        let answer = self.call(make).await?;
        match answer.code() {
            204 => Ok(None),
            200 => {
                let mark = key_mark(key);
                let notes = answer.body["data"].as_array().cloned().unwrap_or_default();
                Ok(notes
                    .iter()
                    .filter(|n| n["Note_Content"].as_str().is_some_and(|c| c.contains(&mark)))
                    .find_map(|n| n["id"].as_str().map(str::to_string)))
            }
            _ => Err(answer.refused(ServerErrors::DidNotAct, words(&answer.body))),
        }
    }

    async fn add_keyed_note(&self, note: &LeadNote) -> Result<Report, Report> {
        let Some(lead_id) = self.lead_of(&note.on).await? else { return Ok(note_lead_absent()) };
        if let Some(id) = self.find_keyed_note(&lead_id, &note.key).await? {
            return Ok(Report::sent(id));
        }
        let mut content = note.text.clone();
        if let Some(original) = self.lead_of(&note.about).await? {
            content.push_str(&format!(" The original's Lead: {original}."));
        }
        content.push_str(&format!("\n{}", key_mark(&note.key)));
        let body = json!({"data": [{"Note_Title": "onceform: duplicate", "Note_Content": content}]});
        let path = Self::notes_path(&lead_id)?;
        let answer = self.call(|api: &str| self.client.post(format!("{api}{path}")).json(&body)).await?;
        Ok(upserted(&answer))
    }
}

impl CrmAdapter for Zoho {
    fn capabilities(&self) -> Capabilities {
        Capabilities { idempotent_upsert: true, lookup: true, notes: true }
    }

    fn create<'a>(&'a self, lead: &'a Lead) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let body = json!({"data": [self.record(lead)], "duplicate_check_fields": [self.field]});
            let make =
                |api: &str| self.client.post(format!("{api}/crm/{API_VERSION}/Leads/upsert")).json(&body);
            match self.call(make).await {
                Ok(answer) => upserted(&answer),
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
            let criteria = format!("({}:equals:{})", self.field, criteria_value(external_ref));
            let make = |api: &str| {
                let url = format!("{api}/crm/{API_VERSION}/Leads/search");
                self.client.get(url).query(&[("criteria", criteria.as_str()), ("per_page", "2")])
            };
            let answer = match self.call(make).await {
                Ok(a) => a,
                Err(_) => return lookup_failed("lookup_transport"),
            };
            match answer.code() {
                204 => Lookup::Absent,
                200 => match answer.body["data"][0]["id"].as_str() {
                    Some(id) => Lookup::Found { provider_ref: id.to_string() },
                    None => lookup_failed("lookup_body"),
                },
                s => lookup_failed(format!("lookup_http_{s}")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criteria_values_escape_what_zoho_reads_as_syntax() {
        assert_eq!(criteria_value("0193-ab:zoho:0"), "0193-ab:zoho:0");
        assert_eq!(criteria_value(r"a(b),c\d"), r"a\(b\)\,c\\d");
    }

    #[test]
    fn zoho_words_name_the_code_message_and_field() {
        let e = json!({"code": "MANDATORY_NOT_FOUND", "details": {"api_name": "Last_Name"},
                       "message": "required field not found", "status": "error"});
        assert_eq!(words(&e).as_deref(), Some("MANDATORY_NOT_FOUND: required field not found (Last_Name)"));
    }
}
