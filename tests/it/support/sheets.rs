//! A loopback Google: the OAuth 2.0 token endpoint a service account uses and the Sheets API's
//! `spreadsheets.values.append` and `spreadsheets.values.get`, held to Google's own
//! descriptions and refusing the way Google does.
//!
//! Where each rule comes from:
//! - [oauth] "Using OAuth 2.0 for Server to Server Applications" (developers.google.com/
//!   identity/protocols/oauth2/service-account): the client POSTs to the key file's
//!   `token_uri` a form-encoded `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` and
//!   `assertion`, a JWT whose header is `{"alg": "RS256", "typ": "JWT", "kid": private_key_id}`
//!   (Google signs and takes RS256 only), whose claims are `iss` (the service account's
//!   email), `scope` (space-delimited), `aud` (the token URI), `iat`, and `exp` ("a maximum of
//!   1 hour after the issued time"), signed with the key file's private key. The answer is
//!   `{"access_token", "expires_in", "token_type": "Bearer"}`; an error is the OAuth 2.0 form
//!   `{"error": "invalid_grant", "error_description": …}` (400), e.g. "Invalid JWT Signature."
//!   or "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable
//!   timeframe. Check your iat and exp values in the JWT claim."
//! - [key] the service account key file: `type` ("service_account"), `project_id`,
//!   `private_key_id`, `private_key` (PKCS#8 PEM), `client_email`, `client_id`, `auth_uri`,
//!   `token_uri`, ….
//! - [append] `POST https://sheets.googleapis.com/v4/spreadsheets/{spreadsheetId}/values/{range}:append`:
//!   `range` is "the A1 notation of a range to search for a logical table of data"; query
//!   `valueInputOption` (required: `RAW`, "the values the user has entered will not be
//!   parsed and will be stored as-is", or `USER_ENTERED`, parsed as if typed: `=…` becomes a
//!   formula), `insertDataOption` (`OVERWRITE`, `INSERT_ROWS`), `includeValuesInResponse`,
//!   …; the body a `ValueRange` (`range`, `majorDimension` `ROWS`|`COLUMNS`, `values`: an
//!   array of arrays of strings, numbers, booleans); the answer an `AppendValuesResponse`
//!   (`spreadsheetId`, `tableRange`, `updates`: `UpdateValuesResponse` with `updatedRange`,
//!   `updatedRows`, `updatedColumns`, `updatedCells`). Scope `…/auth/spreadsheets` (or a
//!   Drive scope).
//! - [get] `GET …/values/{range}` with `majorDimension`, `valueRenderOption`,
//!   `dateTimeRenderOption`: a `ValueRange`; empty trailing rows and columns are left out,
//!   and `values` is absent when the range holds nothing.
//! - [a1] A1 notation: `Sheet1!A1:B2`; a sheet name with spaces or special characters is in
//!   single quotes, a quote in it doubled (`'It''s'!A1`).
//! - [limits] "Google Sheets: 50,000 characters in a single cell".
//! - [errors] Google's error JSON `{"error": {"code", "message", "status"}}`: 400
//!   `INVALID_ARGUMENT`, 401 `UNAUTHENTICATED` ("Request had invalid authentication
//!   credentials…"), 403 `PERMISSION_DENIED` ("The caller does not have permission"), 404
//!   `NOT_FOUND` ("Requested entity was not found."), 429 `RESOURCE_EXHAUSTED` ("Quota
//!   exceeded for quota metric …"), 500 `INTERNAL` ("Internal error encountered.").

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::vendor::{serve, Reply, Request};

/// The spreadsheet shared with the test service account, and its tabs.
pub const SPREADSHEET_ID: &str = "1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms";
pub const SHEET: &str = "Leads '25";
/// A spreadsheet that exists but is not shared with the account.
pub const NOT_SHARED_ID: &str = "1NotSharedWithTheServiceAccount0000000000000";
pub const CLIENT_EMAIL: &str = "onceform-test@onceform-test.iam.gserviceaccount.com";
pub const KEY_ID: &str = "3b1f0e9c2d7a4f6e8b5c1a0d9e8f7a6b5c4d3e2f";
pub const SCOPE: &str = "https://www.googleapis.com/auth/spreadsheets";
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const CELL_MAX: usize = 50_000;

/// What the next Sheets request that passes Google's checks meets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// Appends, then answers only after this long (the client has given up).
    HangAfterAppend(Duration),
    /// Answers only after this long, having appended nothing.
    HangWithoutAppending(Duration),
    /// 429 `RESOURCE_EXHAUSTED`; nothing appended.
    RateLimited,
    /// This 5xx; nothing appended.
    ServerError(u16),
    /// Every token issued so far expires now: the request gets 401 `UNAUTHENTICATED`.
    ExpireTokens,
}

/// One stored row and how its values were given.
#[derive(Debug, Clone)]
pub struct Row {
    pub cells: Vec<Value>,
    /// `RAW` or `USER_ENTERED`.
    pub input: String,
    /// Which cells Google would hold as formulas (`USER_ENTERED` and `=…`).
    pub formulas: Vec<bool>,
}

#[derive(Debug, Default)]
pub struct Google {
    /// Token requests, refused ones included.
    pub token_requests: usize,
    /// Issued tokens and when each expires.
    pub tokens: Vec<(String, Instant)>,
    /// `expires_in` of the tokens issued next.
    pub expires_in: u64,
    /// The key was deleted: every assertion is refused.
    pub key_deleted: bool,
    pub faults: VecDeque<Fault>,
    /// Rows by (spreadsheet, tab).
    pub rows: BTreeMap<(String, String), Vec<Row>>,
    /// When each append request arrived (after the token check).
    pub appends: Vec<Instant>,
    /// `values.get` requests.
    pub lookups: usize,
    /// Each refused request's rule.
    pub refused: Vec<String>,
}

#[derive(Clone)]
pub struct FakeGoogle {
    pub url: String,
    pub state: Arc<Mutex<Google>>,
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sheets").join(name))
        .unwrap()
}

impl FakeGoogle {
    pub async fn start() -> FakeGoogle {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(Google { expires_in: 3599, ..Google::default() }));
        let (s, token_uri) = (state.clone(), format!("{url}/token"));
        serve(listener, move |req| handle(s.clone(), token_uri.clone(), req));
        FakeGoogle { url, state }
    }

    /// [key] the service account's key file, its token URI this fake's.
    pub fn key_file(&self) -> String {
        json!({
            "type": "service_account",
            "project_id": "onceform-test",
            "private_key_id": KEY_ID,
            "private_key": fixture("service-account-key.pem"),
            "client_email": CLIENT_EMAIL,
            "client_id": "100000000000000000001",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": format!("{}/token", self.url),
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/onceform-test",
            "universe_domain": "googleapis.com",
        })
        .to_string()
    }

    pub fn fault(&self, fault: Fault) {
        self.state.lock().unwrap().faults.push_back(fault);
    }

    /// The rows of `tab` in the shared spreadsheet.
    pub fn rows(&self, tab: &str) -> Vec<Row> {
        let key = (SPREADSHEET_ID.to_string(), tab.to_string());
        self.state.lock().unwrap().rows.get(&key).cloned().unwrap_or_default()
    }

    pub fn token_requests(&self) -> usize {
        self.state.lock().unwrap().token_requests
    }

    pub fn refused(&self) -> Vec<String> {
        self.state.lock().unwrap().refused.clone()
    }
}

async fn handle(state: Arc<Mutex<Google>>, token_uri: String, req: Request) -> Reply {
    if req.segments == ["token"] {
        return token(&state, &token_uri, &req);
    }
    sheets(state, req).await
}

fn refuse(state: &Mutex<Google>, rule: &str, reply: Reply) -> Reply {
    state.lock().unwrap().refused.push(rule.to_string());
    reply
}

/// [oauth] an OAuth 2.0 error.
fn oauth_error(error: &str, description: &str) -> Reply {
    Some((400, String::new(), json!({"error": error, "error_description": description}).to_string()))
}

/// [errors] Google's error JSON.
fn google_error(code: u16, status: &str, message: &str) -> Reply {
    let body = json!({"error": {"code": code, "message": message, "status": status}});
    Some((code, String::new(), body.to_string()))
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// [oauth] the token endpoint.
fn token(state: &Mutex<Google>, token_uri: &str, req: &Request) -> Reply {
    state.lock().unwrap().token_requests += 1;
    let form_encoded = req
        .header("content-type")
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("application/x-www-form-urlencoded"));
    if req.method != "POST" || !form_encoded {
        return refuse(state, "token: not a form POST", oauth_error("invalid_request", "Bad Request"));
    }
    let form: BTreeMap<String, String> = url::form_urlencoded::parse(&req.body).into_owned().collect();
    if form.get("grant_type").map(String::as_str) != Some(JWT_BEARER) {
        return refuse(
            state,
            "token: grant_type",
            oauth_error("unsupported_grant_type", "Invalid grant_type"),
        );
    }
    let Some(assertion) = form.get("assertion") else {
        return refuse(
            state,
            "token: assertion",
            oauth_error("invalid_request", "Missing required parameter: assertion"),
        );
    };
    let bad_signature = || oauth_error("invalid_grant", "Invalid JWT Signature.");
    if state.lock().unwrap().key_deleted {
        return refuse(state, "token: key deleted", bad_signature());
    }
    let Ok(header) = jsonwebtoken::decode_header(assertion) else {
        return refuse(state, "token: header", bad_signature());
    };
    if header.alg != Algorithm::RS256 || header.kid.as_deref() != Some(KEY_ID) {
        return refuse(state, "token: alg/kid", bad_signature());
    }
    // The signature alone here; each claim is checked below with Google's own words.
    let mut only_signature = Validation::new(Algorithm::RS256);
    only_signature.validate_exp = false;
    only_signature.validate_aud = false;
    only_signature.required_spec_claims.clear();
    let public = DecodingKey::from_rsa_pem(fixture("service-account-key.pub.pem").as_bytes()).unwrap();
    let Ok(data) = jsonwebtoken::decode::<Value>(assertion, &public, &only_signature) else {
        return refuse(state, "token: signature", bad_signature());
    };
    let claims = data.claims;
    if claims["iss"].as_str() != Some(CLIENT_EMAIL) {
        return refuse(state, "token: iss", oauth_error("invalid_grant", "Invalid grant: account not found"));
    }
    if claims["aud"].as_str() != Some(token_uri) {
        return refuse(
            state,
            "token: aud",
            oauth_error("invalid_grant", "Invalid JWT: Failed audience check."),
        );
    }
    let scopes: Vec<&str> = claims["scope"].as_str().unwrap_or("").split(' ').collect();
    if !scopes.contains(&SCOPE) {
        return refuse(
            state,
            "token: scope",
            oauth_error("invalid_scope", "Invalid OAuth scope or ID token audience provided."),
        );
    }
    let (iat, exp, now) = (claims["iat"].as_u64(), claims["exp"].as_u64(), now_secs());
    let timely =
        matches!((iat, exp), (Some(i), Some(e)) if i <= now + 60 && e > now && e > i && e - i <= 3600);
    if !timely {
        return refuse(
            state,
            "token: iat/exp",
            oauth_error(
                "invalid_grant",
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.",
            ),
        );
    }
    let mut s = state.lock().unwrap();
    let access = format!("ya29.test-{}-{}", s.tokens.len() + 1, uuid::Uuid::new_v4().simple());
    let expires_in = s.expires_in;
    s.tokens.push((access.clone(), Instant::now() + Duration::from_secs(expires_in)));
    let body = json!({"access_token": access, "expires_in": expires_in, "token_type": "Bearer"});
    Some((200, String::new(), body.to_string()))
}

/// [a1] (sheet name, cells) of an A1 range.
fn parse_a1(range: &str) -> Option<(String, String)> {
    if let Some(rest) = range.strip_prefix('\'') {
        let mut name = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                if chars.peek() == Some(&'\'') {
                    chars.next();
                    name.push('\'');
                    continue;
                }
                let tail: String = chars.collect();
                return Some((name, tail.strip_prefix('!')?.to_string()));
            }
            name.push(c);
        }
        return None;
    }
    match range.split_once('!') {
        Some((name, cells)) if !name.contains(['\'', ' ']) => Some((name.to_string(), cells.to_string())),
        Some(_) => None,
        None => Some((range.to_string(), String::new())),
    }
}

/// [a1] a sheet name as Google writes it in a range it answers.
fn a1_name(name: &str) -> String {
    if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        name.to_string()
    } else {
        format!("'{}'", name.replace('\'', "''"))
    }
}

fn column(n: usize) -> String {
    let (mut n, mut out) = (n, String::new());
    while n > 0 {
        out.insert(0, (b'A' + ((n - 1) % 26) as u8) as char);
        n = (n - 1) / 26;
    }
    out
}

async fn sheets(state: Arc<Mutex<Google>>, req: Request) -> Reply {
    let path: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    let (spreadsheet, last) = match path.as_slice() {
        ["v4", "spreadsheets", id, "values", last] => (id.to_string(), last.to_string()),
        _ => {
            return refuse(&state, "route", google_error(404, "NOT_FOUND", "Requested entity was not found."))
        }
    };
    // [errors] the bearer token, before anything else.
    let authorized = req.bearer().is_some_and(|t| {
        let s = state.lock().unwrap();
        s.tokens.iter().any(|(issued, until)| issued == t && Instant::now() < *until)
    });
    if !authorized {
        return refuse(
            &state,
            "auth",
            google_error(
                401,
                "UNAUTHENTICATED",
                "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
            ),
        );
    }
    if spreadsheet == NOT_SHARED_ID {
        return refuse(
            &state,
            "permission",
            google_error(403, "PERMISSION_DENIED", "The caller does not have permission"),
        );
    }
    if spreadsheet != SPREADSHEET_ID {
        return refuse(
            &state,
            "spreadsheet",
            google_error(404, "NOT_FOUND", "Requested entity was not found."),
        );
    }
    let (range, append) = match last.rsplit_once(':') {
        Some((range, "append")) if req.method == "POST" => (range.to_string(), true),
        _ if req.method == "GET" => (last.clone(), false),
        _ => {
            return refuse(
                &state,
                "method",
                google_error(404, "NOT_FOUND", "Requested entity was not found."),
            )
        }
    };
    let unparsable = || google_error(400, "INVALID_ARGUMENT", &format!("Unable to parse range: {range}"));
    let Some((tab, cells)) = parse_a1(&range) else { return refuse(&state, "range", unparsable()) };
    if tab != SHEET && tab != "Sheet1" {
        return refuse(&state, "tab", unparsable());
    }
    let fault = state.lock().unwrap().faults.pop_front();
    if fault == Some(Fault::ExpireTokens) {
        state.lock().unwrap().tokens.iter_mut().for_each(|t| t.1 = Instant::now());
        return refuse(
            &state,
            "auth: expired",
            google_error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."),
        );
    }
    if append {
        state.lock().unwrap().appends.push(Instant::now());
        values_append(&state, &req, &range, (&spreadsheet, &tab), fault).await
    } else {
        state.lock().unwrap().lookups += 1;
        values_get(&state, &req, &tab, &cells)
    }
}

/// [append].
async fn values_append(
    state: &Mutex<Google>,
    req: &Request,
    range: &str,
    (spreadsheet, tab): (&str, &str),
    fault: Option<Fault>,
) -> Reply {
    let invalid = |message: &str| google_error(400, "INVALID_ARGUMENT", message);
    for (name, _) in &req.query {
        let known = [
            "valueInputOption",
            "insertDataOption",
            "includeValuesInResponse",
            "responseValueRenderOption",
            "responseDateTimeRenderOption",
        ];
        if !known.contains(&name.as_str()) {
            let m = format!(
                "Invalid JSON payload received. Unknown name \"{name}\": Cannot bind query parameter."
            );
            return refuse(state, "query", invalid(&m));
        }
    }
    let input = match req.query("valueInputOption") {
        Some(o @ ("RAW" | "USER_ENTERED")) => o.to_string(),
        Some(_) => return refuse(state, "valueInputOption", invalid("Invalid valueInputOption")),
        None => {
            return refuse(
                state,
                "valueInputOption",
                invalid("'valueInputOption' is required but not specified"),
            )
        }
    };
    if !matches!(req.query("insertDataOption"), None | Some("OVERWRITE" | "INSERT_ROWS")) {
        return refuse(state, "insertDataOption", invalid("Invalid insertDataOption"));
    }
    if !req.is_json() {
        return refuse(state, "content type", invalid("Invalid JSON payload received."));
    }
    let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
        return refuse(state, "json", invalid("Invalid JSON payload received."));
    };
    if body.get("range").is_some_and(|r| r.as_str() != Some(range)) {
        let m = format!(
            "Invalid values[0]: range in the body ({}) does not match the URL ({range})",
            body["range"]
        );
        return refuse(state, "body range", invalid(&m));
    }
    if !matches!(body.get("majorDimension").and_then(Value::as_str), None | Some("ROWS")) {
        return refuse(state, "majorDimension", invalid("this fake takes ROWS only"));
    }
    let Some(rows) = body["values"].as_array() else {
        return refuse(state, "values", invalid("Invalid values: not a list of rows"));
    };
    let mut stored = Vec::new();
    for row in rows {
        let Some(cells) = row.as_array() else {
            return refuse(state, "values", invalid("Invalid values[0]"));
        };
        if !cells.iter().all(|c| c.is_string() || c.is_number() || c.is_boolean() || c.is_null()) {
            return refuse(state, "values", invalid("Invalid values[0]: a cell is not a scalar"));
        }
        if cells.iter().any(|c| c.as_str().is_some_and(|s| s.chars().count() > CELL_MAX)) {
            let m = "Your input contains more than the maximum of 50000 characters in a single cell.";
            return refuse(state, "cell: too long", invalid(m));
        }
        let formulas = cells
            .iter()
            .map(|c| input == "USER_ENTERED" && c.as_str().is_some_and(|s| s.starts_with('=')))
            .collect();
        stored.push(Row { cells: cells.clone(), input: input.clone(), formulas });
    }
    match fault {
        Some(Fault::RateLimited) => {
            return google_error(
                429,
                "RESOURCE_EXHAUSTED",
                "Quota exceeded for quota metric 'Write requests' and limit 'Write requests per minute per user' of service 'sheets.googleapis.com' for consumer 'project_number:100000000001'.",
            )
        }
        Some(Fault::ServerError(status)) => return google_error(status, "INTERNAL", "Internal error encountered."),
        Some(Fault::HangWithoutAppending(d)) => {
            tokio::time::sleep(d).await;
            return google_error(503, "UNAVAILABLE", "The service is currently unavailable.");
        }
        _ => {}
    }
    let width = stored.iter().map(|r| r.cells.len()).max().unwrap_or(0).max(1);
    let (first, count) = {
        let mut s = state.lock().unwrap();
        let table = s.rows.entry((spreadsheet.to_string(), tab.to_string())).or_default();
        let first = table.len() + 1;
        let count = stored.len();
        table.extend(stored);
        (first, count)
    };
    if let Some(Fault::HangAfterAppend(d)) = fault {
        tokio::time::sleep(d).await;
    }
    let name = a1_name(tab);
    let last = first + count.max(1) - 1;
    let table_range = (first > 1).then(|| format!("{name}!A1:{}{}", column(width), first - 1));
    let mut answer = json!({
        "spreadsheetId": spreadsheet,
        "updates": {
            "spreadsheetId": spreadsheet,
            "updatedRange": format!("{name}!A{first}:{}{last}", column(width)),
            "updatedRows": count,
            "updatedColumns": width,
            "updatedCells": width * count,
        },
    });
    if let Some(t) = table_range {
        answer["tableRange"] = json!(t);
    }
    Some((200, String::new(), answer.to_string()))
}

/// [get] one column (`A:A`); the sheet holds rows from row 1, 1000 rows in all.
fn values_get(state: &Mutex<Google>, req: &Request, tab: &str, cells: &str) -> Reply {
    let invalid = |message: &str| google_error(400, "INVALID_ARGUMENT", message);
    for (name, _) in &req.query {
        if !["majorDimension", "valueRenderOption", "dateTimeRenderOption"].contains(&name.as_str()) {
            let m = format!(
                "Invalid JSON payload received. Unknown name \"{name}\": Cannot bind query parameter."
            );
            return refuse(state, "query", invalid(&m));
        }
    }
    let by_columns = match req.query("majorDimension") {
        None | Some("ROWS") => false,
        Some("COLUMNS") => true,
        Some(_) => return refuse(state, "majorDimension", invalid("Invalid majorDimension")),
    };
    if cells != "A:A" {
        return refuse(state, "get range", invalid("this fake reads column A only"));
    }
    let key = (SPREADSHEET_ID.to_string(), tab.to_string());
    let column_a: Vec<Value> = state
        .lock()
        .unwrap()
        .rows
        .get(&key)
        .map(|rows| rows.iter().map(|r| r.cells.first().cloned().unwrap_or(json!(""))).collect())
        .unwrap_or_default();
    let mut answer = json!({
        "range": format!("{}!A1:A1000", a1_name(tab)),
        "majorDimension": if by_columns { "COLUMNS" } else { "ROWS" },
    });
    if !column_a.is_empty() {
        answer["values"] = match by_columns {
            true => json!([column_a]),
            false => Value::Array(column_a.into_iter().map(|v| json!([v])).collect()),
        };
    }
    Some((200, String::new(), answer.to_string()))
}
