//! A table of malformed requests: each gets the CONTRACT's status and problem type, and
//! none leaves a submission or side-effect row behind.

use reqwest::header::HeaderValue;
use serde_json::Value;

use crate::on_both_backends;
use crate::support::{problem_type, spawn_app, Backend};

const GOOD: &str = r#"{"name":"Ada","email":"ada@example.com","topic":"Sales","message":"Hi"}"#;
const KEY: &[u8] = b"malformed-key-0000000001";

struct Case {
    name: &'static str,
    form: &'static str,
    key: Option<&'static [u8]>,
    content_type: Option<&'static str>,
    body: Vec<u8>,
    status: u16,
    problem: &'static str,
}

fn case(name: &'static str, body: impl Into<Vec<u8>>, status: u16, problem: &'static str) -> Case {
    Case {
        name,
        form: "contact",
        key: Some(KEY),
        content_type: Some("application/json"),
        body: body.into(),
        status,
        problem,
    }
}

fn cases() -> Vec<Case> {
    let with_body_key = |k: &str| GOOD.replacen('{', &format!(r#"{{"operation_id":"{k}","#), 1);
    vec![
        case("truncated JSON", r#"{"name":"Ada""#, 400, "malformed-body"),
        case("trailing garbage", format!("{GOOD} x"), 400, "malformed-body"),
        case("array instead of object", "[1,2]", 400, "malformed-body"),
        case("JSON null", "null", 400, "malformed-body"),
        case("number for a text field", GOOD.replace(r#""Ada""#, "42"), 400, "malformed-body"),
        case("boolean for a text field", GOOD.replace(r#""Ada""#, "true"), 400, "malformed-body"),
        case(
            "object for a text field",
            GOOD.replace(r#""Ada""#, r#"{"first":"Ada"}"#),
            400,
            "malformed-body",
        ),
        case("deeply nested", format!("{}{}", "[".repeat(500), "]".repeat(500)), 400, "malformed-body"),
        case("invalid UTF-8", b"{\"name\":\"\xff\xfe\"}".to_vec(), 400, "malformed-body"),
        case("empty body", "", 400, "malformed-body"),
        case("whitespace body", "  \n ", 400, "malformed-body"),
        case(
            "operation_id of the wrong type",
            GOOD.replacen('{', r#"{"operation_id":17,"#, 1),
            400,
            "malformed-body",
        ),
        case("unknown field", GOOD.replacen('{', r#"{"colour":"red","#, 1), 422, "validation-failed"),
        case(
            "unknown field set to null",
            GOOD.replacen('{', r#"{"colour":null,"#, 1),
            422,
            "validation-failed",
        ),
        case("a field given twice", GOOD.replacen('{', r#"{"name":"Eve","#, 1), 422, "validation-failed"),
        Case {
            key: Some(b"keyless:0123456789abcdef"),
            ..case("reserved key prefix", GOOD, 400, "operation-id-invalid")
        },
        case("huge body", format!(r#"{{"message":"{}"}}"#, "x".repeat(200_000)), 413, "payload-too-large"),
        Case { content_type: Some("text/plain"), ..case("text/plain", GOOD, 415, "unsupported-media-type") },
        Case { content_type: None, ..case("no content type", GOOD, 415, "unsupported-media-type") },
        Case {
            content_type: Some("application/x-www-form-urlencoded"),
            ..case("form encoding on the API", "name=Ada", 415, "unsupported-media-type")
        },
        Case { key: Some(b"short"), ..case("key too short", GOOD, 400, "operation-id-invalid") },
        Case { key: Some(&[b'k'; 256]), ..case("key too long", GOOD, 400, "operation-id-invalid") },
        Case {
            key: Some(b"has spaces in the key!!"),
            ..case("key with bad characters", GOOD, 400, "operation-id-invalid")
        },
        Case {
            key: Some(b"\"unterminated-sf-string-key"),
            ..case("broken sf-string", GOOD, 400, "operation-id-invalid")
        },
        Case {
            key: Some(b"caf\xc3\xa9-operation-0000001"),
            ..case("non-ASCII key", GOOD, 400, "operation-id-invalid")
        },
        Case {
            key: None,
            ..case("malformed key in the body", with_body_key("bad key!"), 400, "operation-id-invalid")
        },
        case(
            "header and body keys differ",
            with_body_key("another-key-00000000001"),
            400,
            "operation-id-mismatch",
        ),
        Case { key: None, ..case("no key at all", GOOD, 400, "operation-id-missing") },
        Case { form: "no-such-form", ..case("unknown form", GOOD, 404, "not-found") },
    ]
}

on_both_backends!(every_malformed_request_gets_its_problem_and_stores_nothing);

async fn every_malformed_request_gets_its_problem_and_stores_nothing(backend: Backend) {
    let app = spawn_app(backend).await;
    let cases = cases();
    assert!(cases.len() >= 20);
    for c in &cases {
        let mut req =
            app.client.post(app.url(&format!("/api/forms/{}/submissions", c.form))).body(c.body.clone());
        if let Some(k) = c.key {
            req = req.header("Idempotency-Key", HeaderValue::from_bytes(k).unwrap());
        }
        if let Some(ct) = c.content_type {
            req = req.header("Content-Type", ct);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status().as_u16(), c.status, "{}", c.name);
        assert_eq!(resp.headers()["content-type"], "application/problem+json", "{}", c.name);
        let problem: Value = resp.json().await.unwrap();
        assert_eq!(problem_type(&problem), c.problem, "{}: {problem}", c.name);
        assert_eq!(problem["status"], c.status, "{}", c.name);
        assert!(problem["title"].is_string() && problem["detail"].is_string(), "{}", c.name);
    }
    let stats = app.stats().await;
    assert_eq!((stats.submissions, stats.effects_total()), (0, 0));
    assert_eq!(stats.deliveries_total(), 0, "a refusal is a counter, not a row");
    let labels: std::collections::BTreeSet<_> =
        cases.iter().map(|c| (if c.form == "contact" { "contact" } else { "unknown" }, c.problem)).collect();
    let mut counted = 0;
    for (form, problem) in labels {
        counted += app.refused(form, problem).await;
    }
    assert_eq!(counted, cases.len() as u64, "every request is counted, by form and problem type");
}
