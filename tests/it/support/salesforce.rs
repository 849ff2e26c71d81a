//! A loopback Salesforce that holds requests to Salesforce's REST API documentation for
//! "sObject Rows by External ID" on Lead and refuses anything else the way Salesforce does
//! (an array of `{message, errorCode, fields}`, its status).
//!
//! Where each rule comes from (Salesforce REST API Developer Guide):
//! - [upsert] "Upsert Records Using sObject Rows by External ID" and "Insert or Update (Upsert)
//!   a Record Using an External ID": `PATCH /services/data/vXX.X/sobjects/Lead/{field}/{value}`;
//!   "Do not specify Id or an external ID field in the request body or an error is generated";
//!   201 with `{id, success, errors, created: true}` for a new record, 200 with
//!   `created: false` for an update (API 46.0 and later); an incorrect external ID field is a
//!   404 `NOT_FOUND`; a value matching several records is a 300.
//! - [get] "Get Records Using sObject Rows by External ID": `GET` of the same URI,
//!   "Parameters: None"; the record with `attributes` and `Id`.
//! - [auth] every resource: `Authorization: Bearer token`; a bad session is a 401
//!   `INVALID_SESSION_ID` ("Status Codes and Error Responses").
//! - [errors] "Status Codes and Error Responses": errors are arrays; `JSON_PARSER_ERROR` for
//!   a body that is not JSON, `INVALID_FIELD` for a field the object does not have.
//! - [lead] Object Reference, Lead: `LastName` and `Company` are required on create (a
//!   blank value is a missing one: `REQUIRED_FIELD_MISSING`); each text field has a length
//!   (`LastName` 80, `Email` 80, `Company` 255, …) and a longer value is a 400
//!   `STRING_TOO_LONG` "Last Name: data value too large: … (max length=80)".
//! - [files] "Insert or Update Blob Data" and Object Reference, ContentVersion:
//!   `POST /services/data/vXX.X/sobjects/ContentVersion` with `PathOnClient` (required),
//!   `Title`, `VersionData` (base64), `FirstPublishLocationId` (the record the file is
//!   published to, here a Lead), `Description` (textarea, 1000); 201 `{id, success, errors}`.
//! - [query] "Execute a SOQL Query": `GET /services/data/vXX.X/query?q=…`, answering
//!   `{totalSize, done, records}`; the fake reads the one query the adapter makes,
//!   `SELECT Id FROM ContentVersion WHERE Description = '…'`, and refuses any other as
//!   `MALFORMED_QUERY`; likewise `SELECT Id FROM Task WHERE WhoId = '…' AND Subject = '…'`.
//! - [task] Object Reference, Task: `POST /services/data/vXX.X/sobjects/Task`; `WhoId` a
//!   Lead or Contact (an Id of another object is a 400 `FIELD_INTEGRITY_EXCEPTION`),
//!   `Subject` (string, 255, filterable), `Description` ("Comments", textarea 32000, a long
//!   text area SOQL cannot filter), `Status` (`Not Started`, `In Progress`, `Completed`,
//!   `Waiting on someone else`, `Deferred`), `Priority` (`High`, `Normal`, `Low`),
//!   `ActivityDate` (a date, `YYYY-MM-DD`); 201 `{id, success, errors}`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::crm::Fault;
use super::vendor::{serve, Reply, Request, TOKEN};

/// The org's Lead fields, their labels and lengths (0: not a text field); `Onceform_Ref__c`
/// is the custom External ID field (unique), `Journey__c` a custom text field.
const FIELDS: &[(&str, &str, usize)] = &[
    ("Id", "Lead ID", 0),
    ("FirstName", "First Name", 40),
    ("LastName", "Last Name", 80),
    ("Company", "Company", 255),
    ("Email", "Email", 80),
    ("Phone", "Phone", 40),
    ("Description", "Description", 32000),
    ("LeadSource", "Lead Source", 255),
    ("Onceform_Ref__c", "Onceform Ref", 255),
    ("Journey__c", "Journey", 255),
];
const EXTERNAL_IDS: &[&str] = &["Onceform_Ref__c"];
const REQUIRED: &[&str] = &["LastName", "Company"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadRecord {
    pub id: String,
    pub fields: BTreeMap<String, String>,
}

/// A file version and where it was published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub id: String,
    pub title: String,
    pub path_on_client: String,
    pub description: String,
    pub first_publish_location: String,
    pub bytes: Vec<u8>,
}

/// A Task (an activity) and whom it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub id: String,
    pub who_id: String,
    pub subject: String,
    pub description: String,
    pub status: String,
}

#[derive(Debug, Default)]
pub struct Inner {
    pub leads: Vec<LeadRecord>,
    pub versions: Vec<Version>,
    pub tasks: Vec<Task>,
    /// Faults of the next Task creates.
    pub task_faults: VecDeque<Fault>,
    /// Task creates that passed validation (faulted ones included).
    pub task_creates: usize,
    pub faults: VecDeque<Fault>,
    /// Faults of the next ContentVersion creates.
    pub version_faults: VecDeque<Fault>,
    /// ContentVersion creates that passed validation (faulted ones included).
    pub version_creates: usize,
    /// Upserts that passed validation (faulted ones included).
    pub upserts: usize,
    pub lookups: usize,
    /// Each refused request's rule.
    pub refused: Vec<String>,
}

#[derive(Clone)]
pub struct FakeSalesforce {
    pub url: String,
    pub state: Arc<Mutex<Inner>>,
}

impl FakeSalesforce {
    pub async fn start() -> FakeSalesforce {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state: Arc<Mutex<Inner>> = Arc::default();
        let s = state.clone();
        serve(listener, move |req| handle(s.clone(), req));
        FakeSalesforce { url, state }
    }

    pub fn push_fault(&self, fault: Fault) {
        self.state.lock().unwrap().faults.push_back(fault);
    }

    pub fn leads(&self) -> Vec<LeadRecord> {
        self.state.lock().unwrap().leads.clone()
    }

    pub fn upserts(&self) -> usize {
        self.state.lock().unwrap().upserts
    }

    pub fn refused(&self) -> Vec<String> {
        self.state.lock().unwrap().refused.clone()
    }

    pub fn push_version_fault(&self, fault: Fault) {
        self.state.lock().unwrap().version_faults.push_back(fault);
    }

    pub fn versions(&self) -> Vec<Version> {
        self.state.lock().unwrap().versions.clone()
    }

    pub fn version_creates(&self) -> usize {
        self.state.lock().unwrap().version_creates
    }

    pub fn push_task_fault(&self, fault: Fault) {
        self.state.lock().unwrap().task_faults.push_back(fault);
    }

    pub fn tasks(&self) -> Vec<Task> {
        self.state.lock().unwrap().tasks.clone()
    }

    pub fn task_creates(&self) -> usize {
        self.state.lock().unwrap().task_creates
    }
}

/// [errors] one error in Salesforce's array format.
fn error(status: u16, code: &str, message: &str, fields: &[&str]) -> Reply {
    let body = json!([{"message": message, "errorCode": code, "fields": fields}]);
    Some((status, String::new(), body.to_string()))
}

fn refuse(state: &Arc<Mutex<Inner>>, rule: &str, reply: Reply) -> Reply {
    state.lock().unwrap().refused.push(rule.to_string());
    reply
}

/// `vNN.N`, as every `/services/data/` URI starts.
fn is_version(s: &str) -> bool {
    let Some((major, minor)) = s.strip_prefix('v').and_then(|v| v.split_once('.')) else { return false };
    !major.is_empty() && !minor.is_empty() && (major.to_owned() + minor).chars().all(|c| c.is_ascii_digit())
}

async fn handle(state: Arc<Mutex<Inner>>, req: Request) -> Reply {
    let path: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    let other = match path.as_slice() {
        ["services", "data", v, "sobjects", "ContentVersion"] if is_version(v) && req.method == "POST" => {
            Some(Other::Version)
        }
        ["services", "data", v, "sobjects", "Task"] if is_version(v) && req.method == "POST" => {
            Some(Other::Task)
        }
        ["services", "data", v, "query"] if is_version(v) && req.method == "GET" => Some(Other::Query),
        _ => None,
    };
    if let Some(other) = other {
        if req.bearer() != Some(TOKEN) {
            return refuse(
                &state,
                "auth",
                error(401, "INVALID_SESSION_ID", "Session expired or invalid", &[]),
            );
        }
        return match other {
            Other::Version => create_version(&state, &req).await,
            Other::Task => create_task(&state, &req).await,
            Other::Query => query(&state, &req),
        };
    }
    let (field, value) = match path.as_slice() {
        ["services", "data", v, "sobjects", "Lead", field, value] if is_version(v) && !value.is_empty() => {
            (field.to_string(), value.to_string())
        }
        _ => {
            let message = "The requested resource does not exist";
            return refuse(&state, "route", error(404, "NOT_FOUND", message, &[]));
        }
    };
    // [auth]
    if req.bearer() != Some(TOKEN) {
        return refuse(&state, "auth", error(401, "INVALID_SESSION_ID", "Session expired or invalid", &[]));
    }
    // [upsert] an incorrect external ID field is a 404 NOT_FOUND.
    if !EXTERNAL_IDS.contains(&field.as_str()) {
        let message = "The requested resource does not exist";
        return refuse(&state, "external id field", error(404, "NOT_FOUND", message, &[]));
    }
    match req.method.as_str() {
        "PATCH" => upsert(&state, &req, &field, &value).await,
        "GET" => get(&state, &req, &field, &value),
        m => {
            let message = format!("HTTP Method '{m}' not allowed. Allowed are GET,PATCH,DELETE,HEAD");
            refuse(&state, "method", error(405, "METHOD_NOT_ALLOWED", &message, &[]))
        }
    }
}

/// `PATCH …/sobjects/Lead/{field}/{value}` [upsert].
async fn upsert(state: &Arc<Mutex<Inner>>, req: &Request, field: &str, value: &str) -> Reply {
    if !req.is_json() {
        let message = "Content type not supported; use application/json";
        return refuse(state, "content-type", error(415, "UNSUPPORTED_MEDIA_TYPE", message, &[]));
    }
    let fields = match validate(&req.body, field) {
        Ok(fields) => fields,
        Err((rule, code, message, named)) => {
            let named: Vec<&str> = named.iter().map(String::as_str).collect();
            return refuse(state, &rule, error(400, code, &message, &named));
        }
    };
    let fault = {
        let mut s = state.lock().unwrap();
        s.upserts += 1;
        s.faults.pop_front()
    };
    match fault {
        Some(Fault::Status(status)) => return error(status, "UNKNOWN_EXCEPTION", "injected", &[]),
        Some(Fault::RateLimited(secs)) => {
            let mut reply = error(429, "REQUEST_LIMIT_EXCEEDED", "TotalRequests Limit exceeded.", &[])?;
            reply.1 = format!("retry-after: {secs}\r\n");
            return Some(reply);
        }
        _ => {}
    }
    let answer = apply(state, field, value, fields);
    match fault {
        Some(Fault::DropAfterCreate) => None,
        Some(Fault::SlowAfterCreate(d)) => {
            tokio::time::sleep(d).await;
            answer
        }
        _ => answer,
    }
}

type Refusal = (String, &'static str, String, Vec<String>);

/// [errors] a JSON object of Lead fields with string (or null) values; [upsert] neither `Id`
/// nor the external ID field among them.
fn validate(body: &[u8], external_field: &str) -> Result<BTreeMap<String, String>, Refusal> {
    let parse = || ("json".to_string(), "JSON_PARSER_ERROR", "Unexpected character".to_string(), Vec::new());
    let body: Value = serde_json::from_slice(body).map_err(|_| parse())?;
    let object = body.as_object().ok_or_else(parse)?;
    let mut fields = BTreeMap::new();
    for (name, value) in object {
        let Some((known, label, length)) = FIELDS.iter().find(|(f, _, _)| f.eq_ignore_ascii_case(name))
        else {
            let message = format!("No such column '{name}' on sobject of type Lead");
            return Err((format!("field {name}"), "INVALID_FIELD", message, vec![name.clone()]));
        };
        if known.eq_ignore_ascii_case("Id") || known.eq_ignore_ascii_case(external_field) {
            let message = format!("The field {known} cannot be specified in the request body of an upsert");
            return Err((format!("body names {known}"), "INVALID_FIELD", message, vec![known.to_string()]));
        }
        match value {
            Value::String(s) if *length > 0 && s.chars().count() > *length => {
                let message = format!("{label}: data value too large: {s} (max length={length})");
                return Err((format!("length {known}"), "STRING_TOO_LONG", message, vec![known.to_string()]));
            }
            Value::String(s) => {
                fields.insert(known.to_string(), s.clone());
            }
            Value::Null => {}
            _ => {
                return Err((
                    format!("field {name} type"),
                    "JSON_PARSER_ERROR",
                    "Cannot deserialize".into(),
                    Vec::new(),
                ))
            }
        }
    }
    Ok(fields)
}

fn apply(state: &Arc<Mutex<Inner>>, field: &str, value: &str, fields: BTreeMap<String, String>) -> Reply {
    let mut s = state.lock().unwrap();
    let existing = s.leads.iter().position(|l| l.fields.get(field).map(String::as_str) == Some(value));
    let (index, created) = match existing {
        Some(i) => (i, false),
        None => {
            // [lead] required fields on create.
            let blank = |f: &str| fields.get(f).is_none_or(|v| v.trim().is_empty());
            let missing: Vec<&str> = REQUIRED.iter().copied().filter(|f| blank(f)).collect();
            if !missing.is_empty() {
                drop(s);
                let message = format!("Required fields are missing: [{}]", missing.join(", "));
                return refuse(
                    state,
                    "required fields",
                    error(400, "REQUIRED_FIELD_MISSING", &message, &missing),
                );
            }
            let id = format!("00Q{:015}", s.leads.len() + 1);
            let mut record = BTreeMap::new();
            record.insert(field.to_string(), value.to_string());
            s.leads.push(LeadRecord { id, fields: record });
            (s.leads.len() - 1, true)
        }
    };
    let lead = &mut s.leads[index];
    lead.fields.extend(fields);
    let body = json!({"id": lead.id, "success": true, "errors": [], "created": created});
    Some((if created { 201 } else { 200 }, String::new(), body.to_string()))
}

/// `GET …/sobjects/Lead/{field}/{value}` [get]: no parameters.
fn get(state: &Arc<Mutex<Inner>>, req: &Request, field: &str, value: &str) -> Reply {
    if let Some((k, _)) = req.query.first() {
        let message = format!("Unexpected parameter '{k}': this resource takes none");
        return refuse(state, &format!("query {k}"), error(400, "INVALID_QUERY_PARAMETER", &message, &[]));
    }
    let mut s = state.lock().unwrap();
    s.lookups += 1;
    match s.leads.iter().find(|l| l.fields.get(field).map(String::as_str) == Some(value)) {
        Some(lead) => {
            let mut body = json!({"attributes": {"type": "Lead", "url": format!("/services/data/v59.0/sobjects/Lead/{}", lead.id)},
                                  "Id": lead.id});
            for (k, v) in &lead.fields {
                body[k] = Value::String(v.clone());
            }
            Some((200, String::new(), body.to_string()))
        }
        None => error(404, "NOT_FOUND", "The requested resource does not exist", &[]),
    }
}

/// `POST …/sobjects/ContentVersion` [files].
async fn create_version(state: &Arc<Mutex<Inner>>, req: &Request) -> Reply {
    use base64::Engine as _;
    if !req.is_json() {
        let message = "Content type not supported; use application/json";
        return refuse(state, "content-type", error(415, "UNSUPPORTED_MEDIA_TYPE", message, &[]));
    }
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(&req.body) else {
        return refuse(state, "version: json", error(400, "JSON_PARSER_ERROR", "Unexpected character", &[]));
    };
    const KNOWN: &[&str] =
        &["Title", "PathOnClient", "VersionData", "FirstPublishLocationId", "Description", "ContentLocation"];
    if let Some(k) = body.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        let message = format!("No such column '{k}' on sobject of type ContentVersion");
        return refuse(state, &format!("version: field {k}"), error(400, "INVALID_FIELD", &message, &[k]));
    }
    let text = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    if text("PathOnClient").is_empty() {
        let message = "Required fields are missing: [PathOnClient]";
        return refuse(
            state,
            "version: PathOnClient",
            error(400, "REQUIRED_FIELD_MISSING", message, &["PathOnClient"]),
        );
    }
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(text("VersionData")) else {
        let message = "VersionData: not valid base64";
        return refuse(state, "version: VersionData", error(400, "INVALID_FIELD", message, &["VersionData"]));
    };
    if text("Description").chars().count() > 1000 {
        return refuse(
            state,
            "version: Description",
            error(400, "STRING_TOO_LONG", "Description", &["Description"]),
        );
    }
    let location = text("FirstPublishLocationId");
    if !state.lock().unwrap().leads.iter().any(|l| l.id == location) {
        let message = "First Publish Location ID: id value of incorrect type";
        return refuse(
            state,
            "version: FirstPublishLocationId",
            error(400, "FIELD_INTEGRITY_EXCEPTION", message, &["FirstPublishLocationId"]),
        );
    }
    let fault = {
        let mut s = state.lock().unwrap();
        s.version_creates += 1;
        s.version_faults.pop_front()
    };
    if let Some(Fault::Status(status)) = fault {
        return error(status, "UNKNOWN_EXCEPTION", "injected", &[]);
    }
    let id = {
        let mut s = state.lock().unwrap();
        let id = format!("068{:015}", s.versions.len() + 1);
        s.versions.push(Version {
            id: id.clone(),
            title: text("Title"),
            path_on_client: text("PathOnClient"),
            description: text("Description"),
            first_publish_location: location,
            bytes,
        });
        id
    };
    let answer = Some((201, String::new(), json!({"id": id, "success": true, "errors": []}).to_string()));
    match fault {
        Some(Fault::DropAfterCreate) => None,
        Some(Fault::SlowAfterCreate(d)) => {
            tokio::time::sleep(d).await;
            answer
        }
        _ => answer,
    }
}

/// The resources beside a Lead's.
enum Other {
    Version,
    Task,
    Query,
}

const TASK_STATUS: &[&str] =
    &["Not Started", "In Progress", "Completed", "Waiting on someone else", "Deferred"];
const TASK_PRIORITY: &[&str] = &["High", "Normal", "Low"];

/// `POST …/sobjects/Task` [task].
async fn create_task(state: &Arc<Mutex<Inner>>, req: &Request) -> Reply {
    if !req.is_json() {
        let message = "Content type not supported; use application/json";
        return refuse(state, "content-type", error(415, "UNSUPPORTED_MEDIA_TYPE", message, &[]));
    }
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(&req.body) else {
        return refuse(state, "task: json", error(400, "JSON_PARSER_ERROR", "Unexpected character", &[]));
    };
    const KNOWN: &[&str] = &[
        "WhoId",
        "WhatId",
        "Subject",
        "Description",
        "Status",
        "Priority",
        "ActivityDate",
        "OwnerId",
        "TaskSubtype",
    ];
    if let Some(k) = body.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        let message = format!("No such column '{k}' on sobject of type Task");
        return refuse(state, &format!("task: field {k}"), error(400, "INVALID_FIELD", &message, &[k]));
    }
    let text = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    for (field, max) in [("Subject", 255), ("Description", 32000)] {
        if text(field).chars().count() > max {
            let message = format!("{field}: data value too large (max length={max})");
            return refuse(
                state,
                &format!("task: {field}"),
                error(400, "STRING_TOO_LONG", &message, &[field]),
            );
        }
    }
    for (field, values) in [("Status", TASK_STATUS), ("Priority", TASK_PRIORITY)] {
        if body.contains_key(field) && !values.contains(&text(field).as_str()) {
            let message = format!("{field}: bad value for restricted picklist field: {}", text(field));
            return refuse(
                state,
                &format!("task: {field}"),
                error(400, "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST", &message, &[field]),
            );
        }
    }
    let date = text("ActivityDate");
    if body.contains_key("ActivityDate") && chrono::NaiveDate::parse_from_str(&date, "%Y-%m-%d").is_err() {
        let message = format!("Cannot deserialize instance of date from VALUE_STRING value {date}");
        return refuse(state, "task: ActivityDate", error(400, "JSON_PARSER_ERROR", &message, &[]));
    }
    let who = text("WhoId");
    if !who.is_empty() && !state.lock().unwrap().leads.iter().any(|l| l.id == who) {
        let message = "Name ID: id value of incorrect type";
        return refuse(state, "task: WhoId", error(400, "FIELD_INTEGRITY_EXCEPTION", message, &["WhoId"]));
    }
    let fault = {
        let mut s = state.lock().unwrap();
        s.task_creates += 1;
        s.task_faults.pop_front()
    };
    if let Some(Fault::Status(status)) = fault {
        return error(status, "UNKNOWN_EXCEPTION", "injected", &[]);
    }
    let id = {
        let mut s = state.lock().unwrap();
        let id = format!("00T{:015}", s.tasks.len() + 1);
        let status = Some(text("Status")).filter(|t| !t.is_empty()).unwrap_or_else(|| "Not Started".into());
        s.tasks.push(Task {
            id: id.clone(),
            who_id: who,
            subject: text("Subject"),
            description: text("Description"),
            status,
        });
        id
    };
    let answer = Some((201, String::new(), json!({"id": id, "success": true, "errors": []}).to_string()));
    match fault {
        Some(Fault::DropAfterCreate) => None,
        Some(Fault::SlowAfterCreate(d)) => {
            tokio::time::sleep(d).await;
            answer
        }
        _ => answer,
    }
}

/// A SOQL string literal at the start of `s` (quoted, `\'` and `\\` escaped): its value and
/// what follows it.
fn literal(s: &str) -> Result<(String, &str), &'static str> {
    let inner = s.strip_prefix('\'').ok_or("a string literal")?;
    let mut value = String::new();
    let mut chars = inner.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => value.extend(chars.next().map(|(_, c)| c)),
            '\'' => return Ok((value, &inner[i + 1..])),
            c => value.push(c),
        }
    }
    Err("unterminated string")
}

fn malformed(state: &Arc<Mutex<Inner>>, why: &str) -> Reply {
    refuse(state, &format!("query: {why}"), error(400, "MALFORMED_QUERY", why, &[]))
}

fn records(kind: &str, ids: Vec<String>) -> Reply {
    let records: Vec<Value> = ids
        .iter()
        .map(|id| json!({"attributes": {"type": kind, "url": format!("/services/data/v59.0/sobjects/{kind}/{id}")}, "Id": id}))
        .collect();
    Some((
        200,
        String::new(),
        json!({"totalSize": records.len(), "done": true, "records": records}).to_string(),
    ))
}

/// `GET …/query?q=…` [query]: the ContentVersion by Description, or the Task by WhoId and Subject.
fn query(state: &Arc<Mutex<Inner>>, req: &Request) -> Reply {
    let q = req.query("q").unwrap_or_default();
    if let Some(rest) = q.strip_prefix("SELECT Id FROM ContentVersion WHERE Description = ") {
        let value = match literal(rest) {
            Ok((value, "")) => value,
            Ok(_) => return malformed(state, "unescaped quote"),
            Err(why) => return malformed(state, why),
        };
        let s = state.lock().unwrap();
        let ids = s.versions.iter().filter(|v| v.description == value).map(|v| v.id.clone()).collect();
        return records("ContentVersion", ids);
    }
    if let Some(rest) = q.strip_prefix("SELECT Id FROM Task WHERE WhoId = ") {
        let (who, subject) = match literal(rest) {
            Ok((who, rest)) => match rest.strip_prefix(" AND Subject = ").map(literal) {
                Some(Ok((subject, ""))) => (who, subject),
                Some(Err(why)) => return malformed(state, why),
                _ => return malformed(state, "unexpected query"),
            },
            Err(why) => return malformed(state, why),
        };
        let s = state.lock().unwrap();
        let ids = s
            .tasks
            .iter()
            .filter(|t| t.who_id == who && t.subject == subject)
            .map(|t| t.id.clone())
            .collect();
        return records("Task", ids);
    }
    malformed(state, "soql")
}
