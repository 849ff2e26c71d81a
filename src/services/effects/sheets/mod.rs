//! `sheets`: one row per submission appended to a Google Sheets tab
//! (`POST {api_url}/v4/spreadsheets/{spreadsheetId}/values/{range}:append`, with
//! `valueInputOption=RAW` and `insertDataOption=INSERT_ROWS`), as a service account
//! (`token`: the key file's JSON is read from the environment, `credentials_env`, and never
//! logged). The row: the record's key (the key column, A), the reference (`OF-…`), the time
//! received (RFC 3339, UTC), the form's title, the route, then the values of the fields
//! `[forms.F.sheets] fields` names, in that order (nothing else the visitor typed). `RAW`
//! keeps every value as text: a visitor's `=HYPERLINK(…)` is never a formula. A cell holds at
//! most 50,000 characters (Google's limit); a longer value is cut, `…` marking the cut.
//!
//! Sheets takes no idempotency key, but the key column can be read: an append that may have
//! happened (a timeout, a dropped connection, a 5xx) is UNKNOWN, and reconciling it reads
//! column A (`values.get` of `'TAB'!A:A`) before anything is sent again: the key is there,
//! SENT (its cell as the reference); it is not, sent again. A 429 (`RESOURCE_EXHAUSTED`) and
//! a 503 are retried after the backoff (or `Retry-After`); a 401 drops the token and tries
//! once more with a new one; any other refusal (403 `PERMISSION_DENIED`: the spreadsheet is
//! not shared with the account; 404; 400) is final, with Google's `error.message` on the
//! attempt.

mod token;

use std::collections::BTreeMap;
use std::sync::Arc;

use reqwest::{RequestBuilder, Response, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};

use self::token::Account;
use super::chat::{clip, field_problems, one_line};
use super::http::{
    client, encode_segment, excerpt, read_head, status_report, url_policy, Client, Reach, Secret,
    ServerErrors,
};
use super::settings::settings_of;
use super::{BoxFuture, Deps, Effect, Job, Kind, Lookup, Outcome, Report, Settings};
use crate::base::format::rfc3339;
use crate::config::{Config, FormConfig};
use crate::domain::{EffectKind, FieldType, FileRef, SEVERAL};

const SHEETS: EffectKind = EffectKind::named("sheets");

/// Characters one cell holds at most (Google's limit).
pub const CELL_MAX: usize = 50_000;

/// The most of a key column a lookup reads.
const LOOKUP_MAX_BYTES: usize = 32 * 1024 * 1024;

/// `[forms.F.sheets]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SheetsSettings {
    /// The spreadsheet's ID (in its URL: `/spreadsheets/d/ID/edit`).
    spreadsheet_id: String,
    /// The tab the rows go to.
    #[serde(default = "default_sheet")]
    sheet: String,
    /// The environment variable holding the service account's key file (its whole JSON).
    credentials_env: String,
    /// The fields whose values follow the fixed columns (none by default).
    #[serde(default)]
    fields: Vec<String>,
    /// The Sheets API's base URL (a test's).
    #[serde(default = "default_api_url")]
    api_url: String,
}

fn default_sheet() -> String {
    "Sheet1".into()
}

fn default_api_url() -> String {
    "https://sheets.googleapis.com".into()
}

/// Whether `id` looks like a spreadsheet ID (letters, digits, `-`, `_`).
fn is_spreadsheet_id(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The tab's name as A1 notation quotes it: `'It''s'`.
fn quoted(sheet: &str) -> String {
    format!("'{}'", sheet.replace('\'', "''"))
}

pub struct SheetsKind;

impl Kind for SheetsKind {
    fn name(&self) -> EffectKind {
        SHEETS
    }

    fn settings(&self, table: toml::Value) -> Option<Result<Settings, String>> {
        Some(settings_of::<SheetsSettings>(table))
    }

    fn check(&self, at: &str, form: &FormConfig) -> Vec<String> {
        let listed = form.effects.contains(&SHEETS);
        let Some(s) = form.settings.get::<SheetsSettings>(&SHEETS) else {
            return match listed {
                true => {
                    vec![format!("{at}.sheets: the sheets effect needs spreadsheet_id and credentials_env")]
                }
                false => Vec::new(),
            };
        };
        let mut out = Vec::new();
        if !listed {
            out.push(format!("{at}.sheets: set, but `sheets` is not in {at}.effects"));
        }
        if !is_spreadsheet_id(s.spreadsheet_id.trim()) {
            out.push(format!(
                "{at}.sheets.spreadsheet_id: not a spreadsheet ID (letters, digits, - and _, as in /spreadsheets/d/ID/edit)"
            ));
        }
        if s.sheet.trim().is_empty() {
            out.push(format!("{at}.sheets.sheet: names no tab"));
        }
        if s.credentials_env.is_empty() {
            out.push(format!("{at}.sheets.credentials_env: names no variable"));
        }
        out.extend(api_url_problem(&format!("{at}.sheets.api_url"), &s.api_url));
        out.extend(field_problems(&format!("{at}.sheets"), form, &s.fields));
        out
    }

    /// The key file in `credentials_env`, as `effect` reads it at start.
    fn secret_problems(
        &self,
        at: &str,
        form: &FormConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        let Some(s) = form.settings.get::<SheetsSettings>(&SHEETS).filter(|s| !s.credentials_env.is_empty())
        else {
            return Vec::new();
        };
        account(&format!("{at}.sheets.credentials_env"), &s.credentials_env, env(&s.credentials_env))
            .err()
            .into_iter()
            .collect()
    }

    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        let mut targets = BTreeMap::new();
        // One account (and one token) per key file, whichever forms use it.
        let mut accounts: BTreeMap<String, Arc<Account>> = BTreeMap::new();
        for (name, form) in &deps.config.forms {
            let Some(s) = form.settings.get::<SheetsSettings>(&SHEETS).filter(|_| form.lists(&SHEETS)) else {
                continue;
            };
            let at = format!("forms.{name}.sheets");
            if let Some(problem) = api_url_problem(&format!("{at}.api_url"), &s.api_url) {
                anyhow::bail!(problem);
            }
            let id = s.spreadsheet_id.trim();
            if !is_spreadsheet_id(id) {
                anyhow::bail!("{at}.spreadsheet_id: not a spreadsheet ID");
            }
            let account = match accounts.get(&s.credentials_env) {
                Some(a) => a.clone(),
                None => {
                    let var = deps.secrets.var(&s.credentials_env);
                    let a = Arc::new(
                        account(&format!("{at}.credentials_env"), &s.credentials_env, var)
                            .map_err(anyhow::Error::msg)?,
                    );
                    accounts.insert(s.credentials_env.clone(), a.clone());
                    a
                }
            };
            let base = format!("{}/v4/spreadsheets/{id}/values", s.api_url.trim().trim_end_matches('/'));
            let tab = quoted(s.sheet.trim());
            let (Some(append), Some(keys)) =
                (encode_segment(&format!("{tab}!A1")), encode_segment(&format!("{tab}!A:A")))
            else {
                anyhow::bail!("{at}.sheet: names no tab");
            };
            targets.insert(
                name.clone(),
                Target {
                    append_url: format!("{base}/{append}:append"),
                    keys_url: format!("{base}/{keys}"),
                    tab,
                    fields: s.fields.clone(),
                    account,
                },
            );
        }
        Ok(Arc::new(Sheets {
            client: client(deps.timeout, Reach::Public)?,
            targets,
            config: deps.config.clone(),
        }))
    }
}

/// The account of the key file in the variable `var` (`value`; the setting is `at`), or
/// what is wrong with it (naming the variable, never quoting it).
fn account(at: &str, var: &str, value: Option<String>) -> Result<Account, String> {
    let json = value.filter(|v| !v.trim().is_empty());
    let json = json.ok_or_else(|| format!("{at}: the environment variable {var} is not set"))?;
    Account::from_json(&json).map_err(|e| format!("{at}: the variable {var} {e}"))
}

/// What is wrong with the API's URL (`at` names the setting).
fn api_url_problem(at: &str, url: &str) -> Option<String> {
    url_policy::check(at, url, false)
        .err()
        .map(|_| format!("{at}: must be an https:// URL (http:// only to loopback)"))
}

/// Where one form's rows go.
struct Target {
    /// `…/values/'TAB'!A1:append` (encoded).
    append_url: String,
    /// `…/values/'TAB'!A:A` (encoded): the key column.
    keys_url: String,
    /// The tab, quoted.
    tab: String,
    fields: Vec<String>,
    account: Arc<Account>,
}

/// No `Debug`: the accounts hold keys and tokens.
struct Sheets {
    client: Client,
    /// By form name.
    targets: BTreeMap<String, Target>,
    config: Arc<Config>,
}

/// The row of `job` (a submission of `form`): key, reference, time received, title, route,
/// then the named fields (empty where the visitor left one blank), each cut to a cell.
fn row(form: &FormConfig, job: &Job, fields: &[String]) -> Vec<String> {
    let title = one_line(form.title_in(form.email_locale()));
    let fixed = [
        job.effect_key.clone(),
        job.reference(),
        rfc3339(job.received_at),
        title,
        job.route.clone().unwrap_or_default(),
    ];
    let named = fields.iter().map(|name| {
        let value = job.fields.get(name).cloned().unwrap_or_default();
        match form.field(name) {
            Some(f) if f.kind == FieldType::File => FileRef::shown_all(&value, "; "),
            Some(f) if f.takes_several() => value.replace(SEVERAL, "; "),
            _ => value,
        }
    });
    fixed.into_iter().chain(named).map(|v| clip(&v, CELL_MAX)).collect()
}

/// Google's words on a refusal (`{"error": {"code", "message", "status"}}`): `STATUS: message`.
fn words(body: &Value) -> Option<String> {
    let e = &body["error"];
    match (e["status"].as_str(), e["message"].as_str()) {
        (Some(status), Some(message)) => Some(format!("{status}: {message}")),
        (None, Some(message)) => Some(message.to_string()),
        (Some(status), None) => Some(status.to_string()),
        (None, None) => None,
    }
}

/// A refused append: classified as an API that may have acted (a 5xx is UNKNOWN, looked up
/// before anything is resent; 429 and 503 retried after `Retry-After` or the backoff; other
/// 4xx final), with Google's words.
async fn refused(resp: Response) -> Report {
    let report = status_report(&resp, ServerErrors::MayHaveActed);
    let head = read_head(resp).await;
    let body: Value = serde_json::from_slice(&head).unwrap_or(Value::Null);
    let detail = words(&body).and_then(|w| excerpt(w.as_bytes())).or_else(|| excerpt(&head));
    report.with_detail(detail)
}

impl Sheets {
    /// Sends the request `make` builds with a token; a 401 drops the token and sends once
    /// more with a new one. `Err`: no token could be had.
    async fn call(
        &self,
        account: &Account,
        make: impl Fn() -> RequestBuilder,
    ) -> Result<Result<Response, Report>, Report> {
        let mut renewed = false;
        loop {
            let token: Secret = account.token(&self.client).await?;
            let sent = self.client.send(make().bearer_auth(&token.0)).await;
            match sent {
                Ok(resp) if resp.status() == StatusCode::UNAUTHORIZED && !renewed => {
                    account.forget(&token).await;
                    renewed = true;
                }
                other => return Ok(other),
            }
        }
    }

    /// The key column of `target`: the row (from 1) holding `key`, if any.
    async fn find(&self, target: &Target, key: &str) -> Lookup {
        let make = || self.client.get(&target.keys_url).query(&[("majorDimension", "COLUMNS")]);
        let resp = match self.call(&target.account, make).await {
            Err(report) | Ok(Err(report)) => {
                return super::http::lookup_failed(report.error_class.unwrap_or_else(|| "error".into()))
            }
            Ok(Ok(resp)) => resp,
        };
        if !resp.status().is_success() {
            return super::http::lookup_failed(format!("http_{}", resp.status().as_u16()));
        }
        let Some(bytes) = read_at_most(resp, LOOKUP_MAX_BYTES).await else {
            return super::http::lookup_failed("lookup_too_large");
        };
        let Ok(body) = serde_json::from_slice::<Value>(&bytes) else {
            return super::http::lookup_failed("lookup_unreadable");
        };
        let column = body["values"][0].as_array().cloned().unwrap_or_default();
        match column.iter().position(|v| v.as_str() == Some(key)) {
            Some(i) => {
                let first = first_row(body["range"].as_str().unwrap_or("")).unwrap_or(1);
                Lookup::Found { provider_ref: format!("{}!A{}", target.tab, first + i as u64) }
            }
            None => Lookup::Absent,
        }
    }
}

/// The first row of an A1 range Google answers (`Sheet1!A1:A20` → 1).
fn first_row(range: &str) -> Option<u64> {
    let cells = range.rsplit_once('!').map_or(range, |(_, c)| c);
    let start = cells.split(':').next()?;
    start.trim_start_matches(|c: char| c.is_ascii_alphabetic()).parse().ok()
}

/// The body, unless it is longer than `max` bytes (within the client's timeout).
async fn read_at_most(mut resp: Response, max: usize) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) if body.len() + chunk.len() <= max => body.extend_from_slice(&chunk),
            Ok(Some(_)) | Err(_) => return None,
            Ok(None) => return Some(body),
        }
    }
}

impl Effect for Sheets {
    fn can_reconcile(&self) -> bool {
        true
    }

    fn idempotent(&self) -> bool {
        false
    }

    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let (Some(target), Some(form)) = (self.targets.get(&job.form), self.config.forms.get(&job.form))
            else {
                return Report::failed(Outcome::Permanent, "sheets_not_configured");
            };
            let body = json!({ "majorDimension": "ROWS", "values": [row(form, job, &target.fields)] });
            let make = || {
                self.client
                    .post(&target.append_url)
                    .query(&[("valueInputOption", "RAW"), ("insertDataOption", "INSERT_ROWS")])
                    .json(&body)
            };
            match self.call(&target.account, make).await {
                Err(report) | Ok(Err(report)) => report,
                Ok(Ok(resp)) if resp.status().is_success() => {
                    let status = resp.status().as_u16();
                    // Appended: the cells it wrote when the answer can be read, else the key.
                    let answer: Option<Value> = serde_json::from_slice(&read_head(resp).await).ok();
                    let range = answer.as_ref().and_then(|a| a["updates"]["updatedRange"].as_str());
                    Report::sent(range.unwrap_or(&job.effect_key)).with_http(status)
                }
                Ok(Ok(resp)) => refused(resp).await,
            }
        })
    }

    fn reconcile<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            match self.targets.get(&job.form) {
                Some(target) => self.find(target, &job.effect_key).await,
                None => super::http::lookup_failed("sheets_not_configured"),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// check-config's problems of the demo form with `effects` and `table` as its sheets table.
    fn problems(effects: &str, table: &str) -> Vec<String> {
        crate::services::effects::demo_problems(
            effects,
            &format!(
                "[forms.contact.sheets]
{table}"
            ),
            "sheets",
        )
    }

    #[test]
    fn check_config_names_each_wrong_setting() {
        let listed = r#"effects = ["sheets"]"#;
        let good = "spreadsheet_id = \"1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms\"\ncredentials_env = \"K\"\nfields = [\"message\"]\n";
        assert_eq!(problems(listed, good), Vec::<String>::new());
        assert_eq!(
            problems(
                listed,
                "spreadsheet_id = \"a/../b\"\nsheet = \" \"\ncredentials_env = \"\"\napi_url = \"http://sheets.example\"\nfields = [\"phone\"]\n"
            ),
            [
                "forms.contact.sheets.spreadsheet_id: not a spreadsheet ID (letters, digits, - and _, as in /spreadsheets/d/ID/edit)",
                "forms.contact.sheets.sheet: names no tab",
                "forms.contact.sheets.credentials_env: names no variable",
                "forms.contact.sheets.api_url: must be an https:// URL (http:// only to loopback)",
                "forms.contact.sheets.fields: `phone` is not a field of this form",
            ]
        );
        assert_eq!(
            problems(r#"effects = []"#, good),
            ["forms.contact.sheets: set, but `sheets` is not in forms.contact.effects"]
        );
    }

    #[test]
    fn a_tab_is_quoted_and_stays_one_segment() {
        assert_eq!(quoted("It's"), "'It''s'");
        assert_eq!(
            encode_segment(&format!("{}!A:A", quoted("Q1/Leads #2"))).unwrap(),
            "%27Q1%2FLeads%20%232%27%21A%3AA"
        );
        assert_eq!(first_row("'Leads'!A3:A9"), Some(3));
        assert_eq!(first_row("Sheet1!A1"), Some(1));
        assert_eq!(first_row("nonsense"), None);
    }

    #[test]
    fn a_row_is_cut_at_googles_cell_limit() {
        let long = "x".repeat(CELL_MAX + 10);
        let cut = clip(&long, CELL_MAX);
        assert_eq!(cut.chars().count(), CELL_MAX);
        assert!(cut.ends_with('…'));
    }
}
