//! `salesforce`: upsert a Lead by an external ID field (idempotent); look it up by that field.
//!
//! Held to Salesforce's REST API guide, "sObject Rows by External ID": upsert is
//! `PATCH /services/data/vXX.X/sobjects/Lead/{field}/{value}` whose body names neither `Id` nor
//! the external ID field (201 created, 200 updated with `{id, success, errors, created}`,
//! 204 before API 46.0, 300 when the value matches several records); the lookup is a `GET` of
//! the same resource, which takes no parameters; errors are arrays of `{message, errorCode,
//! fields}`, kept (bounded) in the attempts log.
//!
//! check-config holds each form's mapping to the Lead's standard fields ("Object Reference
//! for Salesforce", Lead): a form field longer than its Lead field is refused by Salesforce
//! (`STRING_TOO_LONG`), and a required field (`LastName`, `Company`) that the mapping can
//! leave blank, without a `crm_defaults` value, is refused on create (`REQUIRED_FIELD_MISSING`).
//!
//! A lead's files, after the Lead ("Insert or Update Blob Data", Object Reference
//! ContentVersion): each file is a `ContentVersion` created with
//! `POST /services/data/vXX.X/sobjects/ContentVersion` (JSON: `Title`, `PathOnClient`,
//! `VersionData` base64, `FirstPublishLocationId` the Lead's Id, so the file is linked to
//! the Lead) whose `Description` is `onceform file {step key}` (`crm::file_key`); before
//! creating it, the SOQL query `SELECT Id FROM ContentVersion WHERE Description = '…'`
//! (`GET /services/data/vXX.X/query?q=…`) looks for that Description, so a retry after a
//! lost answer finds the version instead of creating a second one.
//!
//! A decided duplicate's note (`add_note`, Object Reference Task): a completed Task on the
//! duplicate's Lead (`WhoId`, found by its external ID as `lookup`), its `Subject`
//! `onceform duplicate [{key}]` (a filterable field: `Description` is a long text area, which
//! SOQL cannot filter), its `Description` the text and the original's Lead Id where Salesforce
//! has it. Before creating it, and to reconcile, `SELECT Id FROM Task WHERE WhoId = '…' AND
//! Subject = '…'` looks for it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::{
    note_lead_absent, own, url_of, url_problems, AdapterKind, Capabilities, CrmAdapter, Lead, LeadFile,
    LeadNote,
};
use crate::config::kind_settings::Settings;
use crate::config::{CrmConfig, FormConfig};
use crate::services::effects::http::{
    authorize, client, encode_segment, excerpt, id_of, json_call, lookup_failed, read_head, status_report,
    Client, Reach, Secret, ServerErrors,
};
use crate::services::effects::settings::settings_of;
use crate::services::effects::{BoxFuture, Lookup, Outcome, Report};

const API_VERSION: &str = "v59.0";

/// The Lead's standard text fields and their lengths (Object Reference, Lead).
const LEAD_FIELDS: &[(&str, usize)] = &[
    ("Salutation", 40),
    ("FirstName", 40),
    ("MiddleName", 40),
    ("LastName", 80),
    ("Suffix", 40),
    ("Title", 128),
    ("Company", 255),
    ("Email", 80),
    ("Phone", 40),
    ("MobilePhone", 40),
    ("Fax", 40),
    ("Website", 255),
    ("Street", 255),
    ("City", 40),
    ("State", 80),
    ("PostalCode", 20),
    ("Country", 80),
    ("Industry", 255),
    ("LeadSource", 255),
    ("Description", 32000),
];

/// Required on create.
const LEAD_REQUIRED: &[&str] = &["LastName", "Company"];

/// `[crm.salesforce]`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SalesforceSettings {
    /// The Lead's External ID field (e.g. `Onceform_Ref__c`) that holds the external reference.
    #[serde(default = "default_external_id_field")]
    external_id_field: String,
}

fn default_external_id_field() -> String {
    "Onceform_Ref__c".into()
}

pub struct SalesforceKind;

impl AdapterKind for SalesforceKind {
    fn name(&self) -> &'static str {
        "salesforce"
    }

    fn settings(&self, table: toml::Table) -> Result<Settings, String> {
        settings_of::<SalesforceSettings>(toml::Value::Table(table))
    }

    fn moved_keys(&self) -> &'static [(&'static str, &'static str)] {
        &[("salesforce_external_id_field", "external_id_field")]
    }

    fn problems(&self, crm: &CrmConfig) -> Vec<String> {
        let mut out = url_problems(crm);
        if own::<SalesforceSettings>(crm, self).is_ok_and(|s| s.external_id_field.trim().is_empty()) {
            out.push("crm.salesforce.external_id_field: names the Lead's External ID field".into());
        }
        out
    }

    fn mapping_warnings(&self, at: &str, form: &FormConfig) -> Vec<String> {
        mapping_warnings(at, form)
    }

    fn build(
        &self,
        crm: &CrmConfig,
        token: Option<Secret>,
        _secrets: &crate::config::Secrets,
        timeout: Duration,
    ) -> anyhow::Result<Arc<dyn CrmAdapter>> {
        let settings = own::<SalesforceSettings>(crm, self)?;
        Ok(Arc::new(Salesforce::new(
            url_of(crm)?,
            settings.external_id_field.clone(),
            token,
            Reach::allowing_private(crm.allow_private),
            timeout,
        )?))
    }
}

/// A Lead standard field and its length (field names are case-insensitive).
fn lead_length(field: &str) -> Option<(&'static str, usize)> {
    LEAD_FIELDS.iter().copied().find(|(name, _)| name.eq_ignore_ascii_case(field))
}

/// check-config: `form`'s mapping against the Lead (see the module's notes).
fn mapping_warnings(at: &str, form: &FormConfig) -> Vec<String> {
    if form.crm_fields.is_empty() {
        return vec![format!(
            "{at}.crm_fields: none, so every field goes under its own name, which a Lead does not \
             have (Salesforce refuses it: INVALID_FIELD); map each field to a Lead field"
        )];
    }
    let mut out = Vec::new();
    for (name, to) in &form.crm_fields {
        let (Some(field), Some((lead_field, length))) = (form.field(name), lead_length(to)) else { continue };
        let max = field.max_length();
        if max > length {
            out.push(format!(
                "{at}.fields ({name}): up to {max} characters, but Lead.{lead_field} holds {length}; \
                 Salesforce refuses a longer value (STRING_TOO_LONG): set max_length = {length}"
            ));
        }
    }
    for (key, value) in &form.crm_defaults {
        if let Some((lead_field, length)) = lead_length(key).filter(|(_, l)| value.chars().count() > *l) {
            out.push(format!("{at}.crm_defaults.{key}: longer than Lead.{lead_field}'s {length} characters"));
        }
    }
    for required in LEAD_REQUIRED {
        let defaulted =
            form.crm_defaults.iter().any(|(k, v)| k.eq_ignore_ascii_case(required) && !v.trim().is_empty());
        let from: Vec<&String> = form
            .crm_fields
            .iter()
            .filter(|(_, to)| to.eq_ignore_ascii_case(required))
            .map(|(f, _)| f)
            .collect();
        if defaulted || from.iter().any(|f| form.field(f).is_some_and(|f| f.required)) {
            continue;
        }
        let why = match from.first() {
            Some(f) => format!("the optional field `{f}` can leave it blank"),
            None => "no field is mapped to it".to_string(),
        };
        out.push(format!(
            "{at}.crm_fields: Lead.{required} is required and {why}, so Salesforce would refuse \
             such a lead (REQUIRED_FIELD_MISSING); set crm_defaults.{required} (used when it is blank)"
        ));
    }
    out
}

/// Salesforce's error array as one line: `CODE: message (fields: A, B); …`.
fn error_messages(body: &Value) -> Option<String> {
    let lines: Vec<String> = body
        .as_array()?
        .iter()
        .filter_map(|e| {
            let code = e["errorCode"].as_str().unwrap_or("ERROR");
            let message = e["message"].as_str()?;
            let fields: Vec<&str> = e["fields"]
                .as_array()
                .map(|f| f.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            Some(match fields.is_empty() {
                true => format!("{code}: {message}"),
                false => format!("{code}: {message} (fields: {})", fields.join(", ")),
            })
        })
        .collect();
    excerpt(lines.join("; ").as_bytes())
}

pub struct Salesforce {
    client: Client,
    instance_url: String,
    /// The Lead's external ID field (e.g. `Onceform_Ref__c`) that holds the external reference.
    external_id_field: String,
    token: Option<Secret>,
}

impl Salesforce {
    pub fn new(
        url: String,
        field: String,
        token: Option<Secret>,
        reach: Reach,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let instance_url = url.trim_end_matches('/').to_string();
        Ok(Salesforce { client: client(timeout, reach)?, instance_url, external_id_field: field, token })
    }

    /// The Lead's fields as the upsert body: without `Id` or the external ID field (field
    /// names are case-insensitive), which the resource refuses in the body.
    fn body(&self, lead: &Lead) -> Map<String, Value> {
        let named = |k: &str| k.eq_ignore_ascii_case("Id") || k.eq_ignore_ascii_case(&self.external_id_field);
        lead.fields
            .iter()
            .filter(|(k, _)| !named(k))
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect()
    }

    /// `None` for a reference that cannot be one path segment (`encode_segment`).
    fn record_url(&self, external_ref: &str) -> Option<String> {
        let (field, r) = (encode_segment(&self.external_id_field)?, encode_segment(external_ref)?);
        Some(format!("{}/services/data/{API_VERSION}/sobjects/Lead/{field}/{r}", self.instance_url))
    }
}

/// The `Description` that names one file's step (see the module's notes).
fn marker(step_key: &str) -> String {
    format!("onceform file {step_key}")
}

/// A string literal of SOQL: `\` and `'` escaped.
fn soql_string(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

impl Salesforce {
    /// Sends `req`; the JSON of a 2xx answer, else the report of the failure.
    async fn call(&self, req: reqwest::RequestBuilder) -> Result<Value, Report> {
        json_call(&self.client, req, &self.token, "salesforce_body").await
    }

    /// The ContentVersion of one file's step, if Salesforce has it.
    async fn find_version(&self, step_key: &str) -> Result<Option<String>, Report> {
        let soql =
            format!("SELECT Id FROM ContentVersion WHERE Description = {}", soql_string(&marker(step_key)));
        let url = format!("{}/services/data/{API_VERSION}/query", self.instance_url);
        let found = self.call(self.client.get(url).query(&[("q", soql)])).await?;
        Ok(found["records"].as_array().and_then(|r| r.first()).and_then(|v| id_of(v, "Id")))
    }

    /// One file's step: found by its Description, else created on the Lead; its Id.
    async fn file_step(&self, lead_id: &str, f: &LeadFile) -> Result<String, Report> {
        if let Some(id) = self.find_version(&f.key).await? {
            return Ok(id);
        }
        use base64::Engine as _;
        let title = f.file.name.rsplit_once('.').map_or(f.file.name.as_str(), |(stem, _)| stem);
        let body = serde_json::json!({
            "Title": if title.is_empty() { f.file.name.as_str() } else { title },
            "PathOnClient": f.file.name,
            "Description": marker(&f.key),
            "FirstPublishLocationId": lead_id,
            "VersionData": base64::engine::general_purpose::STANDARD.encode(f.bytes.as_slice()),
        });
        let url = format!("{}/services/data/{API_VERSION}/sobjects/ContentVersion", self.instance_url);
        let created = self.call(self.client.post(url).json(&body)).await?;
        id_of(&created, "id").ok_or_else(|| Report::failed(Outcome::Ambiguous, "salesforce_file_no_id"))
    }

    /// The Lead's Id: from the upsert's answer, else (a 204 names none) looked up.
    async fn lead_id(&self, lead: &Lead, sent: &str) -> Result<String, Report> {
        if sent != lead.external_ref {
            return Ok(sent.to_string());
        }
        match self.lookup(&lead.external_ref).await {
            Lookup::Found { provider_ref } => Ok(provider_ref),
            _ => Err(Report::failed(Outcome::Ambiguous, "lead_id_unknown")),
        }
    }
}

/// The Subject of a duplicate note's Task: it holds the note's key (at most 255 characters).
fn note_subject(key: &str) -> String {
    format!("onceform duplicate [{key}]").chars().take(255).collect()
}

impl Salesforce {
    /// The Lead's Id under `external_ref`; `None`: Salesforce has none. A failed read is a
    /// transient failure (nothing was written).
    async fn lead_of(&self, external_ref: &str) -> Result<Option<String>, Report> {
        match self.lookup(external_ref).await {
            Lookup::Found { provider_ref } => Ok(Some(provider_ref)),
            Lookup::Absent => Ok(None),
            Lookup::Failed { error_class } => {
                Err(Report::failed(Outcome::Transient { retry_after: None }, error_class))
            }
        }
    }

    /// The Task on `lead_id` whose Subject holds `key`, if there is one.
    async fn find_task(&self, lead_id: &str, key: &str) -> Result<Option<String>, Report> {
        let soql = format!(
            "SELECT Id FROM Task WHERE WhoId = {} AND Subject = {}",
            soql_string(lead_id),
            soql_string(&note_subject(key))
        );
        let url = format!("{}/services/data/{API_VERSION}/query", self.instance_url);
        let found = self.call(self.client.get(url).query(&[("q", soql)])).await?;
        Ok(found["records"].as_array().and_then(|r| r.first()).and_then(|v| id_of(v, "Id")))
    }

    async fn add_task(&self, note: &LeadNote) -> Result<Report, Report> {
        let Some(lead_id) = self.lead_of(&note.on).await? else { return Ok(note_lead_absent()) };
        if let Some(id) = self.find_task(&lead_id, &note.key).await? {
            return Ok(Report::sent(id));
        }
        let mut description = note.text.clone();
        if let Some(original) = self.lead_of(&note.about).await? {
            description.push_str(&format!(" The original's Lead: {original}."));
        }
        let body = serde_json::json!({
            "WhoId": lead_id,
            "Subject": note_subject(&note.key),
            "Description": description,
            "Status": "Completed",
            "Priority": "Normal",
            "ActivityDate": crate::base::clock::now().date().format("%Y-%m-%d").to_string(),
        });
        let url = format!("{}/services/data/{API_VERSION}/sobjects/Task", self.instance_url);
        let created = self.call(self.client.post(url).json(&body)).await?;
        id_of(&created, "id")
            .map(Report::sent)
            .ok_or_else(|| Report::failed(Outcome::Ambiguous, "salesforce_task_no_id"))
    }
}

/// A 400 whose error list says a duplicate rule blocked the record.
fn duplicates_detected(body: &Value) -> bool {
    body.as_array().is_some_and(|errors| errors.iter().any(|e| e["errorCode"] == "DUPLICATES_DETECTED"))
}

impl CrmAdapter for Salesforce {
    fn capabilities(&self) -> Capabilities {
        Capabilities { idempotent_upsert: true, lookup: true, notes: true }
    }

    fn create<'a>(&'a self, lead: &'a Lead) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let Some(url) = self.record_url(&lead.external_ref) else {
                return Report::failed(Outcome::Permanent, "bad_reference");
            };
            let req = self.client.patch(url).json(&self.body(lead));
            let resp = match self.client.send(authorize(req, &self.token)).await {
                Ok(r) => r,
                Err(report) => return report,
            };
            let status = resp.status().as_u16();
            match status {
                204 => Report::sent(lead.external_ref.clone()).with_http(status),
                s @ 200..=299 => {
                    let body: Value = resp.json().await.unwrap_or_default();
                    Report::sent(id_of(&body, "id").unwrap_or_else(|| lead.external_ref.clone())).with_http(s)
                }
                300 => Report::failed(Outcome::Permanent, "external_id_ambiguous").with_http(status),
                _ => {
                    let refused = status_report(&resp, ServerErrors::MayHaveActed);
                    let head = read_head(resp).await;
                    let body: Value = serde_json::from_slice(&head).unwrap_or_default();
                    // Salesforce's error array, else whatever stood in the body (a proxy's page).
                    let detail = if body.is_array() { error_messages(&body) } else { excerpt(&head) };
                    if status == 400 && duplicates_detected(&body) {
                        return Report::failed(Outcome::Permanent, "duplicate_rule")
                            .with_http(status)
                            .with_detail(detail);
                    }
                    refused.with_detail(detail)
                }
            }
        })
    }

    fn create_with_files<'a>(&'a self, lead: &'a Lead, files: &'a [LeadFile]) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let report = self.create(lead).await;
            let Outcome::Sent { provider_ref } = &report.outcome else { return report };
            if files.is_empty() {
                return report;
            }
            let lead_id = match self.lead_id(lead, provider_ref).await {
                Ok(id) => id,
                Err(failed) => return failed,
            };
            for f in files {
                if let Err(failed) = self.file_step(&lead_id, f).await {
                    return failed;
                }
            }
            report
        })
    }

    fn lookup_with_files<'a>(&'a self, lead: &'a Lead, files: &'a [LeadFile]) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            let found = self.lookup(&lead.external_ref).await;
            if !matches!(found, Lookup::Found { .. }) {
                return found;
            }
            for f in files {
                match self.find_version(&f.key).await {
                    Ok(Some(_)) => {}
                    Ok(None) => return Lookup::Absent,
                    Err(_) => return lookup_failed("lookup_files"),
                }
            }
            found
        })
    }

    fn add_note<'a>(&'a self, note: &'a LeadNote) -> BoxFuture<'a, Report> {
        Box::pin(async move { self.add_task(note).await.unwrap_or_else(|failed| failed) })
    }

    fn find_note<'a>(&'a self, note: &'a LeadNote) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            let holder = self.lead_of(&note.on).await;
            super::find_note_on(holder, "lead", |id| async move { self.find_task(&id, &note.key).await })
                .await
        })
    }

    fn lookup<'a>(&'a self, external_ref: &'a str) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            let Some(url) = self.record_url(external_ref) else { return lookup_failed("bad_reference") };
            let resp = match self.client.send(authorize(self.client.get(url), &self.token)).await {
                Ok(r) => r,
                Err(_) => return lookup_failed("lookup_transport"),
            };
            match resp.status().as_u16() {
                404 => Lookup::Absent,
                200 => {
                    match resp.json::<Value>().await.map(|b| id_of(&b, "Id").or_else(|| id_of(&b, "id"))) {
                        Ok(Some(provider_ref)) => Lookup::Found { provider_ref },
                        _ => lookup_failed("lookup_body"),
                    }
                }
                s => lookup_failed(format!("lookup_http_{s}")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::hubspot::fake::serve;
    use super::*;
    use serde_json::json;

    const REF: &str = "0193-ab:crm_lead:0";
    const PATH: &str = "/services/data/v59.0/sobjects/Lead/Onceform_Ref__c/0193-ab%3Acrm_lead%3A0";

    fn salesforce(base: String) -> Salesforce {
        Salesforce::new(
            base,
            "Onceform_Ref__c".into(),
            Some(Secret("tok".into())),
            Reach::Public,
            Duration::from_secs(5),
        )
        .unwrap()
    }

    async fn upsert(status: &str, extra: &str, body: &str) -> Report {
        let (base, _rx) = serve(status, extra, body).await;
        salesforce(base).create(&Lead { external_ref: REF.into(), fields: Default::default() }).await
    }

    #[tokio::test]
    async fn upsert_201_patches_encoded_ref_and_returns_id() {
        let (base, rx) = serve("201 Created", "", r#"{"id":"00Q1","success":true,"created":true}"#).await;
        let fields = [("Company", "Acme"), ("onceform_ref__C", "x"), ("ID", "y")];
        let lead =
            Lead { external_ref: REF.into(), fields: fields.map(|(k, v)| (k.into(), v.into())).into() };
        assert_eq!(salesforce(base).create(&lead).await, Report::sent("00Q1").with_http(201));
        let got = rx.await.unwrap();
        assert_eq!(got.request_line(), format!("PATCH {PATH} HTTP/1.1"));
        assert_eq!(got.header("authorization"), Some("Bearer tok"));
        let body = serde_json::from_str::<Value>(&got.body).unwrap();
        assert_eq!(body, json!({"Company": "Acme"}), "neither Id nor the external ID field in the body");
    }

    #[tokio::test]
    async fn upsert_204_is_sent_with_external_ref() {
        assert_eq!(upsert("204 No Content", "", "").await, Report::sent(REF).with_http(204));
    }

    #[tokio::test]
    async fn duplicates_detected_is_permanent_duplicate_rule() {
        let body =
            r#"[{"message":"Use one of these records?","errorCode":"DUPLICATES_DETECTED","fields":[]}]"#;
        let want = Report::failed(Outcome::Permanent, "duplicate_rule")
            .with_http(400)
            .with_detail(Some("DUPLICATES_DETECTED: Use one of these records?".into()));
        assert_eq!(upsert("400 Bad Request", "", body).await, want);
    }

    #[tokio::test]
    async fn multiple_choices_300_is_permanent_external_id_ambiguous() {
        let want = Report::failed(Outcome::Permanent, "external_id_ambiguous").with_http(300);
        assert_eq!(upsert("300 Multiple Choices", "", r#"["/a","/b"]"#).await, want);
    }

    #[tokio::test]
    async fn server_error_500_is_ambiguous() {
        let report = upsert("500 Internal Server Error", "", "not json\r\n").await;
        let said = Some("not json".to_string());
        assert_eq!(report, Report::failed(Outcome::Ambiguous, "http_500").with_http(500).with_detail(said));
    }

    #[tokio::test]
    async fn too_many_requests_429_is_transient_with_retry_after() {
        let report = upsert("429 Too Many Requests", "retry-after: 7\r\n", "[]").await;
        let transient = Outcome::Transient { retry_after: Some(Duration::from_secs(7)) };
        assert_eq!(report, Report::failed(transient, "http_429").with_http(429));
    }

    #[tokio::test]
    async fn lookup_200_is_found_by_external_id() {
        let (base, rx) = serve("200 OK", "", r#"{"attributes":{"type":"Lead"},"Id":"00Q1"}"#).await;
        assert_eq!(salesforce(base).lookup(REF).await, Lookup::Found { provider_ref: "00Q1".into() });
        let got = rx.await.unwrap();
        assert_eq!(got.request_line(), format!("GET {PATH} HTTP/1.1"), "the resource takes no parameters");
        assert_eq!(got.header("authorization"), Some("Bearer tok"));
    }

    #[tokio::test]
    async fn lookup_404_is_absent() {
        let (base, _rx) = serve("404 Not Found", "", r#"[{"errorCode":"NOT_FOUND"}]"#).await;
        assert_eq!(salesforce(base).lookup(REF).await, Lookup::Absent);
    }
}
