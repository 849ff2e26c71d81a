//! `hubspot`: upsert a contact by a unique property holding the external reference
//! (`POST /crm/v3/objects/contacts/batch/upsert` with `idProperty`, one input per lead), so
//! sending twice leaves one contact; look it up by the same property.
//!
//! Shapes from HubSpot's OpenAPI description of CRM v3 contacts
//! (`HubSpot/HubSpot-public-api-spec-collection`, `PublicApiSpecs/CRM/Contacts/Rollouts/424/v3/contacts.json`):
//! `BatchInputSimplePublicObjectBatchInputUpsert` in, `BatchResponseSimplePublicUpsertObject`
//! (200) or `…WithErrors` (207) out, `Error` on failure.
//!
//! A lead's files, after the contact (HubSpot's files guide, "Upload a file", and the notes
//! API, "Create a note" / "Associate existing notes with records"): each file is uploaded
//! with `POST /files/v3/files` (multipart: `file`, `fileName`, `folderPath`, `options`
//! `{"access":"PRIVATE"}`) into the folder `/onceform/{the lead's reference}` under a name
//! that holds the first 16 hex digits of its SHA-256 (`drawing-0123456789abcdef.pdf`); before
//! uploading, `GET /files/v3/files/search?name=…` looks for that name in that folder, so a
//! retry after a lost answer finds the file instead of uploading it again. Then one note
//! (`POST /crm/v3/objects/notes`) with `hs_attachment_ids` (the file IDs, `;`-separated) and
//! an association to the contact (`HUBSPOT_DEFINED` type 202, note to contact), unless
//! `POST /crm/v3/objects/notes/search` finds a note with exactly those attachment IDs.
//!
//! A decided duplicate's note (`add_note`, HubSpot's notes guide and CRM search guide): the
//! duplicate's contact is read by its reference (as `lookup`), the original's too; unless the
//! notes search (`associations.contact` EQ the contact, `hs_note_body` returned) finds a note
//! on that contact whose body holds the note's key, one note is created with `hs_timestamp`,
//! `hs_note_body` (the text and the key) and an association (type 202) to each contact. The
//! search index trails writes by a few seconds, which `[worker] reconcile_after_ms` covers.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{
    note_lead_absent, own, url_of, url_problems, AdapterKind, Capabilities, CrmAdapter, Lead, LeadFile,
    LeadNote,
};
use crate::config::kind_settings::Settings;
use crate::config::CrmConfig;
use crate::domain::FileRef;
use crate::services::effects::http::{
    authorize, client, encode_segment, excerpt, id_of, json_call, lookup_failed, read_head, status_report,
    Client, Reach, Secret, ServerErrors,
};
use crate::services::effects::settings::settings_of;
use crate::services::effects::{BoxFuture, Lookup, Outcome, Report};

/// `[crm.hubspot]`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HubspotSettings {
    /// A unique contact property that holds the external reference.
    #[serde(default = "default_id_property")]
    id_property: String,
}

fn default_id_property() -> String {
    "onceform_ref".into()
}

pub struct HubspotKind;

impl AdapterKind for HubspotKind {
    fn name(&self) -> &'static str {
        "hubspot"
    }

    fn settings(&self, table: toml::Table) -> Result<Settings, String> {
        settings_of::<HubspotSettings>(toml::Value::Table(table))
    }

    fn moved_keys(&self) -> &'static [(&'static str, &'static str)] {
        &[("hubspot_id_property", "id_property")]
    }

    fn problems(&self, crm: &CrmConfig) -> Vec<String> {
        let mut out = url_problems(crm);
        if own::<HubspotSettings>(crm, self).is_ok_and(|s| s.id_property.trim().is_empty()) {
            out.push("crm.hubspot.id_property: names the unique contact property".into());
        }
        out
    }

    fn build(
        &self,
        crm: &CrmConfig,
        token: Option<Secret>,
        _secrets: &crate::config::Secrets,
        timeout: Duration,
    ) -> anyhow::Result<Arc<dyn CrmAdapter>> {
        let settings = own::<HubspotSettings>(crm, self)?;
        Ok(Arc::new(Hubspot::new(
            url_of(crm)?,
            settings.id_property.clone(),
            token,
            Reach::allowing_private(crm.allow_private),
            timeout,
        )?))
    }
}

pub struct Hubspot {
    client: Client,
    base_url: String,
    /// A unique contact property that holds the external reference.
    id_property: String,
    token: Option<Secret>,
}

impl Hubspot {
    pub fn new(
        url: String,
        id_property: String,
        token: Option<Secret>,
        reach: Reach,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let base_url = url.trim_end_matches('/').to_string();
        Ok(Hubspot { client: client(timeout, reach)?, base_url, id_property, token })
    }

    /// One `SimplePublicObjectBatchInputUpsert`: `id` is the reference, `idProperty` names the
    /// unique property; the reference is also among the properties, so a new contact carries it.
    fn upsert_body(&self, lead: &Lead) -> Value {
        let mut properties: Map<String, Value> =
            lead.fields.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
        properties.insert(self.id_property.clone(), Value::String(lead.external_ref.clone()));
        json!({"inputs": [{
            "idProperty": self.id_property,
            "id": lead.external_ref,
            "properties": properties,
        }]})
    }
}

/// The note-to-contact association type (HubSpot-defined).
const NOTE_TO_CONTACT: u16 = 202;

/// The folder of one lead's files: `/onceform/` and its reference, letters, digits and `-`
/// kept, any other byte `_XX` (so two references never share a folder).
fn folder_of(external_ref: &str) -> String {
    let mut segment = String::with_capacity(external_ref.len() + 8);
    for b in external_ref.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' => segment.push(b as char),
            _ => segment.push_str(&format!("_{b:02X}")),
        }
    }
    format!("/onceform/{segment}")
}

/// The file's name at HubSpot without its extension (HubSpot's `name`): the display name's
/// stem, `-`, the first 16 hex digits of its digest; and its extension.
fn name_at_hubspot(file: &FileRef) -> (String, Option<String>) {
    let (stem, ext) = match file.name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => (stem, Some(ext.to_string())),
        _ => (file.name.as_str(), None),
    };
    let stem: String = stem.chars().filter(|c| !matches!(c, '/' | '\\' | '"')).take(80).collect();
    (format!("{stem}-{}", &file.sha256[..16]), ext)
}

/// A multipart/form-data body: text fields, then the file; its content type.
fn multipart(
    fields: &[(&str, &str)],
    file_name: &str,
    content_type: &str,
    bytes: &[u8],
) -> (String, Vec<u8>) {
    let boundary = format!("onceform-{}", uuid::Uuid::new_v4().simple());
    let mut body = Vec::with_capacity(bytes.len() + 1024);
    for (name, value) in fields {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                .as_bytes(),
        );
    }
    // The header's file name in ASCII (the real one goes in `fileName`).
    let ascii: String = file_name
        .chars()
        .map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' { c } else { '_' })
        .collect();
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{ascii}\"\r\nContent-Type: {content_type}\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Text made safe inside the note's HTML body.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

impl Hubspot {
    /// Sends `req`; the JSON of a 2xx answer, else the report of the failure.
    async fn call(&self, req: reqwest::RequestBuilder) -> Result<Value, Report> {
        json_call(&self.client, req, &self.token, "hubspot_body").await
    }

    /// The ID of the file named `name` in `folder`, if HubSpot has it.
    async fn find_file(&self, folder: &str, name: &str) -> Result<Option<String>, Report> {
        let url = format!("{}/files/v3/files/search", self.base_url);
        let found = self.call(self.client.get(url).query(&[("name", name)])).await?;
        let prefix = format!("{folder}/");
        let results = found["results"].as_array().cloned().unwrap_or_default();
        Ok(results
            .iter()
            .filter(|f| f["archived"] != Value::Bool(true))
            .filter(|f| f["path"].as_str().is_some_and(|p| p.starts_with(&prefix)))
            .find_map(|f| id_of(f, "id")))
    }

    /// One file's step: found in its folder, else uploaded there; its ID.
    async fn file_step(&self, lead: &Lead, f: &LeadFile) -> Result<String, Report> {
        let folder = folder_of(&lead.external_ref);
        let (name, ext) = name_at_hubspot(&f.file);
        if let Some(id) = self.find_file(&folder, &name).await? {
            return Ok(id);
        }
        let file_name = match &ext {
            Some(ext) => format!("{name}.{ext}"),
            None => name.clone(),
        };
        let options = json!({"access": "PRIVATE", "overwrite": false}).to_string();
        let fields = [
            ("fileName", file_name.as_str()),
            ("folderPath", folder.as_str()),
            ("options", options.as_str()),
        ];
        let (content_type, body) = multipart(&fields, &file_name, &f.file.content_type, &f.bytes);
        let url = format!("{}/files/v3/files", self.base_url);
        let req = self.client.post(url).header(reqwest::header::CONTENT_TYPE, content_type).body(body);
        let uploaded = self.call(req).await?;
        id_of(&uploaded, "id").ok_or_else(|| Report::failed(Outcome::Ambiguous, "hubspot_file_no_id"))
    }

    /// The note holding exactly these attachments, if there is one.
    async fn find_note(&self, attachment_ids: &str) -> Result<Option<String>, Report> {
        let url = format!("{}/crm/v3/objects/notes/search", self.base_url);
        let query = json!({
            "filterGroups": [{"filters": [
                {"propertyName": "hs_attachment_ids", "operator": "EQ", "value": attachment_ids}
            ]}],
            "properties": ["hs_attachment_ids"],
            "limit": 1,
        });
        let found = self.call(self.client.post(url).json(&query)).await?;
        Ok(found["results"].as_array().and_then(|r| r.first()).and_then(|n| id_of(n, "id")))
    }

    /// The note step: the contact's note with the files attached, unless it exists.
    async fn note_step(&self, contact: &str, files: &[LeadFile], ids: &[String]) -> Result<String, Report> {
        let attachment_ids = ids.join(";");
        if let Some(id) = self.find_note(&attachment_ids).await? {
            return Ok(id);
        }
        let names: Vec<String> = files.iter().map(|f| escape(&f.file.shown())).collect();
        let body = json!({
            "properties": {
                "hs_timestamp": crate::base::format::rfc3339(crate::base::clock::now()),
                "hs_note_body": format!("Files sent with the form:<br>{}", names.join("<br>")),
                "hs_attachment_ids": attachment_ids,
            },
            "associations": [{
                "to": {"id": contact},
                "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": NOTE_TO_CONTACT}],
            }],
        });
        let url = format!("{}/crm/v3/objects/notes", self.base_url);
        let created = self.call(self.client.post(url).json(&body)).await?;
        id_of(&created, "id").ok_or_else(|| Report::failed(Outcome::Ambiguous, "hubspot_note_no_id"))
    }
}

/// How a duplicate note's key is written in its body (and found there again).
fn key_mark(key: &str) -> String {
    format!("[onceform {}]", escape(key))
}

impl Hubspot {
    /// The ID of the contact under `external_ref`; `None`: HubSpot has none. A failed read
    /// is a transient failure (nothing was written).
    async fn contact_of(&self, external_ref: &str) -> Result<Option<String>, Report> {
        match self.lookup(external_ref).await {
            Lookup::Found { provider_ref } => Ok(Some(provider_ref)),
            Lookup::Absent => Ok(None),
            Lookup::Failed { error_class } => {
                Err(Report::failed(Outcome::Transient { retry_after: None }, error_class))
            }
        }
    }

    /// The note on `contact` whose body holds `key`, if there is one.
    async fn find_keyed_note(&self, contact: &str, key: &str) -> Result<Option<String>, Report> {
        let url = format!("{}/crm/v3/objects/notes/search", self.base_url);
        let query = json!({
            "filterGroups": [{"filters": [
                {"propertyName": "associations.contact", "operator": "EQ", "value": contact}
            ]}],
            "properties": ["hs_note_body"],
            "limit": 100,
        });
        let found = self.call(self.client.post(url).json(&query)).await?;
        let mark = key_mark(key);
        let results = found["results"].as_array().cloned().unwrap_or_default();
        Ok(results
            .iter()
            .filter(|n| n["properties"]["hs_note_body"].as_str().is_some_and(|b| b.contains(&mark)))
            .find_map(|n| id_of(n, "id")))
    }

    async fn add_keyed_note(&self, note: &LeadNote) -> Result<Report, Report> {
        let Some(contact) = self.contact_of(&note.on).await? else { return Ok(note_lead_absent()) };
        if let Some(id) = self.find_keyed_note(&contact, &note.key).await? {
            return Ok(Report::sent(id));
        }
        let original = self.contact_of(&note.about).await?;
        let to = |id: &str| {
            json!({"to": {"id": id},
                   "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": NOTE_TO_CONTACT}]})
        };
        let mut associations = vec![to(&contact)];
        associations.extend(original.filter(|o| *o != contact).map(|o| to(&o)));
        let body = json!({
            "properties": {
                "hs_timestamp": crate::base::format::rfc3339(crate::base::clock::now()),
                "hs_note_body": format!("{}<br>{}", escape(&note.text), key_mark(&note.key)),
            },
            "associations": associations,
        });
        let url = format!("{}/crm/v3/objects/notes", self.base_url);
        let created = self.call(self.client.post(url).json(&body)).await?;
        id_of(&created, "id")
            .map(Report::sent)
            .ok_or_else(|| Report::failed(Outcome::Ambiguous, "hubspot_note_no_id"))
    }
}

/// A 200/207 batch answer: the upserted contact's id, else the first error's outcome.
fn batch_outcome(body: &Value, status: u16) -> Report {
    if let Some(id) = body["results"].as_array().and_then(|r| r.first()).and_then(|o| id_of(o, "id")) {
        return Report::sent(id).with_http(status);
    }
    match body["errors"].as_array().and_then(|e| e.first()) {
        Some(error) => error_outcome(error, error["status"].as_str().and_then(|s| s.parse().ok()))
            .unwrap_or_else(|| Report::failed(Outcome::Permanent, "hubspot_batch_error"))
            .with_http(status)
            .with_detail(error_message(error)),
        // A success without a result: whether it took effect is unclear; an upsert may be resent.
        None => Report::failed(Outcome::Ambiguous, "hubspot_no_result").with_http(status),
    }
}

/// An `Error` body's words for the attempts log: `CATEGORY: message`.
fn error_message(error: &Value) -> Option<String> {
    let message = error["message"].as_str()?;
    let text = match error["category"].as_str() {
        Some(category) => format!("{category}: {message}"),
        None => message.to_string(),
    };
    excerpt(text.as_bytes())
}

/// What an `Error` / `StandardError` body says, where it says more than its status: another
/// contact already has this email (`CONFLICT`), or the error's own status inside a 207.
fn error_outcome(error: &Value, status: Option<u16>) -> Option<Report> {
    if error["category"] == "CONFLICT" {
        return Some(Report::failed(Outcome::Permanent, "contact_exists"));
    }
    let class = format!("hubspot_{}", status?);
    Some(match status? {
        429 => Report::failed(Outcome::Transient { retry_after: None }, class),
        s if s >= 500 => Report::failed(Outcome::Ambiguous, class),
        _ => Report::failed(Outcome::Permanent, class),
    })
}

impl CrmAdapter for Hubspot {
    fn capabilities(&self) -> Capabilities {
        Capabilities { idempotent_upsert: true, lookup: true, notes: true }
    }

    fn create<'a>(&'a self, lead: &'a Lead) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let url = format!("{}/crm/v3/objects/contacts/batch/upsert", self.base_url);
            let req = self.client.post(url).json(&self.upsert_body(lead));
            let resp = match self.client.send(authorize(req, &self.token)).await {
                Ok(r) => r,
                Err(report) => return report,
            };
            let status = resp.status().as_u16();
            if matches!(status, 200 | 207) {
                return match resp.json::<Value>().await {
                    Ok(body) => batch_outcome(&body, status),
                    Err(_) => Report::failed(Outcome::Ambiguous, "hubspot_body").with_http(status),
                };
            }
            let refused = status_report(&resp, ServerErrors::MayHaveActed);
            let head = read_head(resp).await;
            let body: Value = serde_json::from_slice(&head).unwrap_or_default();
            if status == 409 {
                if let Some(report) = error_outcome(&body, None) {
                    return report.with_http(status);
                }
            }
            refused.with_detail(error_message(&body).or_else(|| excerpt(&head)))
        })
    }

    fn create_with_files<'a>(&'a self, lead: &'a Lead, files: &'a [LeadFile]) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let report = self.create(lead).await;
            let Outcome::Sent { provider_ref: contact } = &report.outcome else { return report };
            if files.is_empty() {
                return report;
            }
            let mut ids = Vec::with_capacity(files.len());
            for f in files {
                match self.file_step(lead, f).await {
                    Ok(id) => ids.push(id),
                    Err(failed) => return failed,
                }
            }
            match self.note_step(contact, files, &ids).await {
                Ok(_) => report,
                Err(failed) => failed,
            }
        })
    }

    fn lookup_with_files<'a>(&'a self, lead: &'a Lead, files: &'a [LeadFile]) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            let found = self.lookup(&lead.external_ref).await;
            if files.is_empty() || !matches!(found, Lookup::Found { .. }) {
                return found;
            }
            let folder = folder_of(&lead.external_ref);
            let mut ids = Vec::with_capacity(files.len());
            for f in files {
                match self.find_file(&folder, &name_at_hubspot(&f.file).0).await {
                    Ok(Some(id)) => ids.push(id),
                    Ok(None) => return Lookup::Absent,
                    Err(_) => return lookup_failed("lookup_files"),
                }
            }
            match self.find_note(&ids.join(";")).await {
                Ok(Some(_)) => found,
                Ok(None) => Lookup::Absent,
                Err(_) => lookup_failed("lookup_note"),
            }
        })
    }

    fn add_note<'a>(&'a self, note: &'a LeadNote) -> BoxFuture<'a, Report> {
        Box::pin(async move { self.add_keyed_note(note).await.unwrap_or_else(|failed| failed) })
    }

    fn find_note<'a>(&'a self, note: &'a LeadNote) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            let holder = self.contact_of(&note.on).await;
            super::find_note_on(
                holder,
                "contact",
                |id| async move { self.find_keyed_note(&id, &note.key).await },
            )
            .await
        })
    }

    fn lookup<'a>(&'a self, external_ref: &'a str) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            let (Some(r), Some(p)) = (encode_segment(external_ref), encode_segment(&self.id_property)) else {
                return lookup_failed("bad_reference");
            };
            let url = format!("{}/crm/v3/objects/contacts/{r}?idProperty={p}", self.base_url);
            let resp = match self.client.send(authorize(self.client.get(url), &self.token)).await {
                Ok(r) => r,
                Err(_) => return lookup_failed("lookup_transport"),
            };
            match resp.status().as_u16() {
                404 => Lookup::Absent,
                200 => match id_of(&resp.json().await.unwrap_or_default(), "id") {
                    Some(provider_ref) => Lookup::Found { provider_ref },
                    None => lookup_failed("lookup_body"),
                },
                s => lookup_failed(format!("lookup_http_{s}")),
            }
        })
    }
}

/// A loopback HTTP server for the adapters' tests: one connection, one canned response.
#[cfg(test)]
pub(super) mod fake {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    use tokio::net::TcpListener;
    use tokio::sync::oneshot;

    /// The request as the server read it: the head (request line and headers) and the body.
    pub struct Received {
        pub head: String,
        pub body: String,
    }

    impl Received {
        pub fn request_line(&self) -> &str {
            self.head.lines().next().unwrap_or_default()
        }

        pub fn header(&self, name: &str) -> Option<&str> {
            let mut headers = self.head.lines().skip(1).filter_map(|l| l.split_once(':'));
            headers.find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim())
        }
    }

    /// Answers `status` (e.g. "201 Created") with `extra` header lines and `body`; returns the base URL.
    pub async fn serve(status: &str, extra: &str, body: &str) -> (String, oneshot::Receiver<Received>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let response = format!("HTTP/1.1 {status}\r\n{extra}content-length: {}\r\n\r\n{body}", body.len());
        let (tx, rx) = oneshot::channel();
        tokio::spawn(async move {
            let mut sock = BufReader::new(listener.accept().await.unwrap().0);
            let mut head = String::new();
            while !head.ends_with("\r\n\r\n") {
                assert!(sock.read_line(&mut head).await.unwrap() > 0, "request cut short");
            }
            let mut got = Received { head, body: String::new() };
            let mut body = vec![0; got.header("content-length").map_or(0, |v| v.parse().unwrap())];
            sock.read_exact(&mut body).await.unwrap();
            got.body = String::from_utf8(body).unwrap();
            sock.write_all(response.as_bytes()).await.unwrap();
            let _ = tx.send(got);
        });
        (base, rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REF: &str = "0193-ab:crm_lead:0";

    fn hubspot(base: String) -> Hubspot {
        Hubspot::new(
            base,
            "onceform_ref".into(),
            Some(Secret("tok".into())),
            Reach::Public,
            Duration::from_secs(5),
        )
        .unwrap()
    }

    async fn upsert(status: &str, body: &str) -> (Report, fake::Received) {
        let (base, rx) = fake::serve(status, "", body).await;
        let lead = Lead { external_ref: REF.into(), fields: [("email".into(), "a@b.c".into())].into() };
        (hubspot(base).create(&lead).await, rx.await.unwrap())
    }

    const UPSERTED: &str = r#"{"status":"COMPLETE","results":[{"id":"901","new":true,"archived":false,
        "properties":{},"createdAt":"2026-12-01T00:00:00Z","updatedAt":"2026-12-01T00:00:00Z"}],
        "startedAt":"2026-12-01T00:00:00Z","completedAt":"2026-12-01T00:00:00Z"}"#;

    #[tokio::test]
    async fn upsert_sends_one_input_by_id_property_and_returns_the_contact_id() {
        let (report, got) = upsert("200 OK", UPSERTED).await;
        assert_eq!(report, Report::sent("901").with_http(200));
        assert_eq!(got.request_line(), "POST /crm/v3/objects/contacts/batch/upsert HTTP/1.1");
        assert_eq!(got.header("authorization"), Some("Bearer tok"));
        assert_eq!(got.header("content-type"), Some("application/json"));
        let body: Value = serde_json::from_str(&got.body).unwrap();
        let input = json!({"idProperty": "onceform_ref", "id": REF,
                           "properties": {"email": "a@b.c", "onceform_ref": REF}});
        assert_eq!(body, json!({ "inputs": [input] }));
    }

    #[test]
    fn the_adapter_is_an_idempotent_upsert_with_lookup() {
        let caps = hubspot("http://127.0.0.1:9".into()).capabilities();
        assert_eq!(caps, Capabilities { idempotent_upsert: true, lookup: true, notes: true });
    }

    #[tokio::test]
    async fn conflict_409_another_contact_has_the_email_is_permanent() {
        let body = r#"{"status":"error","message":"Contact already exists. Existing ID: 12345","correlationId":"c","category":"CONFLICT"}"#;
        let want = Report::failed(Outcome::Permanent, "contact_exists").with_http(409);
        assert_eq!(upsert("409 Conflict", body).await.0, want);
    }

    #[tokio::test]
    async fn a_207_with_an_error_takes_the_error_s_own_status() {
        let body = r#"{"status":"COMPLETE","results":[],"numErrors":1,"errors":[{"status":"error",
            "category":"VALIDATION_ERROR","message":"bad","context":{},"errors":[],"links":{}}],
            "startedAt":"2026-12-01T00:00:00Z","completedAt":"2026-12-01T00:00:00Z"}"#;
        let said = Some("VALIDATION_ERROR: bad".to_string());
        let want = Report::failed(Outcome::Permanent, "hubspot_batch_error")
            .with_http(207)
            .with_detail(said.clone());
        assert_eq!(upsert("207 Multi-Status", body).await.0, want);
        let busy = body.replace(r#""status":"error""#, r#""status":"503""#);
        let want = Report::failed(Outcome::Ambiguous, "hubspot_503").with_http(207).with_detail(said);
        assert_eq!(upsert("207 Multi-Status", &busy).await.0, want);
    }

    #[tokio::test]
    async fn a_200_without_a_result_is_ambiguous() {
        let want = Report::failed(Outcome::Ambiguous, "hubspot_no_result").with_http(200);
        assert_eq!(upsert("200 OK", r#"{"status":"COMPLETE","results":[]}"#).await.0, want);
    }

    #[tokio::test]
    async fn validation_error_400_is_permanent() {
        let body = r#"{"status":"error","message":"Property values were not valid","correlationId":"c","category":"VALIDATION_ERROR"}"#;
        let want = Report::failed(Outcome::Permanent, "http_400")
            .with_http(400)
            .with_detail(Some("VALIDATION_ERROR: Property values were not valid".into()));
        assert_eq!(upsert("400 Bad Request", body).await.0, want);
    }

    #[tokio::test]
    async fn lookup_200_is_found_by_id_property() {
        let (base, rx) = fake::serve("200 OK", "", r#"{"id":"901","properties":{}}"#).await;
        assert_eq!(hubspot(base).lookup(REF).await, Lookup::Found { provider_ref: "901".into() });
        let got = rx.await.unwrap();
        let path = "/crm/v3/objects/contacts/0193-ab%3Acrm_lead%3A0?idProperty=onceform_ref";
        assert_eq!(got.request_line(), format!("GET {path} HTTP/1.1"));
        assert_eq!(got.header("authorization"), Some("Bearer tok"));
    }

    #[tokio::test]
    async fn lookup_404_is_absent() {
        let (base, _rx) = fake::serve("404 Not Found", "", r#"{"message":"not found"}"#).await;
        assert_eq!(hubspot(base).lookup(REF).await, Lookup::Absent);
    }
}
