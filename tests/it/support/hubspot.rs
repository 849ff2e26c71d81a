//! A loopback HubSpot that holds requests to HubSpot's own description of the CRM v3 contacts
//! API and refuses anything else the way HubSpot does (an `Error` body, its status).
//!
//! Where each rule comes from:
//! - [spec] HubSpot's OpenAPI description, `HubSpot/HubSpot-public-api-spec-collection`,
//!   `PublicApiSpecs/CRM/Contacts/Rollouts/424/v3/contacts.json` (paths, parameters, schemas
//!   `BatchInputSimplePublicObjectBatchInputUpsert`, `SimplePublicObjectBatchInputUpsert`,
//!   `BatchResponseSimplePublicUpsertObject`, `SimplePublicObjectWithAssociations`, `Error`).
//! - [auth] the same description's security (OAuth2 / private apps, scopes
//!   `crm.objects.contacts.write` for the upsert and `.read` for the read) and HubSpot's API
//!   reference, whose every example sends `Authorization: Bearer <token>`.
//! - [docs] HubSpot's API reference for contacts: "Read-only and non-existent properties will
//!   result in an error"; `email` is the contacts' unique identifier; batch inputs are limited
//!   to 100.
//! - [files] HubSpot's files guide, "Upload a file": `POST /files/v3/files`, multipart/form-data
//!   with `file` (required), `options` (JSON whose `access` is required), and either
//!   `folderId` or `folderPath` (not both); optional `fileName`, `charsetHunch`; 201 with the
//!   `File` (`id`, `name` without its extension, `extension`, `path`, `size`, `type`,
//!   `access`, …). `GET /files/v3/files/search` with `name` among its parameters, answering a
//!   `CollectionResponseFile` (`results`). Scope `files`.
//! - [notes] HubSpot's notes guide: `POST /crm/v3/objects/notes` with `properties`
//!   (`hs_timestamp` required, `hs_note_body`, `hs_attachment_ids` the file IDs separated by
//!   `;`) and `associations` (`to.id`, `types` of `{associationCategory, associationTypeId}`,
//!   202 = note to contact; a body of at most 65,536 characters); `POST
//!   /crm/v3/objects/notes/search` with `filterGroups` of
//!   `filters` (`propertyName`, `operator`, `value`).
//! - [search] HubSpot's CRM search guide: `POST /crm/v3/objects/{object}/search`; filters on
//!   a property, or on associations (`associations.contact` EQ a contact's ID, the records
//!   associated with it); `properties` names what each result returns; `limit` up to 200
//!   (a larger one is a 400 `VALIDATION_ERROR`); at most 5 filter groups of at most 6
//!   filters; results `{id, properties, createdAt, updatedAt, archived}` with `total`.
//! - [seen] error bodies HubSpot returns, as quoted in HubSpot's SDK issues: `CONFLICT`
//!   "Contact already exists. Existing ID: N" (hubspot-api-python#51), "Unable to perform
//!   update/upsert by non-unique 0-1 property" (hubspot-api-nodejs#548).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use tokio::net::TcpListener;

use super::crm::Fault;
use super::vendor::{serve, Reply, Request, TOKEN};

/// The portal's contact properties; `onceform_ref` is the custom one with unique values.
const PROPERTIES: &[&str] =
    &["email", "firstname", "lastname", "company", "phone", "message", "onceform_ref"];
const UNIQUE: &[&str] = &["onceform_ref"];
const NOW: &str = "2026-12-01T00:00:00.000Z";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contact {
    pub id: String,
    pub properties: BTreeMap<String, String>,
}

/// A file in the file manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubFile {
    pub id: String,
    /// Without its extension, as HubSpot keeps it.
    pub name: String,
    pub extension: String,
    pub path: String,
    pub access: String,
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// A note and what it is attached to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub id: String,
    pub body: String,
    pub attachment_ids: Vec<String>,
    /// The contacts it is associated with.
    pub contacts: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Inner {
    pub contacts: Vec<Contact>,
    pub files: Vec<HubFile>,
    pub notes: Vec<Note>,
    pub faults: VecDeque<Fault>,
    /// Faults of the next file uploads (apart from the contacts' `faults`).
    pub upload_faults: VecDeque<Fault>,
    /// Faults of the next notes created.
    pub note_faults: VecDeque<Fault>,
    /// Note creations that passed validation (faulted ones included).
    pub note_creates: usize,
    /// File uploads that passed validation (faulted ones included).
    pub uploads: usize,
    /// Upserts that passed validation (faulted ones included).
    pub upserts: usize,
    pub lookups: usize,
    /// Each refused request's rule, e.g. `auth`, `schema: inputs[0].id`.
    pub refused: Vec<String>,
}

#[derive(Clone)]
pub struct FakeHubspot {
    pub url: String,
    pub state: Arc<Mutex<Inner>>,
}

impl FakeHubspot {
    pub async fn start() -> FakeHubspot {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state: Arc<Mutex<Inner>> = Arc::default();
        let s = state.clone();
        serve(listener, move |req| handle(s.clone(), req));
        FakeHubspot { url, state }
    }

    pub fn push_fault(&self, fault: Fault) {
        self.state.lock().unwrap().faults.push_back(fault);
    }

    pub fn contacts(&self) -> Vec<Contact> {
        self.state.lock().unwrap().contacts.clone()
    }

    pub fn upserts(&self) -> usize {
        self.state.lock().unwrap().upserts
    }

    pub fn refused(&self) -> Vec<String> {
        self.state.lock().unwrap().refused.clone()
    }

    pub fn push_upload_fault(&self, fault: Fault) {
        self.state.lock().unwrap().upload_faults.push_back(fault);
    }

    pub fn files(&self) -> Vec<HubFile> {
        self.state.lock().unwrap().files.clone()
    }

    pub fn notes(&self) -> Vec<Note> {
        self.state.lock().unwrap().notes.clone()
    }

    pub fn push_note_fault(&self, fault: Fault) {
        self.state.lock().unwrap().note_faults.push_back(fault);
    }

    pub fn note_creates(&self) -> usize {
        self.state.lock().unwrap().note_creates
    }

    pub fn uploads(&self) -> usize {
        self.state.lock().unwrap().uploads
    }
}

/// HubSpot's `Error` body [spec]: `message`, `correlationId`, `category` required.
fn error(status: u16, category: &str, message: &str) -> Reply {
    let body = json!({"status": "error", "message": message,
                      "correlationId": uuid::Uuid::new_v4().to_string(), "category": category});
    Some((status, String::new(), body.to_string()))
}

async fn handle(state: Arc<Mutex<Inner>>, req: Request) -> Reply {
    let path: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    let route = match (req.method.as_str(), path.as_slice()) {
        ("POST", ["crm", "v3", "objects", "contacts", "batch", "upsert"]) => Route::Upsert,
        ("GET", ["crm", "v3", "objects", "contacts", id]) if !id.is_empty() => Route::Read(id.to_string()),
        ("POST", ["files", "v3", "files"]) => Route::Upload,
        ("GET", ["files", "v3", "files", "search"]) => Route::FileSearch,
        ("POST", ["crm", "v3", "objects", "notes"]) => Route::Note,
        ("POST", ["crm", "v3", "objects", "notes", "search"]) => Route::NoteSearch,
        // [spec] only the described operations exist.
        _ => return refuse(&state, "route", error(404, "OBJECT_NOT_FOUND", "resource not found")),
    };
    // [auth] a private app's access token as a bearer token.
    if req.bearer() != Some(TOKEN) {
        let message = "Authentication credentials not found. This API supports OAuth 2.0 authentication.";
        return refuse(&state, "auth", error(401, "INVALID_AUTHENTICATION", message));
    }
    match route {
        Route::Upsert => upsert(&state, &req).await,
        Route::Read(id) => read(&state, &req, &id),
        Route::Upload => upload(&state, &req).await,
        Route::FileSearch => file_search(&state, &req),
        Route::Note => note(&state, &req).await,
        Route::NoteSearch => note_search(&state, &req),
    }
}

/// Records which rule refused a request, and answers with `reply`.
fn refuse(state: &Arc<Mutex<Inner>>, rule: &str, reply: Reply) -> Reply {
    state.lock().unwrap().refused.push(rule.to_string());
    reply
}

enum Route {
    Upsert,
    Read(String),
    Upload,
    FileSearch,
    Note,
    NoteSearch,
}

/// [files] the file's accessibility.
const ACCESS: &[&str] = &[
    "PUBLIC_INDEXABLE",
    "PUBLIC_NOT_INDEXABLE",
    "HIDDEN_INDEXABLE",
    "HIDDEN_NOT_INDEXABLE",
    "HIDDEN_PRIVATE",
    "PRIVATE",
    "HIDDEN_SENSITIVE",
    "SENSITIVE",
];

/// `POST /files/v3/files` [files].
async fn upload(state: &Arc<Mutex<Inner>>, req: &Request) -> Reply {
    let Some(parts) = super::vendor::multipart(req) else {
        return refuse(state, "upload: multipart", error(415, "VALIDATION_ERROR", "Unsupported media type"));
    };
    let known = ["file", "fileName", "folderId", "folderPath", "options", "charsetHunch"];
    if let Some(p) = parts.iter().find(|p| !known.contains(&p.name.as_str())) {
        let rule = format!("upload: part {}", p.name);
        return refuse(state, &rule, error(400, "VALIDATION_ERROR", "Unrecognized field"));
    }
    let text = |name: &str| {
        parts.iter().find(|p| p.name == name).map(|p| String::from_utf8_lossy(&p.body).into_owned())
    };
    let Some(file) = parts.iter().find(|p| p.name == "file" && p.filename.is_some()) else {
        return refuse(state, "upload: file", error(400, "VALIDATION_ERROR", "file is required"));
    };
    let options: Value = text("options").and_then(|o| serde_json::from_str(&o).ok()).unwrap_or_default();
    let access = options["access"].as_str().unwrap_or_default().to_string();
    if !ACCESS.contains(&access.as_str()) {
        return refuse(
            state,
            "upload: options.access",
            error(400, "VALIDATION_ERROR", "options.access is required"),
        );
    }
    let folder = match (text("folderId"), text("folderPath")) {
        (None, Some(path)) if path.starts_with('/') => path,
        (Some(_), None) => {
            return refuse(state, "upload: folderId", error(404, "OBJECT_NOT_FOUND", "folder not found"))
        }
        _ => {
            let message = "Either folderId or folderPath must be provided, but not both";
            return refuse(state, "upload: folder", error(400, "VALIDATION_ERROR", message));
        }
    };
    let file_name = text("fileName").or_else(|| file.filename.clone()).unwrap_or_default();
    let (name, extension) = match file_name.rsplit_once('.') {
        Some((n, e)) => (n.to_string(), e.to_string()),
        None => (file_name.clone(), String::new()),
    };
    let fault = {
        let mut s = state.lock().unwrap();
        s.uploads += 1;
        s.upload_faults.pop_front()
    };
    if let Some(Fault::Status(status)) = fault {
        return error(status, "INTERNAL_ERROR", "injected");
    }
    let stored = {
        let mut s = state.lock().unwrap();
        let stored = HubFile {
            id: (s.files.len() + 180_000_001).to_string(),
            name,
            extension,
            path: format!("{}/{file_name}", folder.trim_end_matches('/')),
            access,
            content_type: file.content_type.clone().unwrap_or_default(),
            bytes: file.body.clone(),
        };
        s.files.push(stored.clone());
        stored
    };
    let answer = Some((201, String::new(), file_json(&stored).to_string()));
    match fault {
        Some(Fault::DropAfterCreate) => None,
        Some(Fault::SlowAfterCreate(d)) => {
            tokio::time::sleep(d).await;
            answer
        }
        _ => answer,
    }
}

/// [files] the `File` schema.
fn file_json(f: &HubFile) -> Value {
    json!({"id": f.id, "name": f.name, "extension": f.extension, "path": f.path, "size": f.bytes.len(),
           "type": "OTHER", "access": f.access, "archived": false, "createdAt": NOW, "updatedAt": NOW,
           "isUsableInContent": true})
}

/// `GET /files/v3/files/search` [files]: by `name` here (other parameters are taken and ignored).
fn file_search(state: &Arc<Mutex<Inner>>, req: &Request) -> Reply {
    let s = state.lock().unwrap();
    let results: Vec<Value> =
        s.files.iter().filter(|f| req.query("name").is_none_or(|n| n == f.name)).map(file_json).collect();
    Some((200, String::new(), json!({ "results": results }).to_string()))
}

/// `POST /crm/v3/objects/notes` [notes], with the next note fault.
async fn note(state: &Arc<Mutex<Inner>>, req: &Request) -> Reply {
    let (answer, fault) = match create_note(state, req) {
        Ok(done) => done,
        Err(refused) => return refused,
    };
    match fault {
        Some(Fault::DropAfterCreate) => None,
        Some(Fault::SlowAfterCreate(d)) => {
            tokio::time::sleep(d).await;
            answer
        }
        _ => answer,
    }
}

/// The note stored, and its answer; or the refusal (validation, a status fault).
fn create_note(state: &Arc<Mutex<Inner>>, req: &Request) -> Result<(Reply, Option<Fault>), Reply> {
    if !req.is_json() {
        return Err(refuse(
            state,
            "note: content-type",
            error(415, "VALIDATION_ERROR", "Unsupported media type"),
        ));
    }
    let body: Value = serde_json::from_slice(&req.body).unwrap_or_default();
    let props = &body["properties"];
    if props["hs_timestamp"].as_str().is_none_or(str::is_empty) {
        return Err(refuse(
            state,
            "note: hs_timestamp",
            error(400, "VALIDATION_ERROR", "hs_timestamp is required"),
        ));
    }
    // [notes] a note's body holds at most 65,536 characters.
    if props["hs_note_body"].as_str().is_some_and(|b| b.chars().count() > 65_536) {
        return Err(refuse(
            state,
            "note: hs_note_body",
            error(400, "VALIDATION_ERROR", "hs_note_body is too long"),
        ));
    }
    let mut s = state.lock().unwrap();
    let ids: Vec<String> = props["hs_attachment_ids"]
        .as_str()
        .unwrap_or_default()
        .split(';')
        .filter(|i| !i.is_empty())
        .map(String::from)
        .collect();
    if let Some(unknown) = ids.iter().find(|i| !s.files.iter().any(|f| &f.id == *i)) {
        let message = format!("file {unknown} does not exist");
        drop(s);
        return Err(refuse(state, "note: hs_attachment_ids", error(400, "VALIDATION_ERROR", &message)));
    }
    let mut contacts = Vec::new();
    for a in body["associations"].as_array().cloned().unwrap_or_default() {
        let to = a["to"]["id"]
            .as_str()
            .map(String::from)
            .or_else(|| a["to"]["id"].as_u64().map(|n| n.to_string()));
        let typed = a["types"].as_array().is_some_and(|t| {
            t.iter().any(|t| t["associationCategory"] == "HUBSPOT_DEFINED" && t["associationTypeId"] == 202)
        });
        match to {
            Some(id) if typed && s.contacts.iter().any(|c| c.id == id) => contacts.push(id),
            _ => {
                drop(s);
                return Err(refuse(
                    state,
                    "note: association",
                    error(400, "VALIDATION_ERROR", "invalid association"),
                ));
            }
        }
    }
    s.note_creates += 1;
    let fault = s.note_faults.pop_front();
    match fault {
        Some(Fault::Status(status)) => return Err(error(status, "INTERNAL_ERROR", "injected")),
        Some(Fault::RateLimited(secs)) => {
            let reply = error(429, "RATE_LIMITS", "You have reached your secondly limit.")
                .map(|(status, _, body)| (status, format!("retry-after: {secs}\r\n"), body));
            return Err(reply);
        }
        _ => {}
    }
    let note = Note {
        id: (s.notes.len() + 7001).to_string(),
        body: props["hs_note_body"].as_str().unwrap_or_default().to_string(),
        attachment_ids: ids,
        contacts,
    };
    s.notes.push(note.clone());
    drop(s);
    let out = json!({"id": note.id, "properties": {"hs_attachment_ids": note.attachment_ids.join(";"),
                     "hs_note_body": note.body}, "archived": false, "createdAt": NOW, "updatedAt": NOW});
    Ok((Some((201, String::new(), out.to_string())), fault))
}

/// `POST /crm/v3/objects/notes/search` [notes] [search]: `EQ` on `hs_attachment_ids`, or on
/// `associations.contact`, as the adapter asks (one filter); `limit` and groups checked.
fn note_search(state: &Arc<Mutex<Inner>>, req: &Request) -> Reply {
    if !req.is_json() {
        return refuse(
            state,
            "note search: content-type",
            error(415, "VALIDATION_ERROR", "Unsupported media type"),
        );
    }
    let body: Value = serde_json::from_slice(&req.body).unwrap_or_default();
    if body["limit"].as_u64().is_some_and(|l| l > 200) {
        return refuse(
            state,
            "note search: limit",
            error(400, "VALIDATION_ERROR", "limit must be at most 200"),
        );
    }
    let groups = body["filterGroups"].as_array().cloned().unwrap_or_default();
    if groups.len() > 5 || groups.iter().any(|g| g["filters"].as_array().is_some_and(|f| f.len() > 6)) {
        return refuse(state, "note search: filters", error(400, "VALIDATION_ERROR", "too many filters"));
    }
    let filter = &body["filterGroups"][0]["filters"][0];
    let value = filter["value"].as_str().unwrap_or_default().to_string();
    let by_attachments = match (filter["propertyName"].as_str(), filter["operator"].as_str()) {
        (Some("hs_attachment_ids"), Some("EQ")) => true,
        (Some("associations.contact"), Some("EQ")) => false,
        _ => {
            return refuse(state, "note search: filter", error(400, "VALIDATION_ERROR", "unsupported filter"))
        }
    };
    let wanted: Vec<String> = body["properties"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p.as_str().map(String::from))
        .collect();
    let s = state.lock().unwrap();
    let results: Vec<Value> = s
        .notes
        .iter()
        .filter(|n| match by_attachments {
            true => n.attachment_ids.join(";") == value,
            false => n.contacts.contains(&value),
        })
        .map(|n| {
            let mut properties = Map::new();
            properties.insert("hs_object_id".into(), json!(n.id));
            if wanted.iter().any(|p| p == "hs_attachment_ids") {
                properties.insert("hs_attachment_ids".into(), json!(n.attachment_ids.join(";")));
            }
            if wanted.iter().any(|p| p == "hs_note_body") {
                properties.insert("hs_note_body".into(), json!(n.body));
            }
            json!({"id": n.id, "properties": properties, "archived": false, "createdAt": NOW, "updatedAt": NOW})
        })
        .collect();
    Some((200, String::new(), json!({"total": results.len(), "results": results}).to_string()))
}

/// `POST /crm/v3/objects/contacts/batch/upsert`.
async fn upsert(state: &Arc<Mutex<Inner>>, req: &Request) -> Reply {
    // [spec] requestBody: `application/json`, required.
    if !req.is_json() {
        return refuse(state, "content-type", error(415, "VALIDATION_ERROR", "Unsupported media type"));
    }
    let input = match validate_upsert(&req.body) {
        Ok(input) => input,
        Err((rule, status, category, message)) => {
            return refuse(state, &rule, error(status, category, &message))
        }
    };
    let fault = {
        let mut s = state.lock().unwrap();
        s.upserts += 1;
        s.faults.pop_front()
    };
    match fault {
        Some(Fault::Status(status)) => return error(status, "INTERNAL_ERROR", "injected"),
        Some(Fault::RateLimited(secs)) => {
            let mut reply = error(429, "RATE_LIMITS", "You have reached your secondly limit.")?;
            reply.1 = format!("retry-after: {secs}\r\n");
            return Some(reply);
        }
        _ => {}
    }
    let answer = apply(state, input);
    match fault {
        Some(Fault::DropAfterCreate) => None,
        Some(Fault::SlowAfterCreate(d)) => {
            tokio::time::sleep(d).await;
            answer
        }
        _ => answer,
    }
}

/// One validated `SimplePublicObjectBatchInputUpsert`.
struct Input {
    id_property: String,
    id: String,
    properties: BTreeMap<String, String>,
}

type Refusal = (String, u16, &'static str, String);

fn invalid(rule: &str, message: &str) -> Refusal {
    (format!("schema: {rule}"), 400, "VALIDATION_ERROR", message.to_string())
}

/// [spec] `BatchInputSimplePublicObjectBatchInputUpsert`: `inputs` (array) required; each
/// input `id` (string) and `properties` (object of strings) required, `idProperty` and
/// `objectWriteTraceId` strings. The fake takes one input, as the adapter sends.
fn validate_upsert(body: &[u8]) -> Result<Input, Refusal> {
    let body: Value = serde_json::from_slice(body).map_err(|_| invalid("json", "Invalid input JSON"))?;
    let inputs = body["inputs"].as_array().ok_or_else(|| invalid("inputs", "inputs is required"))?;
    if inputs.len() > 100 {
        return Err(invalid("inputs", "Batch size exceeds 100")); // [docs]
    }
    let [input] = inputs.as_slice() else { return Err(invalid("inputs", "one input per lead")) };
    let input = input.as_object().ok_or_else(|| invalid("inputs[0]", "input must be an object"))?;
    for (key, value) in input {
        let known = ["id", "idProperty", "objectWriteTraceId", "properties"].contains(&key.as_str());
        if !known {
            return Err(invalid(&format!("inputs[0].{key}"), "Unrecognized field"));
        }
        if key != "properties" && !value.is_string() {
            return Err(invalid(&format!("inputs[0].{key}"), "must be a string"));
        }
    }
    let id =
        input.get("id").and_then(Value::as_str).ok_or_else(|| invalid("inputs[0].id", "id is required"))?;
    let properties: &Map<String, Value> = input
        .get("properties")
        .and_then(Value::as_object)
        .ok_or_else(|| invalid("inputs[0].properties", "properties is required"))?;
    // [spec] `idProperty`: "a property whose values are unique for this object"; [seen] a
    // non-unique one is refused. Without it, `id` is HubSpot's own record ID, which a new
    // lead cannot know.
    let id_property = input.get("idProperty").and_then(Value::as_str).unwrap_or("hs_object_id");
    if !UNIQUE.contains(&id_property) {
        let message = format!("Unable to perform update/upsert by non-unique 0-1 property {id_property}");
        return Err(invalid("inputs[0].idProperty", &message));
    }
    let mut props = BTreeMap::new();
    for (name, value) in properties {
        // [docs] non-existent properties are an error; [spec] values are strings.
        if !PROPERTIES.contains(&name.as_str()) {
            let message = format!("Property values were not valid: Property \"{name}\" does not exist");
            return Err((format!("property {name}"), 400, "VALIDATION_ERROR", message));
        }
        let value =
            value.as_str().ok_or_else(|| invalid(&format!("properties.{name}"), "must be a string"))?;
        props.insert(name.clone(), value.to_string());
    }
    Ok(Input { id_property: id_property.to_string(), id: id.to_string(), properties: props })
}

/// Updates the contact whose unique property holds `id`, else creates one carrying it.
/// [docs] a new contact whose email another contact has is a `CONFLICT`.
fn apply(state: &Arc<Mutex<Inner>>, input: Input) -> Reply {
    let mut s = state.lock().unwrap();
    let existing = s.contacts.iter().position(|c| c.properties.get(&input.id_property) == Some(&input.id));
    let (index, new) = match existing {
        Some(i) => (i, false),
        None => {
            let email = input.properties.get("email");
            let clash = s.contacts.iter().find(|c| email.is_some() && c.properties.get("email") == email);
            if let Some(other) = clash {
                return error(409, "CONFLICT", &format!("Contact already exists. Existing ID: {}", other.id));
            }
            let id = (s.contacts.len() + 901).to_string();
            let mut properties = BTreeMap::new();
            properties.insert(input.id_property.clone(), input.id.clone());
            s.contacts.push(Contact { id, properties });
            (s.contacts.len() - 1, true)
        }
    };
    let contact = &mut s.contacts[index];
    contact.properties.extend(input.properties);
    // [spec] `BatchResponseSimplePublicUpsertObject` with one `SimplePublicUpsertObject`.
    let result = json!({"id": contact.id, "new": new, "archived": false, "properties": contact.properties,
                        "createdAt": NOW, "updatedAt": NOW});
    let body = json!({"status": "COMPLETE", "results": [result], "startedAt": NOW, "completedAt": NOW});
    Some((200, String::new(), body.to_string()))
}

/// `GET /crm/v3/objects/contacts/{contactId}` [spec]: query parameters `archived`,
/// `associations`, `idProperty`, `properties`, `propertiesWithHistory`; 404 when absent.
fn read(state: &Arc<Mutex<Inner>>, req: &Request, id: &str) -> Reply {
    const PARAMS: &[&str] =
        &["archived", "associations", "idProperty", "properties", "propertiesWithHistory"];
    if let Some((k, _)) = req.query.iter().find(|(k, _)| !PARAMS.contains(&k.as_str())) {
        return refuse(
            state,
            &format!("query {k}"),
            error(400, "VALIDATION_ERROR", &format!("Unknown parameter {k}")),
        );
    }
    let by = req.query("idProperty").unwrap_or("hs_object_id");
    if by != "hs_object_id" && !UNIQUE.contains(&by) {
        let message = format!("Unable to perform lookup by non-unique property {by}");
        return refuse(state, "query idProperty", error(400, "VALIDATION_ERROR", &message));
    }
    let mut s = state.lock().unwrap();
    s.lookups += 1;
    let found = s.contacts.iter().find(|c| match by {
        "hs_object_id" => c.id == id,
        p => c.properties.get(p).map(String::as_str) == Some(id),
    });
    match found {
        // [spec] `SimplePublicObjectWithAssociations`.
        Some(c) => {
            let body = json!({"id": c.id, "properties": c.properties, "archived": false,
                              "createdAt": NOW, "updatedAt": NOW});
            Some((200, String::new(), body.to_string()))
        }
        None => error(404, "OBJECT_NOT_FOUND", "Object not found.  objectId are usually numeric."),
    }
}
