//! A loopback Microsoft Teams webhook (a Workflows "When a Teams webhook request is received"
//! trigger) that holds posted cards to Microsoft's own description and refuses anything else
//! with an Azure error body.
//!
//! Where each rule comes from:
//! - [url] Azure Logic Apps' "Workflow Triggers - List Callback Url" reference: a trigger's
//!   URL is `…/workflows/{id}/triggers/{trigger}/paths/invoke?api-version=…&sp=…&sv=1.0&
//!   sig=…`, the `sig` being its shared access signature (the only authentication).
//! - [card] MicrosoftDocs/msteams-docs, `webhooks-and-connectors/how-to/connectors-using.md`,
//!   "Send adaptive cards using an incoming webhook": the body is `{"type": "message",
//!   "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive",
//!   "contentUrl": null, "content": {"$schema", "type": "AdaptiveCard", "version", "body"}}]}`;
//!   "The `type` field must be `message`", "The `contentType` field must be set to adaptive
//!   card type", "The `content` object is the card formatted in JSON"; every native element
//!   is supported but `Action.Submit` (the actions are `Action.OpenUrl`, `Action.ShowCard`,
//!   `Action.ToggleVisibility`).
//! - [limits] the same page, "Rate limiting for connectors": requests beyond the window are
//!   throttled; the old connectors said so in a 2xx body reading "Microsoft Teams endpoint
//!   returned HTTP error 429". Workflows answer a throttled request 429 with `Retry-After`.
//! - [azure] Azure's error body `{"error": {"code", "message"}}`; the codes below name the
//!   kind of refusal and are not quoted from a list.
//! - [accepted] a Request trigger without a Response action answers `202 Accepted` with no
//!   body once the run is queued.
//!
//! A message's size is held to 28 KB, the limit Teams sets on a message with its cards.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::chat::{Fault, Log, Posted};
use super::vendor::{serve, Reply, Request};

pub const WORKFLOW_ID: &str = "fb9c8d79b15f41ce9b12861862f43546";
pub const SIG: &str = "IxEQ_ygZf6WNEQCbjV0Vs6p6Y4DyNEJVAa86U5B4xhk";
const CARD_BYTES_MAX: usize = 28 * 1024;

#[derive(Clone)]
pub struct FakeTeams {
    pub url: String,
    pub state: Arc<Mutex<Log>>,
}

impl FakeTeams {
    pub async fn start() -> FakeTeams {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state: Arc<Mutex<Log>> = Arc::default();
        let s = state.clone();
        serve(listener, move |req| handle(s.clone(), req));
        FakeTeams { url, state }
    }

    /// The trigger's URL as the Workflows app shows it, signed with `sig`.
    pub fn webhook_url_signed(&self, sig: &str) -> String {
        format!(
            "{}/workflows/{WORKFLOW_ID}/triggers/manual/paths/invoke?api-version=2016-06-01\
             &sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig={sig}",
            self.url
        )
    }

    pub fn webhook_url(&self) -> String {
        self.webhook_url_signed(SIG)
    }

    pub fn posted(&self) -> Vec<Posted> {
        self.state.lock().unwrap().posted.clone()
    }

    pub fn refused(&self) -> Vec<String> {
        self.state.lock().unwrap().refused.clone()
    }
}

/// [azure] an error body with its status.
fn error(status: u16, code: &str, message: &str) -> Reply {
    Some((status, String::new(), json!({"error": {"code": code, "message": message}}).to_string()))
}

fn refuse(state: &Mutex<Log>, rule: &str, reply: Reply) -> Reply {
    state.lock().unwrap().refused.push(rule.to_string());
    reply
}

async fn handle(state: Arc<Mutex<Log>>, req: Request) -> Reply {
    state.lock().unwrap().arrivals.push(Instant::now());
    let path: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    // [url] the trigger's path and its query.
    let ["workflows", id, "triggers", "manual", "paths", "invoke"] = path.as_slice() else {
        return refuse(&state, "route", error(404, "NotFound", "The requested resource was not found."));
    };
    if *id != WORKFLOW_ID {
        return refuse(
            &state,
            "workflow",
            error(404, "WorkflowNotFound", "The workflow could not be found."),
        );
    }
    if req.method != "POST" {
        return refuse(&state, "method", error(405, "MethodNotAllowed", "The trigger takes POST requests."));
    }
    if req.query("api-version").is_none_or(str::is_empty) {
        return refuse(
            &state,
            "api-version",
            error(400, "MissingApiVersionParameter", "The api-version query parameter is required."),
        );
    }
    if req.query("sig") != Some(SIG) || req.query("sv") != Some("1.0") || req.query("sp").is_none() {
        return refuse(
            &state,
            "sig",
            error(
                401,
                "DirectApiInvalidAuthorizationSignature",
                "The provided callback signature is not valid.",
            ),
        );
    }
    let Ok(body) =
        serde_json::from_slice::<Value>(&req.body).map_err(|_| ()).and_then(|b| match req.is_json() {
            true => Ok(b),
            false => Err(()),
        })
    else {
        return refuse(
            &state,
            "json",
            error(400, "InvalidRequestContent", "The request content is not valid JSON."),
        );
    };
    if req.body.len() > CARD_BYTES_MAX {
        return refuse(&state, "size", error(413, "MessageTooLarge", "The message is larger than 28 KB."));
    }
    if let Some(rule) = card_problem(&body) {
        return refuse(&state, "card", error(400, "TriggerInputSchemaMismatch", &rule));
    }
    // [limits] throttling, or the service failing, before a run is queued.
    let fault = state.lock().unwrap().faults.pop_front();
    match fault {
        Some(Fault::RateLimited(seconds)) => {
            let headers = format!("retry-after: {}\r\n", seconds.ceil() as u64);
            let body = json!({"error": {"code": "TooManyRequests",
                "message": "Rate limit is exceeded. Try again later."}});
            return Some((429, headers, body.to_string()));
        }
        Some(Fault::ThrottledIn200) => {
            let said = "Microsoft Teams endpoint returned HTTP error 429 with ContextId tcid=0,server=msgapi-production,cv=x.0";
            return Some((200, String::new(), said.to_string()));
        }
        Some(Fault::ServerError(status)) => {
            return error(status, "ServiceUnavailable", "The service is temporarily unavailable.")
        }
        _ => {}
    }
    let id = format!("run-{}", state.lock().unwrap().posted.len() + 1);
    state.lock().unwrap().posted.push(Posted { body, id });
    if let Some(Fault::SlowAfterPost(d)) = fault {
        tokio::time::sleep(d).await;
    }
    // [accepted]
    Some((202, String::new(), String::new()))
}

/// [card] what the message and its Adaptive Card must be; the first rule broken.
fn card_problem(body: &Value) -> Option<String> {
    if body["type"] != "message" {
        return Some("The 'type' field must be 'message'.".into());
    }
    let attachments = body["attachments"].as_array().filter(|a| !a.is_empty());
    let Some(attachments) = attachments else {
        return Some("The 'attachments' array must hold at least one card.".into());
    };
    for a in attachments {
        if a["contentType"] != "application/vnd.microsoft.card.adaptive" {
            return Some("The 'contentType' must be 'application/vnd.microsoft.card.adaptive'.".into());
        }
        let card = &a["content"];
        if card["type"] != "AdaptiveCard" {
            return Some("The card's 'type' must be 'AdaptiveCard'.".into());
        }
        if !card["version"].as_str().is_some_and(|v| v.split('.').all(|p| p.parse::<u8>().is_ok())) {
            return Some("The card needs a 'version' such as '1.4'.".into());
        }
        for element in card["body"].as_array().into_iter().flatten() {
            if let Some(problem) = element_problem(element) {
                return Some(problem);
            }
        }
        for action in card["actions"].as_array().into_iter().flatten() {
            match action["type"].as_str() {
                Some("Action.OpenUrl") if action["url"].as_str().is_some_and(|u| u.starts_with("http")) => {}
                Some("Action.OpenUrl") => return Some("Action.OpenUrl needs a 'url'.".into()),
                Some("Action.ShowCard" | "Action.ToggleVisibility") => {}
                other => return Some(format!("The action type {other:?} is not supported.")),
            }
        }
    }
    None
}

/// The Adaptive Card elements this fake knows; their texts must be strings.
fn element_problem(e: &Value) -> Option<String> {
    match e["type"].as_str() {
        Some("TextBlock") if e["text"].is_string() => None,
        Some("RichTextBlock") => {
            let Some(inlines) = e["inlines"].as_array() else {
                return Some("A RichTextBlock needs its 'inlines'.".into());
            };
            inlines.iter().find_map(|i| match (i.as_str(), i["type"].as_str(), i["text"].is_string()) {
                (Some(_), _, _) | (None, Some("TextRun"), true) => None,
                _ => Some("A RichTextBlock's inlines are TextRuns with a 'text'.".to_string()),
            })
        }
        Some("FactSet") => None,
        Some("Container") => match e["items"].as_array() {
            Some(items) => items.iter().find_map(element_problem),
            None => Some("A Container needs its 'items'.".into()),
        },
        other => Some(format!("The element type {other:?} is not valid here.")),
    }
}
