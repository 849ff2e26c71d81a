//! `salesforce`: upsert a Lead by an external ID field (idempotent); look it up by that field.
//!
//! Held to Salesforce's REST API guide, "sObject Rows by External ID": upsert is
//! `PATCH /services/data/vXX.X/sobjects/Lead/{field}/{value}` whose body names neither `Id` nor
//! the external ID field (201 created, 200 updated with `{id, success, errors, created}`,
//! 204 before API 46.0, 300 when the value matches several records); the lookup is a `GET` of
//! the same resource, which takes no parameters; errors are arrays of `{message, errorCode, fields}`.

use std::time::Duration;

use serde_json::{Map, Value};

use super::url_policy::encode_segment;
use super::{Capabilities, CrmAdapter, Lead};
use crate::effects::http::{authorize, client, id_of, lookup_failed, status_error, transport_error, Secret};
use crate::effects::{BoxFuture, Lookup, Outcome, Report};

const API_VERSION: &str = "v59.0";

pub struct Salesforce {
    client: reqwest::Client,
    instance_url: String,
    /// The Lead's external ID field (e.g. `Onceform_Ref__c`) that holds the external reference.
    external_id_field: String,
    token: Option<Secret>,
}

impl Salesforce {
    pub fn new(url: String, field: String, token: Option<Secret>, timeout: Duration) -> anyhow::Result<Self> {
        let instance_url = url.trim_end_matches('/').to_string();
        Ok(Salesforce { client: client(timeout)?, instance_url, external_id_field: field, token })
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

/// A 400 whose error list says a duplicate rule blocked the record.
fn duplicates_detected(body: &Value) -> bool {
    body.as_array().is_some_and(|errors| errors.iter().any(|e| e["errorCode"] == "DUPLICATES_DETECTED"))
}

impl CrmAdapter for Salesforce {
    fn capabilities(&self) -> Capabilities {
        Capabilities { idempotent_upsert: true, lookup: true }
    }

    fn create<'a>(&'a self, lead: &'a Lead) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let Some(url) = self.record_url(&lead.external_ref) else {
                return Report::failed(Outcome::Permanent, "bad_reference");
            };
            let req = self.client.patch(url).json(&self.body(lead));
            let resp = match authorize(req, &self.token).send().await {
                Ok(r) => r,
                Err(e) => return transport_error(&e),
            };
            let status = resp.status().as_u16();
            match status {
                204 => Report::sent(lead.external_ref.clone()).with_http(status),
                s @ 200..=299 => {
                    let body: Value = resp.json().await.unwrap_or_default();
                    Report::sent(id_of(&body, "id").unwrap_or_else(|| lead.external_ref.clone())).with_http(s)
                }
                300 => Report::failed(Outcome::Permanent, "external_id_ambiguous").with_http(status),
                400 => {
                    let refused = status_error(&resp);
                    let body: Value = resp.json().await.unwrap_or_default();
                    if !duplicates_detected(&body) {
                        return refused;
                    }
                    Report::failed(Outcome::Permanent, "duplicate_rule").with_http(status)
                }
                _ => status_error(&resp),
            }
        })
    }

    fn lookup<'a>(&'a self, external_ref: &'a str) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            let Some(url) = self.record_url(external_ref) else { return lookup_failed("bad_reference") };
            let resp = match authorize(self.client.get(url), &self.token).send().await {
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
        Salesforce::new(base, "Onceform_Ref__c".into(), Some(Secret("tok".into())), Duration::from_secs(5))
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
        let want = Report::failed(Outcome::Permanent, "duplicate_rule").with_http(400);
        assert_eq!(upsert("400 Bad Request", "", body).await, want);
    }

    #[tokio::test]
    async fn multiple_choices_300_is_permanent_external_id_ambiguous() {
        let want = Report::failed(Outcome::Permanent, "external_id_ambiguous").with_http(300);
        assert_eq!(upsert("300 Multiple Choices", "", r#"["/a","/b"]"#).await, want);
    }

    #[tokio::test]
    async fn server_error_500_is_ambiguous() {
        let report = upsert("500 Internal Server Error", "", "[]").await;
        assert_eq!(report, Report::failed(Outcome::Ambiguous, "http_500").with_http(500));
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
