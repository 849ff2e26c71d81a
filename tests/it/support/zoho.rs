//! A loopback Zoho (accounts server and CRM API in one) holding requests to Zoho's own
//! documentation and refusing anything else the way Zoho does.
//!
//! Where each rule comes from:
//! - [oauth] "Refresh Access Token": `POST {accounts}/oauth/v2/token` with `grant_type =
//!   refresh_token`, `client_id`, `client_secret`, `refresh_token`; answers `{access_token,
//!   expires_in: 3600, api_domain, token_type: "Bearer"}`, or `{"error": "invalid_client"}` /
//!   `{"error": "invalid_code"}` for a wrong client or refresh token.
//! - [auth] every CRM call: `Authorization: Zoho-oauthtoken {access_token}`; an unknown or
//!   expired token is a 401 `{"code": "INVALID_TOKEN", "details": {}, "message": "invalid oauth
//!   token", "status": "error"}`.
//! - [upsert] "Insert or Update Records (Upsert)": `POST /crm/{version}/Leads/upsert` with
//!   `data` (1 to 100 records) and `duplicate_check_fields` (unique fields of the module); a
//!   record matching on them is updated (`action: update`, 200), else inserted (`action:
//!   insert`, 201); each answer `{code: SUCCESS, duplicate_field, action, details: {id, …},
//!   message, status: success}`.
//! - [errors] a record's error `{code, details: {api_name, json_path}, message, status:
//!   error}`: `MANDATORY_NOT_FOUND` for a required field missing on insert (Leads: `Last_Name`,
//!   `Company`), `INVALID_DATA` for a field the module does not have or a value longer than
//!   its length (`details.maximum_length`); a request of one record answers 400 with it.
//! - [fields] "Standard Modules & Fields", Leads: First_Name 40, Last_Name 80, Company 100,
//!   Email 100, Phone 30, Description 32000 (text area); `Onceform_Ref` is a custom single
//!   line (255) with "Do not allow duplicate values".
//! - [search] "Search Records": `GET /crm/{version}/Leads/search?criteria=(field:equals:value)`,
//!   `(`, `)`, `,` and `\` escaped with `\` in the value; 200 `{data, info}` or 204.
//! - [notes] "Create Notes" / "Get Notes": `POST /crm/{version}/Leads/{record_id}/Notes` with
//!   `data` (records of `Note_Title`, `Note_Content`, the content required) on an existing
//!   Lead (else 400 `INVALID_DATA`), answering 201 `{data: [{code: SUCCESS, details: {id, …},
//!   message: "record added", status: success}]}`; `GET` of the same resource with `fields`
//!   (required from v3 on: else 400 `REQUIRED_PARAM_MISSING`) and `per_page` (at most 200),
//!   answering `{data: [{id, Note_Title, Note_Content, Parent_Id: {id}, $se_module: "Leads"}],
//!   info}`, or 204 when the Lead has none.
//! - [limits] over the API limits: 429 `{"code": "TOO_MANY_REQUESTS", …}` with
//!   `X-RATELIMIT-LIMIT`, `X-RATELIMIT-REMAINING`, `X-RATELIMIT-RESET` (epoch milliseconds).

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::crm::Fault;
use super::vendor::{serve, Reply, Request};

pub const CLIENT_ID: &str = "1000.ONCEFORMTESTCLIENT";
pub const CLIENT_SECRET: &str = "zoho-test-client-secret";
pub const REFRESH_TOKEN: &str = "1000.zoho-test-refresh-token";

/// The Leads fields (API name, length; 0: not text).
const FIELDS: &[(&str, usize)] = &[
    ("First_Name", 40),
    ("Last_Name", 80),
    ("Company", 100),
    ("Email", 100),
    ("Phone", 30),
    ("Description", 32000),
    ("Lead_Source", 0),
    ("Onceform_Ref", 255),
    ("Journey", 255),
];
const UNIQUE: &[&str] = &["Email", "Onceform_Ref"];
const REQUIRED: &[&str] = &["Last_Name", "Company"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZohoLead {
    pub id: String,
    pub fields: BTreeMap<String, String>,
}

/// A note and the Lead it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZohoNote {
    pub id: String,
    pub parent_id: String,
    pub title: String,
    pub content: String,
}

#[derive(Debug, Default)]
pub struct Inner {
    pub leads: Vec<ZohoLead>,
    pub notes: Vec<ZohoNote>,
    pub note_faults: VecDeque<Fault>,
    pub note_creates: usize,
    pub tokens: HashSet<String>,
    pub token_requests: usize,
    pub faults: VecDeque<Fault>,
    /// Upserts that passed validation (faulted ones included).
    pub upserts: usize,
    pub refused: Vec<String>,
}

#[derive(Clone)]
pub struct FakeZoho {
    pub url: String,
    pub state: Arc<Mutex<Inner>>,
}

impl FakeZoho {
    pub async fn start() -> FakeZoho {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state: Arc<Mutex<Inner>> = Arc::default();
        let (s, u) = (state.clone(), url.clone());
        serve(listener, move |req| handle(s.clone(), u.clone(), req));
        FakeZoho { url, state }
    }

    pub fn push_fault(&self, fault: Fault) {
        self.state.lock().unwrap().faults.push_back(fault);
    }

    pub fn leads(&self) -> Vec<ZohoLead> {
        self.state.lock().unwrap().leads.clone()
    }

    pub fn upserts(&self) -> usize {
        self.state.lock().unwrap().upserts
    }

    pub fn token_requests(&self) -> usize {
        self.state.lock().unwrap().token_requests
    }

    /// Every access token issued so far stops working (as after an hour).
    pub fn expire_tokens(&self) {
        self.state.lock().unwrap().tokens.clear();
    }

    pub fn refused(&self) -> Vec<String> {
        self.state.lock().unwrap().refused.clone()
    }

    pub fn notes(&self) -> Vec<ZohoNote> {
        self.state.lock().unwrap().notes.clone()
    }

    pub fn note_creates(&self) -> usize {
        self.state.lock().unwrap().note_creates
    }

    pub fn push_note_fault(&self, fault: Fault) {
        self.state.lock().unwrap().note_faults.push_back(fault);
    }
}

fn error(status: u16, code: &str, message: &str, details: Value) -> Reply {
    let body = json!({"code": code, "details": details, "message": message, "status": "error"});
    Some((status, String::new(), body.to_string()))
}

fn refuse(state: &Arc<Mutex<Inner>>, rule: &str, reply: Reply) -> Reply {
    state.lock().unwrap().refused.push(rule.to_string());
    reply
}

/// `vN`, as every CRM path starts.
fn is_version(v: &str) -> bool {
    v.strip_prefix('v').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

async fn handle(state: Arc<Mutex<Inner>>, url: String, req: Request) -> Reply {
    let path: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    if path == ["oauth", "v2", "token"] && req.method == "POST" {
        return token(&state, &url, &req);
    }
    let module_call = match path.as_slice() {
        ["crm", v, "Leads", "upsert"] if is_version(v) && req.method == "POST" => Call::Upsert,
        ["crm", v, "Leads", "search"] if is_version(v) && req.method == "GET" => Call::Search,
        ["crm", v, "Leads", id, "Notes"] if is_version(v) && req.method == "POST" => {
            Call::AddNote(id.to_string())
        }
        ["crm", v, "Leads", id, "Notes"] if is_version(v) && req.method == "GET" => {
            Call::Notes(id.to_string())
        }
        _ => {
            return refuse(
                &state,
                "route",
                error(
                    404,
                    "INVALID_URL_PATTERN",
                    "Please check if the URL trying to access is a correct one",
                    json!({}),
                ),
            )
        }
    };
    // [auth]
    let token = req.header("authorization").and_then(|h| h.strip_prefix("Zoho-oauthtoken "));
    if !token.is_some_and(|t| state.lock().unwrap().tokens.contains(t)) {
        return refuse(&state, "auth", error(401, "INVALID_TOKEN", "invalid oauth token", json!({})));
    }
    match module_call {
        Call::Upsert => upsert(&state, &req).await,
        Call::Search => search(&state, &req),
        Call::AddNote(lead) => add_note(&state, &req, &lead).await,
        Call::Notes(lead) => notes(&state, &req, &lead),
    }
}

enum Call {
    Upsert,
    Search,
    AddNote(String),
    Notes(String),
}

/// [notes] `POST /crm/{version}/Leads/{id}/Notes`.
async fn add_note(state: &Arc<Mutex<Inner>>, req: &Request, lead: &str) -> Reply {
    let body: Value = serde_json::from_slice(&req.body).unwrap_or_default();
    let Some([record]) = body["data"].as_array().map(Vec::as_slice) else {
        return refuse(
            state,
            "note: data",
            error(400, "INVALID_DATA", "invalid data", json!({"api_name": "data"})),
        );
    };
    let content = record["Note_Content"].as_str().unwrap_or_default().to_string();
    if content.trim().is_empty() {
        let details = json!({"api_name": "Note_Content", "json_path": "$.data[0].Note_Content"});
        return refuse(
            state,
            "note: Note_Content",
            error(400, "MANDATORY_NOT_FOUND", "required field not found", details),
        );
    }
    let fault = {
        let mut s = state.lock().unwrap();
        if !s.leads.iter().any(|l| l.id == lead) {
            drop(s);
            let details = json!({"api_name": "Parent_Id"});
            return refuse(
                state,
                "note: parent",
                error(400, "INVALID_DATA", "the related id given seems to be invalid", details),
            );
        }
        s.note_creates += 1;
        s.note_faults.pop_front()
    };
    if let Some(Fault::Status(status)) = fault {
        return error(status, "INTERNAL_ERROR", "Internal Server Error", json!({}));
    }
    let id = {
        let mut s = state.lock().unwrap();
        let id = format!("55550000000{:06}", s.notes.len() + 1);
        let title = record["Note_Title"].as_str().unwrap_or_default().to_string();
        s.notes.push(ZohoNote { id: id.clone(), parent_id: lead.to_string(), title, content });
        id
    };
    let answer = json!({"data": [{"code": "SUCCESS", "details": {"id": id, "Created_Time": "2026-12-01T00:00:00+00:00"},
                                  "message": "record added", "status": "success"}]});
    let answer = Some((201, String::new(), answer.to_string()));
    match fault {
        Some(Fault::DropAfterCreate) => None,
        Some(Fault::SlowAfterCreate(d)) => {
            tokio::time::sleep(d).await;
            answer
        }
        _ => answer,
    }
}

/// [notes] `GET /crm/{version}/Leads/{id}/Notes`.
fn notes(state: &Arc<Mutex<Inner>>, req: &Request, lead: &str) -> Reply {
    if req.query("fields").is_none_or(str::is_empty) {
        let details = json!({"param_name": "fields"});
        return refuse(
            state,
            "notes: fields",
            error(400, "REQUIRED_PARAM_MISSING", "One of the expected parameter is missing", details),
        );
    }
    if req.query("per_page").and_then(|p| p.parse::<usize>().ok()).is_some_and(|p| p > 200) {
        let details = json!({"param_name": "per_page"});
        return refuse(
            state,
            "notes: per_page",
            error(400, "INVALID_DATA", "per_page is more than 200", details),
        );
    }
    let s = state.lock().unwrap();
    let data: Vec<Value> = s
        .notes
        .iter()
        .filter(|n| n.parent_id == lead)
        .map(|n| {
            json!({"id": n.id, "Note_Title": n.title, "Note_Content": n.content,
                        "Parent_Id": {"id": n.parent_id}, "$se_module": "Leads"})
        })
        .collect();
    if data.is_empty() {
        return Some((204, String::new(), String::new()));
    }
    let info = json!({"per_page": 200, "count": data.len(), "page": 1, "more_records": false});
    Some((200, String::new(), json!({"data": data, "info": info}).to_string()))
}

/// [oauth] the form body's (or query's) parameters.
fn token(state: &Arc<Mutex<Inner>>, url: &str, req: &Request) -> Reply {
    let body = String::from_utf8_lossy(&req.body).to_string();
    let form: Vec<(String, String)> = url::form_urlencoded::parse(body.as_bytes()).into_owned().collect();
    let param = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str()).or_else(|| req.query(k));
    state.lock().unwrap().token_requests += 1;
    if param("grant_type") != Some("refresh_token") {
        return refuse(
            state,
            "token: grant_type",
            Some((200, String::new(), json!({"error": "unsupported_grant_type"}).to_string())),
        );
    }
    if param("client_id") != Some(CLIENT_ID) || param("client_secret") != Some(CLIENT_SECRET) {
        return refuse(
            state,
            "token: client",
            Some((200, String::new(), json!({"error": "invalid_client"}).to_string())),
        );
    }
    if param("refresh_token") != Some(REFRESH_TOKEN) {
        return refuse(
            state,
            "token: refresh_token",
            Some((200, String::new(), json!({"error": "invalid_code"}).to_string())),
        );
    }
    let access = format!("1000.{}", uuid::Uuid::new_v4().simple());
    state.lock().unwrap().tokens.insert(access.clone());
    let body = json!({"access_token": access, "scope": "ZohoCRM.modules.leads.ALL", "api_domain": url,
                      "token_type": "Bearer", "expires_in": 3600});
    Some((200, String::new(), body.to_string()))
}

type RecordError = (String, &'static str, String, Value);

/// [errors] one record against the module's fields.
fn validate(record: &serde_json::Map<String, Value>) -> Result<BTreeMap<String, String>, RecordError> {
    let mut fields = BTreeMap::new();
    for (name, value) in record {
        let path = format!("$.data[0].{name}");
        let Some((_, length)) = FIELDS.iter().find(|(f, _)| f == name) else {
            return Err((
                format!("field {name}"),
                "INVALID_DATA",
                "invalid data".into(),
                json!({"api_name": name, "json_path": path}),
            ));
        };
        let Some(text) = value.as_str() else {
            return Err((
                format!("field {name} type"),
                "INVALID_DATA",
                "invalid data".into(),
                json!({"api_name": name, "json_path": path, "expected_data_type": "text"}),
            ));
        };
        if *length > 0 && text.chars().count() > *length {
            return Err((
                format!("length {name}"),
                "INVALID_DATA",
                "invalid data".into(),
                json!({"api_name": name, "json_path": path, "maximum_length": length}),
            ));
        }
        fields.insert(name.clone(), text.to_string());
    }
    Ok(fields)
}

/// [upsert]
async fn upsert(state: &Arc<Mutex<Inner>>, req: &Request) -> Reply {
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(&req.body) else {
        return refuse(
            state,
            "upsert: json",
            error(400, "INVALID_DATA", "body is not a JSON object", json!({})),
        );
    };
    let records = body.get("data").and_then(Value::as_array).cloned().unwrap_or_default();
    if records.is_empty() || records.len() > 100 {
        return refuse(
            state,
            "upsert: data",
            error(400, "INVALID_DATA", "data must hold 1 to 100 records", json!({"api_name": "data"})),
        );
    }
    let checks: Vec<String> = match body.get("duplicate_check_fields") {
        Some(Value::Array(f)) => f.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
        None => vec!["Email".into()],
        _ => {
            return refuse(
                state,
                "upsert: duplicate_check_fields",
                error(400, "INVALID_DATA", "invalid data", json!({"api_name": "duplicate_check_fields"})),
            )
        }
    };
    if let Some(bad) = checks.iter().find(|c| !UNIQUE.contains(&c.as_str())) {
        return refuse(
            state,
            "upsert: duplicate check field",
            error(400, "INVALID_DATA", "the field is not unique", json!({"api_name": bad})),
        );
    }
    if let Some(k) =
        body.keys().find(|k| !["data", "duplicate_check_fields", "trigger"].contains(&k.as_str()))
    {
        return refuse(
            state,
            &format!("upsert: key {k}"),
            error(400, "INVALID_DATA", "invalid data", json!({"api_name": k})),
        );
    }
    let Some(record) = records[0].as_object() else {
        return refuse(state, "upsert: record", error(400, "INVALID_DATA", "invalid data", json!({})));
    };
    let fields = match validate(record) {
        Ok(f) => f,
        Err((rule, code, message, details)) => {
            let one = json!({"code": code, "details": details, "message": message, "status": "error"});
            return refuse(state, &rule, Some((400, String::new(), json!({"data": [one]}).to_string())));
        }
    };
    let fault = {
        let mut s = state.lock().unwrap();
        s.upserts += 1;
        s.faults.pop_front()
    };
    match fault {
        Some(Fault::Status(status)) => {
            return error(status, "INTERNAL_ERROR", "Internal Server Error", json!({}))
        }
        Some(Fault::RateLimited(secs)) => {
            let reset =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()
                    as u64
                    + secs * 1000;
            let mut reply = error(429, "TOO_MANY_REQUESTS", "the request limit has been reached", json!({}))?;
            reply.1 = format!(
                "x-ratelimit-limit: 100\r\nx-ratelimit-remaining: 0\r\nx-ratelimit-reset: {reset}\r\n"
            );
            return Some(reply);
        }
        _ => {}
    }
    let answer = apply(state, &checks, fields);
    match fault {
        Some(Fault::DropAfterCreate) => None,
        Some(Fault::SlowAfterCreate(d)) => {
            tokio::time::sleep(d).await;
            answer
        }
        _ => answer,
    }
}

fn apply(state: &Arc<Mutex<Inner>>, checks: &[String], fields: BTreeMap<String, String>) -> Reply {
    let mut s = state.lock().unwrap();
    let found = checks.iter().find_map(|c| {
        let value = fields.get(c)?;
        s.leads.iter().position(|l| l.fields.get(c) == Some(value)).map(|i| (i, c.clone()))
    });
    let (index, duplicate, action, status) = match found {
        Some((i, field)) => (i, Value::String(field), "update", 200),
        None => {
            let missing: Vec<&str> = REQUIRED
                .iter()
                .copied()
                .filter(|f| fields.get(*f).is_none_or(|v| v.trim().is_empty()))
                .collect();
            if let Some(first) = missing.first() {
                s.refused.push("required fields".into());
                let one = json!({"code": "MANDATORY_NOT_FOUND", "details": {"api_name": first, "json_path": format!("$.data[0].{first}")},
                                 "message": "required field not found", "status": "error"});
                return Some((400, String::new(), json!({"data": [one]}).to_string()));
            }
            let id = format!("{}", 5_725_767_000_000_000_000u64 + s.leads.len() as u64 + 1);
            s.leads.push(ZohoLead { id, fields: BTreeMap::new() });
            (s.leads.len() - 1, Value::Null, "insert", 201)
        }
    };
    let lead = &mut s.leads[index];
    lead.fields.extend(fields);
    let message = if action == "insert" { "record added" } else { "record updated" };
    let one = json!({"code": "SUCCESS", "duplicate_field": duplicate, "action": action,
                     "details": {"Modified_Time": "2026-12-01T10:00:00+00:00", "id": lead.id,
                                 "Created_Time": "2026-12-01T10:00:00+00:00"},
                     "message": message, "status": "success"});
    Some((status, String::new(), json!({"data": [one]}).to_string()))
}

/// [search] `(field:equals:value)` with its escapes.
fn search(state: &Arc<Mutex<Inner>>, req: &Request) -> Reply {
    let criteria = req.query("criteria").unwrap_or_default();
    let Some(inner) = criteria.strip_prefix('(').and_then(|c| c.strip_suffix(')')) else {
        return refuse(
            state,
            "search: criteria",
            error(400, "INVALID_QUERY", "invalid query formed", json!({"api_name": "criteria"})),
        );
    };
    let Some((field, rest)) = inner.split_once(':') else {
        return refuse(
            state,
            "search: criteria",
            error(400, "INVALID_QUERY", "invalid query formed", json!({})),
        );
    };
    let Some(escaped) = rest.strip_prefix("equals:") else {
        return refuse(
            state,
            "search: operator",
            error(400, "INVALID_QUERY", "unsupported operator", json!({})),
        );
    };
    let mut value = String::new();
    let mut chars = escaped.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => value.extend(chars.next()),
            '(' | ')' | ',' => {
                return refuse(
                    state,
                    "search: unescaped",
                    error(400, "INVALID_QUERY", "invalid query formed", json!({})),
                )
            }
            c => value.push(c),
        }
    }
    if !FIELDS.iter().any(|(f, _)| *f == field) {
        return refuse(
            state,
            "search: field",
            error(400, "INVALID_QUERY", "invalid query formed", json!({"api_name": field})),
        );
    }
    let s = state.lock().unwrap();
    let data: Vec<Value> = s
        .leads
        .iter()
        .filter(|l| l.fields.get(field) == Some(&value))
        .map(|l| {
            let mut v = json!({"id": l.id});
            for (k, f) in &l.fields {
                v[k] = json!(f);
            }
            v
        })
        .collect();
    if data.is_empty() {
        return Some((204, String::new(), String::new()));
    }
    let info = json!({"per_page": 200, "count": data.len(), "page": 1, "more_records": false});
    Some((200, String::new(), json!({"data": data, "info": info}).to_string()))
}
