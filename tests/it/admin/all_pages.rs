//! Every admin page in the four languages (issue 43 item 3): the data each page needs is made
//! (submissions, a conflict, a duplicate pair, inbound events, a quarantined delivery, an API
//! token, a spam submission's file), then every page the router serves by GET is read in en,
//! zh-TW, zh-CN and ja: 200, no Fluent key or missing-message marker, no stored state shown as
//! its identifier, and in zh-TW, zh-CN and ja none of the English texts of `admin.ftl`.
//! The pages are those of the router's `route("/admin…", web::get()…)` calls and GET
//! resources in `src/web`:
//! a new page without a URL here fails the test.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::review::{make_pair, person};
use crate::files::attach::{upload, with_quote};
use crate::support::admin::AdminSession;
use crate::support::files::{pdf, sha256};
use crate::support::hooks::{hook, secret_var, spawn_hook_app_with, HookApp};
use crate::support::receiver::Receiver;
use crate::support::{new_key, spawn_app_with, Backend, TestApp};
use onceform::base::i18n::{Arg, Locale};
use onceform::services::accounts::Role;
use onceform::web::hooks::verify::standard_webhooks;

/// Admin GET routes this test does not read, each with why. Remove an entry once its page is
/// translated and listed in `urls`.
const EXCEPTIONS: &[(&str, &str)] = &[
    // Not pages.
    ("/admin/submissions.csv", "a CSV export (column names are for spreadsheets)"),
    ("/admin/submissions/search", "GET only redirects to the list (the search is a POST)"),
    ("/admin/oidc/start", "a redirect to the identity provider (needs [admin.oidc])"),
    ("/admin/oidc/callback", "needs [admin.oidc]; its pages are in tests/it/admin/oidc.rs"),
];

/// Every `route("/admin…", web::get()…)` and `resource("/admin…")` with a GET route in
/// `src/web` (the router's admin pages).
fn admin_get_routes() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut dirs = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/web")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (i, _) in text.match_indices("route(") {
                    let rest = text[i + "route(".len()..].trim_start();
                    let Some(rest) = rest.strip_prefix('"') else { continue };
                    let Some((path, after)) = rest.split_once('"') else { continue };
                    let after = after.trim_start().trim_start_matches(',').trim_start();
                    if path.starts_with("/admin") && after.starts_with("web::get()") {
                        found.insert(path.to_string());
                    }
                }
                // `web::resource("/admin…")` with a `.route(web::get()…)` of its own.
                for (i, _) in text.match_indices("resource(\"") {
                    let rest = &text[i + "resource(\"".len()..];
                    let Some((path, after)) = rest.split_once('"') else { continue };
                    let own = after.split(".service(").next().unwrap_or(after);
                    if path.starts_with("/admin") && own.contains("route(web::get()") {
                        found.insert(path.to_string());
                    }
                }
            }
        }
    }
    found
}

/// The text a reader sees: the page without its tags, entities decoded.
fn visible(html: &str) -> String {
    let mut out = super::i18n::visible(html);
    for (entity, ch) in [
        ("&#39;", "'"),
        ("&#34;", "\""),
        ("&quot;", "\""),
        ("&#60;", "<"),
        ("&lt;", "<"),
        ("&#62;", ">"),
        ("&gt;", ">"),
    ] {
        out = out.replace(entity, ch);
    }
    out.replace("&#38;", "&").replace("&amp;", "&")
}

/// `html` without its `<code>…</code>` elements.
/// Also without a stored record declared English (`<pre lang="en">`: the audit log's notes,
/// written when the action was taken).
fn without_code(html: &str) -> String {
    let mut html = html.to_string();
    for (open, close) in [("<code", "</code>"), ("<pre lang=\"en\">", "</pre>")] {
        let mut out = String::new();
        let mut rest = html.as_str();
        while let Some(start) = rest.find(open) {
            out.push_str(&rest[..start]);
            rest = rest[start..].split_once(close).map_or("", |(_, after)| after);
        }
        out.push_str(rest);
        html = out;
    }
    html
}

/// `key = value` of a locale's `admin.ftl` (every message is one line).
fn messages(locale: Locale) -> BTreeMap<String, String> {
    let path = format!("{}/locales/{}/admin.ftl", env!("CARGO_MANIFEST_DIR"), locale.tag());
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with(' '))
        .filter_map(|l| l.split_once(" = "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The English phrases (2+ words, between placeables) a page in `locale` must not show:
/// those of every message whose text this locale changed (a name like `GitHub` stays).
fn english_phrases(locale: Locale) -> Vec<String> {
    let (en, theirs) = (messages(Locale::En), messages(locale));
    let mut phrases = Vec::new();
    for (key, text) in &en {
        if theirs.get(key) == Some(text) {
            continue;
        }
        for part in
            text.split('{')
                .enumerate()
                .map(|(i, p)| if i == 0 { p } else { p.split_once('}').map_or("", |(_, r)| r) })
        {
            let part = part.trim().trim_end_matches(['.', ':', ',', ';']).trim();
            if part.split_whitespace().filter(|w| w.chars().any(char::is_alphabetic)).count() >= 2 {
                phrases.push(part.to_string());
            }
        }
    }
    phrases.sort();
    phrases.dedup();
    phrases
}

/// Stored identifiers that must never be shown as they are stored.
const IDENTIFIERS: &[&str] = &[
    "PENDING",
    "SENDING",
    "FAILED_FINAL",
    "CANCELLED",
    "same_sender",
    "not_duplicate",
    "lookup_found",
    "in_progress",
    "captcha-unverified",
];

fn check(locale: Locale, url: &str, html: &str, english: &[String]) {
    let text = visible(html);
    assert!(html.contains(&format!(r#"<html lang="{}">"#, locale.tag())), "{locale} {url}: {html}");
    let keys = messages(Locale::En).into_keys().chain(["{$", "{ $", "{???}"].map(String::from));
    for marker in keys {
        if let Some(at) = text.find(&marker) {
            let around: String = text[at..].chars().take(60).collect();
            panic!("{locale} {url}: a key or a missing text shown: {around:?}");
        }
    }
    for id in IDENTIFIERS {
        assert!(!text.contains(id), "{locale} {url} shows the identifier {id}: {text}");
    }
    // Commands and configuration names in <code> are the same in every language.
    let words = visible(&without_code(html));
    for phrase in english {
        assert!(!words.contains(phrase.as_str()), "{locale} {url} shows English {phrase:?}: {words}");
    }
}

const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

async fn deliver(app: &HookApp, id: &str, body: &str) {
    let key = standard_webhooks::decode_secret(WHSEC).unwrap();
    let ts = chrono::Utc::now().timestamp();
    let msg = format!("msg_{}", uuid::Uuid::new_v4().simple());
    let headers = vec![
        ("webhook-id", msg.clone()),
        ("webhook-timestamp", ts.to_string()),
        ("webhook-signature", standard_webhooks::sign(&key, &msg, ts, body.as_bytes())),
    ];
    let status = app.post("helpdesk", &headers, body).await.status().as_u16();
    assert!((200..300).contains(&status), "{id}: {status}");
}

/// Everything each page needs; the URLs of every admin page, by route.
async fn world(h: &HookApp, admin: &AdminSession) -> (BTreeMap<&'static str, Vec<String>>, String) {
    let app = &h.app;
    let keys: Vec<String> = (0..3).map(|_| new_key()).collect();
    for (i, k) in keys.iter().enumerate() {
        let resp = app
            .submit(k, &person("陳小明", &format!("chen{i}@example.com"), "請提供 40 台印表機的報價"))
            .await;
        assert_eq!(resp.status(), 201);
    }
    let pair = make_pair(app, &keys[0], &keys[1], 0.9).await;
    let conflict = app.submit(&keys[0], &person("陳小明", "chen0@example.com", "改成 50 台")).await;
    assert_eq!(conflict.status(), 409, "a conflict");
    let worker = h.worker();
    worker.run_once().await;
    let submission = super::review::submission_id(app, &keys[0]).await;

    // A spam submission with a file (the honeypot filled in).
    let drawing = pdf("spam drawing");
    let (_, up) = upload(app, "quote", "drawing.pdf", &drawing).await;
    let body = json!({"email": "bot@example.com", "drawing": [up["upload_id"]], "website": "x"});
    let url = app.url("/api/forms/quote/submissions");
    let resp = app.client.post(url).header("Idempotency-Key", new_key()).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 201);
    let spam: serde_json::Value = resp.json().await.unwrap();
    let spam = spam["submission_id"].as_str().unwrap().to_string();

    // Inbound: an event, the same event ID with other content, a delivery with no event ID.
    deliver(h, "E-1", r#"{"event":{"id":"E-1"},"text":"你好"}"#).await;
    deliver(h, "E-1", r#"{"event":{"id":"E-1"},"text":"改了"}"#).await;
    deliver(h, "none", r#"{"event":{"type":"x"},"text":"沒有 ID"}"#).await;
    h.settle(&worker).await;
    let events = app.admin_get(Some(admin), "/admin/inbound/helpdesk").await.text().await.unwrap();
    let event = events.split("/admin/inbound/helpdesk/events/").nth(1).unwrap().split('"').next().unwrap();

    // An API token.
    let made = app
        .admin_post(
            Some(admin),
            "/admin/api-tokens",
            Some(&admin.csrf),
            &[("name", "報表"), ("read:submissions", "on"), ("expires_days", "30")],
        )
        .await;
    assert_eq!(made.status(), 201);

    let conflicts = app.admin_get(Some(admin), "/admin/conflicts").await.text().await.unwrap();
    let conflict = conflicts.split(r#"href="/admin/conflicts/"#).nth(1).unwrap().split('"').next().unwrap();

    let mut urls: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut add = |route: &'static str, list: &[&str]| {
        urls.insert(route, list.iter().map(|u| u.to_string()).collect());
    };
    add("/admin", &["/admin"]);
    add("/admin/", &["/admin/"]);
    add("/admin/api-tokens", &["/admin/api-tokens"]);
    add("/admin/audit", &["/admin/audit"]);
    add(
        "/admin/conflicts",
        &["/admin/conflicts", "/admin/conflicts?status=dismissed", "/admin/conflicts?status=accepted"],
    );
    add("/admin/conflicts/{id}", &[&format!("/admin/conflicts/{conflict}")]);
    add(
        "/admin/duplicates",
        &[
            "/admin/duplicates",
            "/admin/duplicates?status=same_sender",
            "/admin/duplicates?status=not_duplicate",
            "/admin/duplicates?status=duplicate",
            "/admin/duplicates?flash=pairs_duplicate~1~0",
        ],
    );
    add(
        "/admin/effects",
        &[
            "/admin/effects",
            "/admin/effects?state=SENT",
            "/admin/effects?state=UNKNOWN",
            "/admin/effects?state=FAILED_FINAL",
            "/admin/effects?state=CANCELLED",
            "/admin/effects?state=PENDING&flash=effect_retry",
        ],
    );
    add("/admin/erase", &["/admin/erase"]);
    add("/admin/forms", &["/admin/forms", "/admin/forms?flash=config_reloaded~2"]);
    add("/admin/forms/new", &["/admin/forms/new"]);
    add("/admin/forms/{form}/edit", &["/admin/forms/quote/edit"]);
    add("/admin/forms/{form}/preview", &["/admin/forms/quote/preview"]);
    add("/admin/forms/{form}/versions", &["/admin/forms/quote/versions"]);
    add("/admin/import", &["/admin/import"]);
    add("/admin/inbound", &["/admin/inbound"]);
    add("/admin/inbound/{source}", &["/admin/inbound/helpdesk?flash=inbound_discarded"]);
    add("/admin/inbound/{source}/events/{id}", &[&format!("/admin/inbound/helpdesk/events/{event}")]);
    add("/admin/login", &[]); // read without a session, below
    add("/admin/password", &["/admin/password?flash=language_saved"]);
    add("/admin/retention", &["/admin/retention"]);
    add("/admin/submissions", &["/admin/submissions", "/admin/submissions?spam=yes"]);
    add(
        "/admin/submissions/{id}",
        &[&format!("/admin/submissions/{submission}"), &format!("/admin/submissions/{spam}")],
    );
    add(
        "/admin/submissions/{id}/files/{sha256}",
        &[&format!("/admin/submissions/{spam}/files/{}", sha256(&drawing))],
    );
    add("/admin/users", &["/admin/users?flash=user_disabled~1"]);
    (urls, pair)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_admin_page_is_in_each_language_with_no_key_and_no_english() {
    let receiver = Receiver::start().await;
    let var = secret_var("allpages", WHSEC);
    let cfg = format!(
        "verify = \"standard-webhooks\"\nsecret_env = \"{var}\"\nevent_id = \"json:/event/id\"\n\
         [[handlers]]\nname = \"to-crm\"\nkind = \"forward\"\nurl = \"{}\"\n",
        receiver.events_url()
    );
    let h = spawn_hook_app_with(Backend::Sqlite, vec![("helpdesk", hook(&cfg))], |c| {
        with_quote(c);
        c.forms.get_mut("quote").unwrap().honeypot = "website".into();
    })
    .await;
    let admin = h.app.sign_in(Role::Admin).await;
    let (urls, pair) = world(&h, &admin).await;
    let undo = format!("/admin/duplicates/{pair}/undo");

    let routes = admin_get_routes();
    let excepted: BTreeSet<String> = EXCEPTIONS.iter().map(|(r, _)| r.to_string()).collect();
    let listed: BTreeSet<String> = urls.keys().map(|r| r.to_string()).collect();
    let unlisted: Vec<_> = routes.difference(&listed).filter(|r| !excepted.contains(*r)).collect();
    assert!(unlisted.is_empty(), "admin GET routes with no URL in this test: {unlisted:?}");
    let stale: Vec<_> = listed.union(&excepted).filter(|r| !routes.contains(*r)).collect();
    assert!(stale.is_empty(), "routes listed here that the router no longer has: {stale:?}");
    assert!(routes.len() > 20, "{routes:?}");

    let mut pages = 0;
    for locale in Locale::ALL {
        let chosen = h
            .app
            .admin_post(Some(&admin), "/admin/language", Some(&admin.csrf), &[("locale", locale.tag())])
            .await;
        assert_eq!(chosen.status(), 303);
        let english = if locale == Locale::En { Vec::new() } else { english_phrases(locale) };
        for url in urls.values().flatten() {
            let resp = h.app.admin_get(Some(&admin), url).await;
            assert_eq!(resp.status(), 200, "{locale} {url}");
            check(locale, url, &resp.text().await.unwrap(), &english);
            pages += 1;
        }
        // The pages that answer a form: a dry-run erasure and a refused import.
        let erased = h
            .app
            .admin_post(
                Some(&admin),
                "/admin/erase",
                Some(&admin.csrf),
                &[("email", "chen0@example.com"), ("dry_run", "yes")],
            )
            .await;
        assert_eq!(erased.status(), 200);
        check(locale, "POST /admin/erase", &erased.text().await.unwrap(), &english);
        // An import's report: a row imported (then already present), and each kind of
        // refused row the page can meet.
        let fields = [("csrf", admin.csrf.as_str()), ("form", "contact"), ("source", "history")];
        let imported = h
            .app
            .admin_upload(Some(&admin), "/admin/import", &fields, ("csv", "history.csv", HISTORY.as_bytes()))
            .await;
        assert_eq!(imported.status(), 200);
        let imported = imported.text().await.unwrap();
        assert_eq!(imported.matches("<pre id=\"import-report\">").count(), 1, "{locale}: {imported}");
        check(locale, "POST /admin/import", &imported, &english);
        // Refusals, in the words of who asked.
        let refusals = [
            ("/admin/erase", Some(admin.csrf.as_str()), "admin-erase-give-one", 409),
            ("/admin/erase", Some("forged"), "admin-csrf-refused", 403),
            (undo.as_str(), Some(admin.csrf.as_str()), "admin-refused-nothing-to-undo", 409),
        ];
        for (path, csrf, key, status) in refusals {
            let resp = h.app.admin_post(Some(&admin), path, csrf, &[]).await;
            assert_eq!(resp.status(), status, "{locale} {path}");
            assert_eq!(resp.text().await.unwrap(), locale.text(key), "{locale} {path}");
        }
        let login = login_page(locale).await;
        check(locale, "/admin/login", &login, &english);
    }
    assert!(pages >= 4 * 25, "{pages} pages read");
    // An erasure done (not a dry run): its report in ja and in zh-TW.
    for (locale, email) in [(Locale::Ja, "chen1@example.com"), (Locale::ZhTw, "chen2@example.com")] {
        let chosen = h
            .app
            .admin_post(Some(&admin), "/admin/language", Some(&admin.csrf), &[("locale", locale.tag())])
            .await;
        assert_eq!(chosen.status(), 303);
        let erased =
            h.app.admin_post(Some(&admin), "/admin/erase", Some(&admin.csrf), &[("email", email)]).await;
        assert_eq!(erased.status(), 200);
        let page = erased.text().await.unwrap();
        let digest = locale.format("admin-erase-report-digest", &[("value", Arg::Str(""))]);
        assert!(page.contains(&digest), "{locale}: {page}");
        check(locale, "POST /admin/erase (done)", &page, &english_phrases(locale));
    }
}

/// A CSV for the contact form: one valid row, then one without its email, one with a value
/// too many, and one received in the future.
const HISTORY: &str = "name,email,topic,message,received_at\n\
    陳大文,chen.import@example.com,Sales,請提供報價,2025-01-02 10:00:00\n\
    王小明,,Sales,沒有電子郵件,2025-01-02\n\
    李四,li@example.com,Sales,多一個值,2025-01-02,extra\n\
    張三,zhang@example.com,Sales,未來的日期,2999-01-01\n";

/// The sign-in page of a site whose `[admin] locale` is `locale` (nobody is signed in).
async fn login_page(locale: Locale) -> String {
    let app: TestApp = spawn_app_with(Backend::Sqlite, |c| c.admin.locale = locale).await;
    let resp = app.client.get(app.url("/admin/login")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap()
}
