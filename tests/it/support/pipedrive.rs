//! A loopback Pipedrive holding requests to Pipedrive's API reference (the OpenAPI
//! descriptions its official clients are generated from, `pipedrive/client-nodejs`) and its
//! developer docs, refusing anything else the way Pipedrive does.
//!
//! Where each rule comes from:
//! - [auth] every operation's security: an API token (`x-api-token` header, or the
//!   `api_token` query parameter of the docs' examples) or an OAuth2 bearer token; else 401
//!   `{"success": false, "error": "unauthorized access", "errorCode": 401, "error_info": …}`.
//! - [rate] "Rate limiting": every answer carries `x-ratelimit-limit`, `x-ratelimit-remaining`,
//!   `x-ratelimit-reset` (seconds left in the 2-second window); over it, 429 with a
//!   `{"success": false, "error": "Request over limit"}` body.
//! - [search] `GET /api/v2/itemSearch`: `term` required (at least 2 characters, or 1 with
//!   `exact_match`), `item_types` among deal, person, organization, product, lead, file,
//!   mail_attachment, project; `fields` among those the item types have (a lead: custom_fields,
//!   notes, title); `exact_match` matches the whole value, not case-sensitive; `limit` ≤ 100;
//!   answers `{success, data: {items: [{result_score, item: {id, type, title, …}}]}}`.
//!   `GET /api/v2/persons/search` the same for persons (`fields`: custom_fields, email, notes,
//!   phone, name).
//! - [person] `POST /api/v2/persons` (`AddPersonRequest`): `name`, `emails` / `phones` as
//!   arrays of `{value, primary, label}`; answers `{success, data: {id, name, emails, phones}}`.
//! - [lead] `POST /api/v1/leads` (`AddLeadRequest`): `title` required; "a lead always has to be
//!   linked to a person or an organization or both" (`person_id` of an existing person);
//!   custom fields by their 40-character keys, the deals' fields; answers 201
//!   `{success, data: {id (UUID), title, person_id, …, custom fields}}`.
//! - [fields] a custom field of type Text (`varchar`) holds at most 255 characters, as do a
//!   person's name and a lead's title.
//! - [notes] `POST /api/v1/notes` (`AddNoteRequest`): `content` required (HTML), and at least
//!   one of `lead_id` (a lead's UUID), `deal_id`, `person_id`, `org_id`, `project_id` of an
//!   existing item; answers `{success, data: {id, content, lead_id, …}}`. `GET /api/v1/notes`
//!   with `lead_id`, `start`, `limit` (at most 500) answers `{success, data: [notes],
//!   additional_data: {pagination}}`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use tokio::net::TcpListener;

use super::crm::Fault;
use super::vendor::{serve, Reply, Request, TOKEN};

/// The deals' (and so the leads') custom fields: the reference and a message, both Text.
pub const REFERENCE_KEY: &str = "9dc80c50d78a15f9c11d9c9e8d5d4c4b8f2a6c31";
pub const MESSAGE_KEY: &str = "3f1e6c2b7a9d4e8f0b5c1a2d3e4f5a6b7c8d9e0f";
const CUSTOM: &[&str] = &[REFERENCE_KEY, MESSAGE_KEY];
const LEAD_KEYS: &[&str] = &[
    "title",
    "owner_id",
    "label_ids",
    "person_id",
    "organization_id",
    "value",
    "expected_close_date",
    "visible_to",
    "was_seen",
    "origin_id",
    "channel",
    "channel_id",
];
const PERSON_KEYS: &[&str] = &[
    "name",
    "owner_id",
    "org_id",
    "emails",
    "phones",
    "visible_to",
    "label_ids",
    "marketing_status",
    "custom_fields",
];
const TEXT_MAX: usize = 255;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    pub id: i64,
    pub name: String,
    pub emails: Vec<String>,
    pub phones: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LeadRecord {
    pub id: String,
    pub title: String,
    pub person_id: i64,
    pub custom: BTreeMap<String, String>,
}

/// A note and the lead it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteRecord {
    pub id: i64,
    pub content: String,
    pub lead_id: String,
}

#[derive(Debug, Default)]
pub struct Inner {
    pub persons: Vec<Person>,
    pub leads: Vec<LeadRecord>,
    pub notes: Vec<NoteRecord>,
    /// Faults of the next note creates.
    pub note_faults: VecDeque<Fault>,
    pub note_creates: usize,
    /// Faults of the next lead creates.
    pub faults: VecDeque<Fault>,
    /// Lead creates that passed validation (faulted ones included).
    pub lead_creates: usize,
    pub person_creates: usize,
    pub searches: usize,
    /// Each refused request's rule.
    pub refused: Vec<String>,
}

#[derive(Clone)]
pub struct FakePipedrive {
    pub url: String,
    pub state: Arc<Mutex<Inner>>,
}

impl FakePipedrive {
    pub async fn start() -> FakePipedrive {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state: Arc<Mutex<Inner>> = Arc::default();
        let s = state.clone();
        serve(listener, move |req| handle(s.clone(), req));
        FakePipedrive { url, state }
    }

    pub fn push_fault(&self, fault: Fault) {
        self.state.lock().unwrap().faults.push_back(fault);
    }

    pub fn leads(&self) -> Vec<LeadRecord> {
        self.state.lock().unwrap().leads.clone()
    }

    pub fn persons(&self) -> Vec<Person> {
        self.state.lock().unwrap().persons.clone()
    }

    pub fn lead_creates(&self) -> usize {
        self.state.lock().unwrap().lead_creates
    }

    pub fn refused(&self) -> Vec<String> {
        self.state.lock().unwrap().refused.clone()
    }

    pub fn notes(&self) -> Vec<NoteRecord> {
        self.state.lock().unwrap().notes.clone()
    }

    pub fn note_creates(&self) -> usize {
        self.state.lock().unwrap().note_creates
    }

    pub fn push_note_fault(&self, fault: Fault) {
        self.state.lock().unwrap().note_faults.push_back(fault);
    }
}

/// [rate] the headers of every answer.
const RATE: &str = "x-ratelimit-limit: 40\r\nx-ratelimit-remaining: 39\r\nx-ratelimit-reset: 2\r\n";

fn ok(status: u16, data: Value) -> Reply {
    Some((status, RATE.to_string(), json!({"success": true, "data": data}).to_string()))
}

fn fail(status: u16, error: &str) -> Reply {
    let body = json!({"success": false, "error": error, "errorCode": status,
                      "error_info": "Please check developers.pipedrive.com for more information about Pipedrive API."});
    Some((status, RATE.to_string(), body.to_string()))
}

fn refuse(state: &Arc<Mutex<Inner>>, rule: &str, reply: Reply) -> Reply {
    state.lock().unwrap().refused.push(rule.to_string());
    reply
}

/// [auth]
fn authorized(req: &Request) -> bool {
    req.header("x-api-token") == Some(TOKEN)
        || req.query("api_token") == Some(TOKEN)
        || req.bearer() == Some(TOKEN)
}

async fn handle(state: Arc<Mutex<Inner>>, req: Request) -> Reply {
    let path: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    if !authorized(&req) {
        return refuse(&state, "auth", fail(401, "unauthorized access"));
    }
    match (req.method.as_str(), path.as_slice()) {
        ("GET", ["api", "v2", "itemSearch"]) => search(&state, &req, None),
        ("GET", ["api", "v2", "persons", "search"]) => search(&state, &req, Some("person")),
        ("POST", ["api", "v2", "persons"]) => add_person(&state, &req),
        ("POST", ["api", "v1", "leads"]) => add_lead(&state, &req).await,
        ("POST", ["api", "v1", "notes"]) => add_note(&state, &req).await,
        ("GET", ["api", "v1", "notes"]) => notes(&state, &req),
        _ => refuse(&state, "route", fail(404, "Unknown method .")),
    }
}

/// [search] `itemSearch` (`only` unset) or `persons/search` (`only` = person).
fn search(state: &Arc<Mutex<Inner>>, req: &Request, only: Option<&str>) -> Reply {
    let exact = req.query("exact_match") == Some("true");
    let term = req.query("term").unwrap_or_default().to_string();
    if term.chars().count() < if exact { 1 } else { 2 } {
        return refuse(state, "search: term", fail(400, "Search term must be at least 2 characters long"));
    }
    let types: Vec<&str> = match only {
        Some(t) => vec![t],
        None => req
            .query("item_types")
            .map_or(vec!["deal", "person", "organization", "product", "lead"], |t| t.split(',').collect()),
    };
    let allowed: &[&str] = match only {
        Some(_) => &["custom_fields", "email", "notes", "phone", "name"],
        None if types == ["lead"] => &["custom_fields", "notes", "title"],
        None => {
            &["address", "code", "custom_fields", "email", "name", "notes", "phone", "title", "description"]
        }
    };
    let fields: Vec<&str> = req.query("fields").map_or(allowed.to_vec(), |f| f.split(',').collect());
    if let Some(bad) = fields.iter().find(|f| !allowed.contains(f)) {
        return refuse(state, &format!("search: field {bad}"), fail(400, &format!("Invalid field: {bad}")));
    }
    if req.query("limit").and_then(|l| l.parse::<usize>().ok()).is_some_and(|l| l > 100) {
        return refuse(state, "search: limit", fail(400, "limit must be at most 100"));
    }
    let matches = |value: &str| match exact {
        true => value.eq_ignore_ascii_case(&term),
        false => value.to_lowercase().contains(&term.to_lowercase()),
    };
    let mut s = state.lock().unwrap();
    s.searches += 1;
    let mut items = Vec::new();
    if types.contains(&"lead") {
        for lead in &s.leads {
            let hit = (fields.contains(&"custom_fields") && lead.custom.values().any(|v| matches(v)))
                || (fields.contains(&"title") && matches(&lead.title));
            if hit {
                items.push(
                    json!({"result_score": 1.0, "item": {"id": lead.id, "type": "lead", "title": lead.title,
                    "person": {"id": lead.person_id}}}),
                );
            }
        }
    }
    if types.contains(&"person") {
        for p in &s.persons {
            let hit = (fields.contains(&"email") && p.emails.iter().any(|e| matches(e)))
                || (fields.contains(&"name") && matches(&p.name));
            if hit {
                items
                    .push(json!({"result_score": 1.0, "item": {"id": p.id, "type": "person", "name": p.name,
                    "emails": p.emails}}));
            }
        }
    }
    ok(200, json!({"items": items}))
}

/// `[{value, primary, label}]` → the values; `None`: not that shape.
fn values(v: Option<&Value>) -> Option<Vec<String>> {
    let Some(v) = v else { return Some(Vec::new()) };
    v.as_array()?.iter().map(|e| e["value"].as_str().map(str::to_string)).collect()
}

/// [person]
fn add_person(state: &Arc<Mutex<Inner>>, req: &Request) -> Reply {
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(&req.body) else {
        return refuse(state, "person: json", fail(400, "Invalid JSON"));
    };
    if !req.is_json() {
        return refuse(state, "person: content-type", fail(415, "Unsupported Media Type"));
    }
    if let Some(k) = body.keys().find(|k| !PERSON_KEYS.contains(&k.as_str())) {
        return refuse(state, &format!("person: field {k}"), fail(400, &format!("Unknown field: {k}")));
    }
    let name = body.get("name").and_then(Value::as_str).unwrap_or_default().trim().to_string();
    if name.is_empty() {
        return refuse(state, "person: name", fail(400, "Name must be given."));
    }
    if name.chars().count() > TEXT_MAX {
        return refuse(state, "person: name length", fail(400, "Name is too long"));
    }
    let (Some(emails), Some(phones)) = (values(body.get("emails")), values(body.get("phones"))) else {
        return refuse(
            state,
            "person: emails/phones shape",
            fail(400, "emails and phones are arrays of {value, primary, label}"),
        );
    };
    let mut s = state.lock().unwrap();
    s.person_creates += 1;
    let id = s.persons.len() as i64 + 1;
    s.persons.push(Person { id, name: name.clone(), emails: emails.clone(), phones: phones.clone() });
    let shown = |v: &[String]| {
        v.iter().map(|e| json!({"value": e, "primary": true, "label": "work"})).collect::<Vec<_>>()
    };
    ok(200, json!({"id": id, "name": name, "emails": shown(&emails), "phones": shown(&phones)}))
}

/// [lead]
async fn add_lead(state: &Arc<Mutex<Inner>>, req: &Request) -> Reply {
    if !req.is_json() {
        return refuse(state, "lead: content-type", fail(415, "Unsupported Media Type"));
    }
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(&req.body) else {
        return refuse(state, "lead: json", fail(400, "Invalid JSON"));
    };
    let lead = match validate_lead(state, &body) {
        Ok(lead) => lead,
        Err((rule, error)) => return refuse(state, &rule, fail(400, &error)),
    };
    let fault = {
        let mut s = state.lock().unwrap();
        s.lead_creates += 1;
        s.faults.pop_front()
    };
    match fault {
        Some(Fault::Status(status)) => return fail(status, "Internal server error"),
        Some(Fault::RateLimited(secs)) => {
            let headers =
                format!("x-ratelimit-limit: 40\r\nx-ratelimit-remaining: 0\r\nx-ratelimit-reset: {secs}\r\n");
            let body = json!({"success": false, "error": "Request over limit", "errorCode": 429});
            return Some((429, headers, body.to_string()));
        }
        _ => {}
    }
    let mut data = Map::new();
    data.insert("id".into(), json!(lead.id));
    data.insert("title".into(), json!(lead.title));
    data.insert("person_id".into(), json!(lead.person_id));
    data.insert("organization_id".into(), Value::Null);
    data.insert("source_name".into(), json!("API"));
    for (k, v) in &lead.custom {
        data.insert(k.clone(), json!(v));
    }
    state.lock().unwrap().leads.push(lead);
    let answer = ok(201, Value::Object(data));
    match fault {
        Some(Fault::DropAfterCreate) => None,
        Some(Fault::SlowAfterCreate(d)) => {
            tokio::time::sleep(d).await;
            answer
        }
        _ => answer,
    }
}

fn validate_lead(
    state: &Arc<Mutex<Inner>>,
    body: &Map<String, Value>,
) -> Result<LeadRecord, (String, String)> {
    let mut custom = BTreeMap::new();
    for (k, v) in body {
        if LEAD_KEYS.contains(&k.as_str()) {
            continue;
        }
        if !CUSTOM.contains(&k.as_str()) {
            return Err((format!("lead: field {k}"), format!("Unknown field: {k}")));
        }
        let Some(text) = v.as_str() else {
            return Err((format!("lead: field {k} type"), format!("{k} must be a string")));
        };
        if text.chars().count() > TEXT_MAX {
            return Err((format!("lead: length {k}"), format!("Value of {k} is too long (max {TEXT_MAX})")));
        }
        custom.insert(k.clone(), text.to_string());
    }
    let title = body.get("title").and_then(Value::as_str).unwrap_or_default().trim().to_string();
    if title.is_empty() {
        return Err(("lead: title".into(), "Lead title is required and must be a non-empty string".into()));
    }
    if title.chars().count() > TEXT_MAX {
        return Err(("lead: title length".into(), "Lead title is too long".into()));
    }
    let person_id = match body.get("person_id") {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(_) => return Err(("lead: person_id type".into(), "person_id must be an integer".into())),
        None => {
            return Err((
                "lead: person".into(),
                "A lead has to be linked to a person or an organization".into(),
            ))
        }
    };
    if !state.lock().unwrap().persons.iter().any(|p| p.id == person_id) {
        return Err(("lead: unknown person".into(), format!("Person with id {person_id} not found")));
    }
    let id = uuid::Uuid::new_v4().to_string();
    Ok(LeadRecord { id, title, person_id, custom })
}

/// [notes] `POST /api/v1/notes`.
async fn add_note(state: &Arc<Mutex<Inner>>, req: &Request) -> Reply {
    if !req.is_json() {
        return refuse(state, "note: content-type", fail(415, "Unsupported Media Type"));
    }
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(&req.body) else {
        return refuse(state, "note: json", fail(400, "Invalid JSON"));
    };
    let content = body.get("content").and_then(Value::as_str).unwrap_or_default().to_string();
    if content.trim().is_empty() {
        return refuse(state, "note: content", fail(400, "Note content is required"));
    }
    let lead_id = body.get("lead_id").and_then(Value::as_str).unwrap_or_default().to_string();
    let others = ["deal_id", "person_id", "org_id", "project_id"].iter().any(|k| body.contains_key(*k));
    if lead_id.is_empty() && !others {
        return refuse(
            state,
            "note: item",
            fail(400, "Note must be attached to a lead, deal, person, organization or project"),
        );
    }
    let fault = {
        let mut s = state.lock().unwrap();
        if !lead_id.is_empty() && !s.leads.iter().any(|l| l.id == lead_id) {
            drop(s);
            return refuse(state, "note: lead_id", fail(400, "Lead not found"));
        }
        s.note_creates += 1;
        s.note_faults.pop_front()
    };
    if let Some(Fault::Status(status)) = fault {
        return fail(status, "Internal server error");
    }
    let note = {
        let mut s = state.lock().unwrap();
        let note = NoteRecord { id: s.notes.len() as i64 + 1, content, lead_id };
        s.notes.push(note.clone());
        note
    };
    let answer = ok(
        200,
        json!({"id": note.id, "content": note.content, "lead_id": note.lead_id, "active_flag": true}),
    );
    match fault {
        Some(Fault::DropAfterCreate) => None,
        Some(Fault::SlowAfterCreate(d)) => {
            tokio::time::sleep(d).await;
            answer
        }
        _ => answer,
    }
}

/// [notes] `GET /api/v1/notes`.
fn notes(state: &Arc<Mutex<Inner>>, req: &Request) -> Reply {
    let limit = req.query("limit").map_or(Ok(100), str::parse::<usize>);
    let Ok(limit) = limit.map_err(|_| ()).and_then(|l| if l <= 500 { Ok(l) } else { Err(()) }) else {
        return refuse(state, "notes: limit", fail(400, "limit must be at most 500"));
    };
    let s = state.lock().unwrap();
    let data: Vec<Value> = s
        .notes
        .iter()
        .filter(|n| req.query("lead_id").is_none_or(|l| l == n.lead_id))
        .take(limit)
        .map(|n| json!({"id": n.id, "content": n.content, "lead_id": n.lead_id, "active_flag": true}))
        .collect();
    let more = json!({"pagination": {"start": 0, "limit": limit, "more_items_in_collection": false}});
    Some((200, RATE.to_string(), json!({"success": true, "data": data, "additional_data": more}).to_string()))
}
