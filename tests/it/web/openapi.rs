//! `/openapi.json` against the live server: schemathesis (from PyPI, installed by
//! `./test.sh`) runs every check, the stateful phase included, bounded by `--max-examples`
//! and a wall-clock limit; any failure fails the test. Its summary is printed either way.
//! It sends a read API token with every scope, so `/api/v1` is exercised past its 401s
//! (and its `ignored_auth` check removes the token to see the 401).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use onceform::config::Config;

use crate::support::{spawn_app_with, Backend};

/// Test cases per operation and phase; `ONCEFORM_SCHEMATHESIS_EXAMPLES` overrides.
const MAX_EXAMPLES: &str = "25";
const CALLBACK_FORM: &str = r#"
[forms.callback]
title = "Call me back"
allow_keyless_api = true
honeypot = ""
locale = "auto"
locales = ["zh-TW", "en", "ja"]
[[forms.callback.fields]]
name = "phone"
type = "phone"
required = true
[[forms.callback.fields]]
name = "email"
type = "email"
[[forms.callback.fields]]
name = "mobile"
type = "phone"
[[forms.callback.fields]]
name = "when"
type = "select"
options = ["Morning", "Afternoon"]
[[forms.callback.fields]]
name = "note"
type = "textarea"
max_length = 300
"#;

/// The whole run is killed (and the test fails) after this long.
const WALL_CLOCK: Duration = Duration::from_secs(480);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_failure_in_the_openapi_description() {
    // The demo `contact` form plus one with every other kind of field: phone (required and
    // optional), optional email and select, keyless API posts, an `auto` locale.
    let app = spawn_app_with(Backend::Sqlite, |c| {
        let extra = Config::parse(CALLBACK_FORM).unwrap();
        c.forms.extend(extra.forms);
    })
    .await;
    let doc: serde_json::Value =
        app.client.get(app.url("/openapi.json")).send().await.unwrap().json().await.unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let schema_url = app.url("/openapi.json");
    let examples = std::env::var("ONCEFORM_SCHEMATHESIS_EXAMPLES").unwrap_or_else(|_| MAX_EXAMPLES.into());
    let token = read_api_token(&app).await;
    let (ok, output) =
        tokio::task::spawn_blocking(move || run_schemathesis(&schema_url, &examples, &token)).await.unwrap();
    println!("{output}");
    assert!(ok, "schemathesis found failures (see its output above)");
    // It really exercised the API: submissions were accepted through the described schema.
    let stats = app.stats().await;
    assert!(stats.submissions > 0, "schemathesis never got a submission accepted");
    let uses = app.row_counts().await["api_token_uses"];
    assert!(uses > 0, "schemathesis never got past the read API's 401");
}

/// A read API token with every scope, for no form in particular.
async fn read_api_token(app: &crate::support::TestApp) -> String {
    use onceform::services::read_api::tokens::{create, TokenRequest};
    let request = TokenRequest {
        name: "schemathesis".into(),
        scopes: onceform::domain::Scopes::parse("read:submissions,read:effects,write:decisions").unwrap(),
        form: None,
        expires_days: None,
    };
    let actor = onceform::services::audit::Actor { id: "cli".into(), label: "command line".into() };
    app.query(move |pool| Ok(create(pool, &request, |_| true, &actor).unwrap().secret)).await
}

/// Optional fields left empty are accepted, and the description says so (schemathesis
/// found `""` for an optional phone accepted while the schema's pattern forbade it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optional_fields_left_empty_are_accepted_and_described() {
    let app =
        spawn_app_with(Backend::Sqlite, |c| c.forms.extend(Config::parse(CALLBACK_FORM).unwrap().forms))
            .await;
    let doc: serde_json::Value =
        app.client.get(app.url("/openapi.json")).send().await.unwrap().json().await.unwrap();
    let body = &doc["paths"]["/api/forms/callback/submissions"]["post"]["requestBody"]["content"]
        ["application/json"]["schema"];
    let mobile = &body["properties"]["mobile"]["anyOf"][0]["anyOf"];
    assert_eq!(mobile[1]["pattern"], "^[ ()./\\t\\u3000-]*$", "{mobile}");
    let email = &body["properties"]["email"]["anyOf"][0]["anyOf"];
    assert!(email[1]["pattern"].as_str().unwrap().starts_with("^[\\t\\n\\r "), "{email}");
    let resp = app
        .client
        .post(app.url("/api/forms/callback/submissions"))
        .json(&serde_json::json!({"phone": "+886 912 345 678", "email": "", "mobile": "", "when": "", "note": ""}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
}

/// Runs schemathesis to the end or to the wall-clock limit; (passed, stdout + stderr).
fn run_schemathesis(schema_url: &str, examples: &str, token: &str) -> (bool, String) {
    // Its cache and reports go to a directory of its own, not into the repository.
    let dir = std::env::temp_dir().join(format!("onceform-schemathesis-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let result = run_in(&dir, schema_url, examples, token);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run_in(dir: &std::path::Path, schema_url: &str, examples: &str, token: &str) -> (bool, String) {
    let mut child = Command::new("schemathesis")
        .current_dir(dir)
        .args(["run", schema_url, "--checks", "all", "--phases", "examples,coverage,fuzzing,stateful"])
        // One worker: with more, hypothesis (describing its lambdas with `ast` on several
        // threads) now and then dies with "AST constructor recursion depth mismatch".
        .args(["--max-examples", examples, "--request-timeout", "10", "--workers", "1"])
        .args(["--no-color", "--generation-database", "none", "--suppress-health-check", "all"])
        .args(["--header", &format!("Authorization: Bearer {token}")])
        // The change feed's cursor carries a check: text of its pattern is mostly refused
        // (400), which schemathesis would count against it; `read_api` tests the feed.
        .args(["--exclude-operation-id", "read_changes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run schemathesis ({e}); ./test.sh installs it (pip install schemathesis)")
        });
    // Read both pipes while it runs, so a long report cannot fill a pipe and stall it.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > WALL_CLOCK {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let output = format!("{}{}", stdout.join().unwrap(), stderr.join().unwrap());
    match status {
        Some(s) => (s.success(), output),
        None => (false, format!("{output}\nschemathesis ran past {WALL_CLOCK:?} and was stopped")),
    }
}
