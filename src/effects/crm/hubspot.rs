//! `hubspot`: create a contact carrying the external reference in a unique property; look it up by it.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::http::{authorize, client, id_of, lookup_failed, status_error, transport_error, Secret};
use super::salesforce::encode_segment;
use super::{Capabilities, CrmAdapter, Lead};
use crate::effects::{BoxFuture, Lookup, Report};

pub struct Hubspot {
    client: reqwest::Client,
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
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let base_url = url.trim_end_matches('/').to_string();
        Ok(Hubspot { client: client(timeout)?, base_url, id_property, token })
    }
}

/// The ID in HubSpot's conflict message: "Contact already exists. Existing ID: 12345".
fn existing_id(body: &Value) -> Option<String> {
    const MARK: &str = "Existing ID:";
    let message = body["message"].as_str()?;
    let rest = &message[message.find(MARK)? + MARK.len()..];
    let id: String = rest.trim_start().chars().take_while(char::is_ascii_digit).collect();
    (!id.is_empty()).then_some(id)
}

impl CrmAdapter for Hubspot {
    fn capabilities(&self) -> Capabilities {
        Capabilities { idempotent_upsert: false, lookup: true }
    }

    fn create<'a>(&'a self, lead: &'a Lead) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let mut properties: Map<String, Value> =
                lead.fields.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
            properties.insert(self.id_property.clone(), Value::String(lead.external_ref.clone()));
            let url = format!("{}/crm/v3/objects/contacts", self.base_url);
            let req = self.client.post(url).json(&json!({ "properties": properties }));
            let resp = match authorize(req, &self.token).send().await {
                Ok(r) => r,
                Err(e) => return transport_error(&e),
            };
            let status = resp.status().as_u16();
            if resp.status().is_success() {
                let body: Value = resp.json().await.unwrap_or_default();
                let id = id_of(&body, "id").unwrap_or_else(|| lead.external_ref.clone());
                return Report::sent(id).with_http(status);
            }
            let refused = status_error(&resp);
            let body: Value = if status == 409 { resp.json().await.unwrap_or_default() } else { Value::Null };
            existing_id(&body).map_or(refused, |id| Report::sent(id).with_http(status))
        })
    }

    fn lookup<'a>(&'a self, external_ref: &'a str) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            let (r, p) = (encode_segment(external_ref), encode_segment(&self.id_property));
            let url = format!("{}/crm/v3/objects/contacts/{r}?idProperty={p}", self.base_url);
            let resp = match authorize(self.client.get(url), &self.token).send().await {
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
    use crate::effects::Outcome;

    const REF: &str = "0193-ab:crm_lead:0";

    fn hubspot(base: String) -> Hubspot {
        Hubspot::new(base, "onceform_ref".into(), Some(Secret("tok".into())), Duration::from_secs(5)).unwrap()
    }

    async fn create(status: &str, body: &str) -> (Report, fake::Received) {
        let (base, rx) = fake::serve(status, "", body).await;
        let lead = Lead { external_ref: REF.into(), fields: [("email".into(), "a@b.c".into())].into() };
        (hubspot(base).create(&lead).await, rx.await.unwrap())
    }

    #[tokio::test]
    async fn create_201_sends_properties_and_returns_id() {
        let (report, got) = create("201 Created", r#"{"id":"901"}"#).await;
        assert_eq!(report, Report::sent("901").with_http(201));
        assert_eq!(got.request_line(), "POST /crm/v3/objects/contacts HTTP/1.1");
        assert_eq!(got.header("authorization"), Some("Bearer tok"));
        let body: Value = serde_json::from_str(&got.body).unwrap();
        assert_eq!(body, json!({"properties": {"email": "a@b.c", "onceform_ref": REF}}));
    }

    #[tokio::test]
    async fn conflict_409_with_existing_id_is_sent() {
        let body = r#"{"status":"error","message":"Contact already exists. Existing ID: 12345","category":"CONFLICT"}"#;
        assert_eq!(create("409 Conflict", body).await.0, Report::sent("12345").with_http(409));
    }

    #[tokio::test]
    async fn conflict_409_without_id_is_permanent() {
        let (report, _) = create("409 Conflict", r#"{"message":"Conflict"}"#).await;
        assert_eq!(report, Report::failed(Outcome::Permanent, "http_409").with_http(409));
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
