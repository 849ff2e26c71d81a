//! Retries across form versions, through a real `serve` process and a real `onceform reload`:
//! a submission accepted under version N keeps N; after N+1 is in force, the same retry
//! replays the stored body (even though N+1 requires a new field, or no longer stores one),
//! a changed retry is a conflict judged against N, a new operation is judged by N+1; the
//! admin shows each submission's version and the difference between the versions.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::on_both_backends;
use crate::support::admin::csrf_of;
use crate::support::serve_process::ServeProcess;
use crate::support::{Backend, TestDb};

on_both_backends!(a_retry_across_a_form_change_is_judged_under_the_version_it_was_accepted_under);

/// Version N: `contact` (email, message) and `quote` (email, an optional note).
const N: &str = r#"
[forms.contact]
title = "Contact us"
effects = []
honeypot = ""
min_fill_seconds = 0
[[forms.contact.fields]]
name = "email"
type = "email"
required = true
[[forms.contact.fields]]
name = "message"
type = "textarea"
required = true

[forms.quote]
title = "Quote"
effects = []
honeypot = ""
min_fill_seconds = 0
[[forms.quote.fields]]
name = "email"
type = "email"
required = true
[[forms.quote.fields]]
name = "note"
type = "text"
"#;

/// Version N+1: `contact` requires a company; `quote` no longer stores the note (it is
/// accepted and ignored). Written with other layout and comments: only the values count.
const N1: &str = r#"
# second version
[forms.contact]
min_fill_seconds = 0
honeypot = ""
title = "Contact us"
effects = []
[[forms.contact.fields]]
name = "email"
required = true
type = "email"
[[forms.contact.fields]]
name = "message"
type = "textarea"
required = true
[[forms.contact.fields]]
name = "company"
type = "text"
required = true

[forms.quote]
title = "Quote"
effects = []
honeypot = ""
min_fill_seconds = 0
ignore_fields = ["note"]
[[forms.quote.fields]]
name = "email"
type = "email"
required = true
"#;

fn version(text: &str, form: &str) -> String {
    onceform::config::Config::parse(text).unwrap().forms[form].definition.version.to_string()
}

fn onceform(dir: &Path, db: &TestDb, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_onceform"))
        .args(args)
        .env("ONCEFORM_DATABASE_URL", &db.url)
        .env("PW", "a long enough password")
        .env("RUST_LOG", "off")
        .current_dir(dir)
        .output()
        .unwrap()
}

struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    /// `(status, Idempotent-Replayed, body text)`.
    async fn submit(&self, form: &str, key: &str, body: &Value) -> (u16, bool, String) {
        let resp = self
            .http
            .post(format!("{}/api/forms/{form}/submissions", self.base))
            .header("Idempotency-Key", key)
            .json(body)
            .send()
            .await
            .unwrap();
        let replayed = resp.headers().get("idempotent-replayed").is_some_and(|v| v == "true");
        (resp.status().as_u16(), replayed, resp.text().await.unwrap())
    }

    /// A plain HTML post of `fields` to `/f/{form}`: its status and `Location`.
    async fn post_html(&self, form: &str, fields: &[(&str, &str)]) -> (u16, String) {
        let resp = self.http.post(format!("{}/f/{form}", self.base)).form(fields).send().await.unwrap();
        let location = resp.headers().get("location").map(|l| l.to_str().unwrap().to_string());
        (resp.status().as_u16(), location.unwrap_or_default())
    }

    async fn page(&self, path: &str, cookie: &str) -> (u16, String) {
        let resp =
            self.http.get(format!("{}{path}", self.base)).header("Cookie", cookie).send().await.unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    }

    /// Signs in as `email` (created with `onceform admin create-user`): the session cookie.
    async fn sign_in(&self, email: &str) -> String {
        let form = self.http.get(format!("{}/admin/login", self.base)).send().await.unwrap();
        let login_cookie = cookie_of(&form, "onceform_login_csrf");
        let csrf = csrf_of(&form.text().await.unwrap());
        let resp = self
            .http
            .post(format!("{}/admin/login", self.base))
            .header("Cookie", login_cookie)
            .form(&[("csrf", csrf.as_str()), ("email", email), ("password", "a long enough password")])
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 303, "sign-in failed");
        cookie_of(&resp, "onceform_session")
    }
}

fn cookie_of(resp: &reqwest::Response, name: &str) -> String {
    resp.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(|v| v.split(';').next().unwrap().to_string())
        .unwrap()
}

fn problem_type(text: &str) -> String {
    let v: Value = serde_json::from_str(text).unwrap();
    v["type"].as_str().unwrap_or_default().rsplit('/').next().unwrap_or_default().to_string()
}

async fn a_retry_across_a_form_change_is_judged_under_the_version_it_was_accepted_under(backend: Backend) {
    let db = TestDb::new(backend);
    let dir: PathBuf =
        std::env::temp_dir().join(format!("onceform-versions-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("onceform.toml");
    std::fs::write(&config, N).unwrap();
    let config_arg = config.to_str().unwrap();
    let created = onceform(
        &dir,
        &db,
        &[
            "--config",
            config_arg,
            "admin",
            "create-user",
            "--email",
            "viewer@example.com",
            "--password-env",
            "PW",
        ],
    );
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let mut command = ServeProcess::command(&db.url, &["--config", config_arg]);
    command.current_dir(&dir);
    let server = ServeProcess::start(command);
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let client = Client { http, base: server.address.clone() };
    let (n_contact, n1_contact) = (version(N, "contact"), version(N1, "contact"));
    assert_ne!(n_contact, n1_contact);
    assert_eq!(version(N, "contact"), version(&N.replace("\n", "\n\n"), "contact"), "layout is not a change");

    // Accepted under N: JSON on both forms, and an HTML post.
    let key = format!("versions-{}", uuid::Uuid::new_v4().simple());
    let original = json!({"email": "ada@example.com", "message": "Hello"});
    let (status, _, first) = client.submit("contact", &key, &original).await;
    assert_eq!(status, 201, "{first}");
    let first_id =
        serde_json::from_str::<Value>(&first).unwrap()["submission_id"].as_str().unwrap().to_string();
    let quote_key = format!("versions-q-{}", uuid::Uuid::new_v4().simple());
    let quote = json!({"email": "bob@example.com", "note": "blue"});
    let (status, _, quote_first) = client.submit("quote", &quote_key, &quote).await;
    assert_eq!(status, 201, "{quote_first}");
    let html_key = format!("versions-h-{}", uuid::Uuid::new_v4().simple());
    let html = [("operation_id", html_key.as_str()), ("email", "cy@example.com"), ("message", "By form")];
    let (status, receipt) = client.post_html("contact", &html).await;
    assert_eq!(status, 303, "{receipt}");

    // N+1 in force, by `onceform reload`.
    std::fs::write(&config, N1).unwrap();
    let out = onceform(&dir, &db, &["--config", config_arg, "reload"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let probe = json!({"email": "probe@example.com", "message": "x"});
        let (status, _, _) =
            client.submit("contact", &format!("probe-{}", uuid::Uuid::new_v4().simple()), &probe).await;
        if status == 422 {
            break; // N+1's required company is in force
        }
        assert!(Instant::now() < deadline, "the reload is never in force");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The same retry replays the stored body byte for byte, though N+1 requires a company
    // (twice: the second from whatever the process remembers).
    for _ in 0..2 {
        let (status, replayed, again) = client.submit("contact", &key, &original).await;
        assert_eq!((status, replayed), (200, true), "{again}");
        assert_eq!(again, first, "the first response's body, byte for byte");
    }
    // A changed retry is a conflict, judged against N.
    let changed = json!({"email": "ada@example.com", "message": "Hello again"});
    let (status, _, conflict) = client.submit("contact", &key, &changed).await;
    assert_eq!((status, problem_type(&conflict).as_str()), (409, "operation-conflict"), "{conflict}");
    assert!(conflict.contains(&first_id), "the conflict names the original: {conflict}");
    // A new operation is judged by N+1: without the company it is refused, with it accepted.
    let new_key = format!("versions-new-{}", uuid::Uuid::new_v4().simple());
    let (status, _, refused) = client.submit("contact", &new_key, &original).await;
    assert_eq!((status, problem_type(&refused).as_str()), (422, "validation-failed"), "{refused}");
    assert!(refused.contains("company"), "{refused}");
    let with_company = json!({"email": "ada@example.com", "message": "Hello", "company": "Analytical"});
    let (status, _, second) = client.submit("contact", &new_key, &with_company).await;
    assert_eq!(status, 201, "{second}");
    let second_id =
        serde_json::from_str::<Value>(&second).unwrap()["submission_id"].as_str().unwrap().to_string();

    // `quote`: N+1 is valid for the retry but no longer stores the note; the retry is judged
    // under N, where the note is part of the content.
    let (status, replayed, again) = client.submit("quote", &quote_key, &quote).await;
    assert_eq!((status, replayed), (200, true), "{again}");
    assert_eq!(again, quote_first);
    let other_note = json!({"email": "bob@example.com", "note": "green"});
    let (status, _, conflict) = client.submit("quote", &quote_key, &other_note).await;
    assert_eq!((status, problem_type(&conflict).as_str()), (409, "operation-conflict"), "{conflict}");
    let (status, replayed, again) = client.submit("quote", &quote_key, &quote).await;
    assert_eq!((status, replayed, again == quote_first), (200, true, true), "the conflict changed nothing");

    // The HTML post's retry: the same fields land on its receipt, other ones are a conflict.
    let (status, location) = client.post_html("contact", &html).await;
    assert_eq!((status, location.as_str()), (303, receipt.as_str()));
    let html_changed =
        [("operation_id", html_key.as_str()), ("email", "cy@example.com"), ("message", "Other")];
    assert_eq!(client.post_html("contact", &html_changed).await.0, 409);

    // The admin: each submission's version, the versions and their difference.
    let cookie = client.sign_in("viewer@example.com").await;
    let (status, page) = client.page(&format!("/admin/submissions/{first_id}"), &cookie).await;
    assert_eq!(status, 200);
    assert!(page.contains(&format!("<dd id=\"form-version\"><code>{n_contact}</code>")), "{page}");
    assert!(page.contains("ada@example.com") && page.contains("Hello"), "the old submission's fields show");
    assert!(page.contains("/admin/forms/contact/versions"), "linked to the versions page");
    let (_, page) = client.page(&format!("/admin/submissions/{second_id}"), &cookie).await;
    assert!(page.contains(&format!("<code>{n1_contact}</code>")), "{page}");
    assert!(page.contains("Analytical"));
    let (status, page) = client.page("/admin/forms/contact/versions", &cookie).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(&n_contact) && page.contains(&n1_contact), "{page}");
    let diff = &page[page.find("<pre id=\"diff\">").expect("a diff")..];
    let added: Vec<&str> = diff.lines().filter(|l| l.starts_with("<ins>+ ")).collect();
    assert!(added.iter().any(|l| l.contains("company")), "the new field is an added line: {diff}");
    assert!(!diff.contains("textarea</ins>"), "unchanged lines are not marked: {diff}");
    let (status, _) = client.page("/admin/forms/contact/versions", "onceform_session=nothing").await;
    assert_ne!(status, 200, "the versions page needs a session");
    let _ = std::fs::remove_dir_all(&dir);
}
