//! The admin pages in the admin's language: `[admin] locale`, each user's own choice (a
//! CSRF-checked POST, stored on the user), words for stored states instead of identifiers,
//! and dates in `[admin] time_zone`. In Chromium: the duplicates page and a submission in
//! zh-TW and in ja at 1,280 px and 390 px, nothing wider than a phone's screen (screenshots in
//! target/test-artifacts/admin-i18n-*.png). Every page in every language: `all_pages`.

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use onceform::base::i18n::{Locale, TimeZone};
use onceform::db::schema::{duplicate_pairs, users};
use onceform::db::DbError;
use onceform::services::accounts::Role;
use onceform::with_conn;

use super::review::{make_pair, person};
use crate::on_both_backends;
use crate::support::admin::AdminSession;
use crate::support::browser::Browser;
use crate::support::proxy::Proxy;
use crate::support::{new_key, spawn_app_with, spawn_on, test_config, Backend, TestApp, TestDb};

on_both_backends!(
    in_zh_tw_the_duplicates_page_has_chinese_words_and_no_identifiers,
    a_user_who_picks_ja_sees_japanese_while_another_sees_the_default,
    the_language_post_needs_a_session_and_its_csrf_token,
    a_fields_label_is_the_forms_own_in_the_admins_language_else_its_name,
);

/// The text a reader sees: the page without its tags (attributes, hrefs and IDs left out).
pub(super) fn visible(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for ch in html.chars() {
        match ch {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

async fn page(app: &TestApp, session: &AdminSession, path: &str) -> String {
    let resp = app.admin_get(Some(session), path).await;
    assert_eq!(resp.status(), 200, "{path}");
    resp.text().await.unwrap()
}

async fn set_pair_status(app: &TestApp, id: &str, status: &'static str) {
    let id = id.to_string();
    app.query(move |pool| {
        with_conn!(pool, |c| c
            .execute_native(
                diesel::update(duplicate_pairs::table.find(&id)).set(duplicate_pairs::status.eq(status))
            )
            .map_err(DbError::from))
    })
    .await;
}

/// Three pairs: one open, one of the same sender's new request, one decided not a duplicate.
async fn three_pairs(app: &TestApp) -> [String; 3] {
    let keys: Vec<String> = (0..4).map(|_| new_key()).collect();
    for (i, k) in keys.iter().enumerate() {
        app.submit(k, &person("陳小明", &format!("chen{i}@example.com"), "請提供 40 台印表機的報價")).await;
    }
    let open = make_pair(app, &keys[0], &keys[1], 0.91).await;
    let same = make_pair(app, &keys[0], &keys[2], 0.55).await;
    let decided = make_pair(app, &keys[0], &keys[3], 0.80).await;
    set_pair_status(app, &same, "same_sender").await;
    [open, same, decided]
}

/// How many users chose a language.
async fn users_with_a_locale(app: &TestApp) -> i64 {
    app.query(move |pool| {
        with_conn!(pool, |c| users::table
            .filter(users::locale.is_not_null())
            .count()
            .get_result::<i64>(c)
            .map_err(DbError::from))
    })
    .await
}

async fn in_zh_tw_the_duplicates_page_has_chinese_words_and_no_identifiers(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        c.admin.locale = Locale::ZhTw;
        c.admin.time_zone = "Asia/Taipei".parse::<TimeZone>().unwrap();
    })
    .await;
    let [open, same, decided] = three_pairs(&app).await;
    let admin = app.sign_in(Role::Admin).await;
    let resp = app
        .admin_post(
            Some(&admin),
            &format!("/admin/duplicates/{decided}/not-duplicate"),
            Some(&admin.csrf),
            &[],
        )
        .await;
    assert_eq!(resp.status(), 303);
    let after = resp.headers()["location"].to_str().unwrap().to_string();
    let flash = page(&app, &admin, &after).await;
    assert!(
        visible(&flash).contains("不是") && visible(&flash).contains("的重複"),
        "the flash in Chinese: {flash}"
    );

    let list = page(&app, &admin, "/admin/duplicates").await;
    assert!(list.contains(r#"<html lang="zh-TW">"#), "{list}");
    assert!(list.contains(&format!("pair-{open}")));
    let text = visible(&list);
    for word in [
        "疑似重複",
        "待審核",
        "同一寄件人的新需求",
        "非重複",
        "已確認重複",
        "總覽",
        "登出",
        "不是重複",
        "欄位",
    ] {
        assert!(text.contains(word), "{word} missing: {text}");
    }
    assert!(text.contains("(Asia/Taipei)"), "dates in the admin's zone, named: {text}");
    assert!(text.contains("陳小明"), "what the visitor typed stays as it is");
    assert!(
        text.contains("電子郵件不同：chen0@example.com → chen1@example.com"),
        "evidence in words: {text}"
    );
    assert!(text.contains("兩筆的姓名皆為 陳小明"), "{text}");
    for path in [
        "/admin/duplicates",
        "/admin/duplicates?status=same_sender",
        "/admin/duplicates?status=not_duplicate",
    ] {
        let html = page(&app, &admin, path).await;
        let text = visible(&html);
        for id in ["same_sender", "not_duplicate", "PENDING", "Suspected duplicates", "Dashboard"] {
            assert!(!text.contains(id), "{path} shows {id}: {text}");
        }
    }
    let same_page = page(&app, &admin, "/admin/duplicates?status=same_sender").await;
    assert!(same_page.contains(&format!("pair-{same}")));
    let decided_page = visible(&page(&app, &admin, "/admin/duplicates?status=not_duplicate").await);
    assert!(decided_page.contains("判定於") && decided_page.contains("復原"), "{decided_page}");

    let effects = visible(&page(&app, &admin, "/admin/effects?state=PENDING").await);
    assert!(effects.contains("等待中") && effects.contains("後續動作"), "{effects}");
    assert!(!effects.contains("PENDING") && !effects.contains("FAILED_FINAL"), "{effects}");
    let list = page(&app, &admin, "/admin/submissions").await;
    let text = visible(&list);
    assert!(text.contains("匯出 CSV") && text.contains("收到時間"), "{text}");
    for id in ["PENDING", "SENDING", "FAILED_FINAL", "Submissions"] {
        assert!(!text.contains(id), "the list shows {id}: {text}");
    }
    let detail = list.split(r#"<a href="/admin/submissions/"#).nth(1).unwrap().split('"').next().unwrap();
    let text = visible(&page(&app, &admin, &format!("/admin/submissions/{detail}")).await);
    assert!(text.contains("操作 ID") && text.contains("送達紀錄") && text.contains("已接收"), "{text}");
    assert!(!text.contains("PENDING") && !text.contains("not_duplicate"), "{text}");
    let users = visible(&page(&app, &admin, "/admin/users").await);
    assert!(users.contains("管理員") && users.contains("啟用中"), "{users}");
    let audit = visible(&page(&app, &admin, "/admin/audit").await);
    assert!(audit.contains("稽核紀錄") && audit.contains("(Asia/Taipei)"), "{audit}");
    let versions = visible(&page(&app, &admin, "/admin/forms/contact/versions").await);
    assert!(versions.contains("表單 contact 的版本") && versions.contains("生效中"), "{versions}");
    let login = app.client.get(app.url("/admin/login")).send().await.unwrap().text().await.unwrap();
    assert!(login.contains(r#"<html lang="zh-TW">"#) && visible(&login).contains("電子郵件"), "{login}");
}

async fn choose(app: &TestApp, session: &AdminSession, locale: &str) -> reqwest::Response {
    app.admin_post(Some(session), "/admin/language", Some(&session.csrf), &[("locale", locale)]).await
}

async fn a_user_who_picks_ja_sees_japanese_while_another_sees_the_default(backend: Backend) {
    let app = spawn_app_with(backend, |_| {}).await;
    three_pairs(&app).await;
    let (ja, other) = (app.sign_in(Role::Viewer).await, app.sign_in(Role::Admin).await);
    let form = page(&app, &ja, "/admin/password").await;
    assert!(form.contains(r#"action="/admin/language""#) && form.contains(r#"<option value="ja" lang="ja""#));

    let resp = choose(&app, &ja, "ja").await;
    assert_eq!(resp.status(), 303, "any signed-in user chooses their own language");
    let saved = page(&app, &ja, resp.headers()["location"].to_str().unwrap()).await;
    assert!(visible(&saved).contains("言語を保存しました。"), "{saved}");
    assert!(saved.contains(r#"<option value="ja" lang="ja" selected>"#), "{saved}");

    let mine = page(&app, &ja, "/admin/duplicates").await;
    assert!(mine.contains(r#"<html lang="ja">"#));
    let text = visible(&mine);
    for word in ["重複の疑い", "確認待ち", "同じ送信者の新しい依頼", "ダッシュボード"]
    {
        assert!(text.contains(word), "{word} missing: {text}");
    }
    assert!(!text.contains("same_sender") && !text.contains("Suspected duplicates"), "{text}");

    let theirs = page(&app, &other, "/admin/duplicates").await;
    assert!(theirs.contains(r#"<html lang="en">"#));
    let text = visible(&theirs);
    assert!(text.contains("Suspected duplicates") && text.contains("To review"), "{text}");
    assert!(!text.contains("重複の疑い"), "{text}");

    assert_eq!(choose(&app, &ja, "fr").await.status(), 409, "only a shipped locale");
    assert_eq!(choose(&app, &ja, "").await.status(), 303);
    let back = page(&app, &ja, "/admin/duplicates").await;
    assert!(back.contains(r#"<html lang="en">"#), "empty: the site's default again");
}

async fn the_language_post_needs_a_session_and_its_csrf_token(backend: Backend) {
    let app = spawn_app_with(backend, |c| c.admin.locale = Locale::ZhCn).await;
    let session = app.sign_in(Role::Viewer).await;
    let form = [("locale", "ja")];
    let no_token = app.admin_post(Some(&session), "/admin/language", None, &form).await;
    assert_eq!(no_token.status(), 403);
    let wrong = app.admin_post(Some(&session), "/admin/language", Some("forged"), &form).await;
    assert_eq!(wrong.status(), 403);
    let anonymous = app.admin_post(None, "/admin/language", Some(&session.csrf), &form).await;
    assert_eq!(anonymous.status(), 303);
    assert_eq!(anonymous.headers()["location"], "/admin/login");
    let html = page(&app, &session, "/admin/duplicates").await;
    assert!(html.contains(r#"<html lang="zh-CN">"#), "unchanged: [admin] locale");
    assert!(visible(&html).contains("疑似重复"), "Simplified Chinese");
    assert_eq!(users_with_a_locale(&app).await, 0, "nothing stored");
}

/// What overflows the viewport sideways: the document's width against the viewport's, and
/// each element sticking out (content of a box that scrolls by itself, a wide table, is fine).
const OVERFLOW: &str = r#"
const vw = document.documentElement.clientWidth;
const out = [];
for (const el of document.querySelectorAll('body *')) {
  const r = el.getBoundingClientRect();
  if (r.width === 0 && r.height === 0) continue;
  let p = el.parentElement, scrolls = false;
  while (p && p !== document.body) {
    const o = getComputedStyle(p).overflowX;
    if (o === 'auto' || o === 'scroll' || o === 'hidden') { scrolls = true; break; }
    p = p.parentElement;
  }
  if (!scrolls && (r.right > vw + 2 || r.left < -2)) {
    out.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className ? '.' + el.className : '') + ' ' + Math.round(r.left) + '..' + Math.round(r.right));
  }
}
return { viewport: vw, inner: window.innerWidth, scroll: document.documentElement.scrollWidth, out: out.slice(0, 20) };
"#;

/// The page at `width`: a screenshot, and at a phone's width nothing wider than the screen.
async fn at_width(browser: &Browser, name: &str, width: u32) {
    browser.resize(width, if width < 500 { 844 } else { 1000 }).await;
    let m = browser.execute(OVERFLOW).await;
    let (viewport, scroll) = (m["viewport"].as_i64().unwrap(), m["scroll"].as_i64().unwrap());
    if width < 500 {
        assert!(m["inner"].as_i64().unwrap() <= i64::from(width) + 16, "a phone's width: {m}");
        assert!(scroll <= viewport + 2, "{name}: the page is wider than a phone's screen: {m}");
        assert!(m["out"].as_array().unwrap().is_empty(), "{name}: elements stick out: {m}");
    }
    browser.screenshot(&format!("admin-i18n-{name}-{width}")).await;
}

/// Signs in through the login form in the browser, with `locale` chosen for that user; the
/// duplicates page and a submission's page at 1,280 px and at 390 px (a phone), one browser.
async fn duplicates_in_a_browser(locale: &str, words: &[&str]) {
    let app = spawn_app_with(Backend::Sqlite, |c| {
        c.admin.time_zone = "Asia/Taipei".parse::<TimeZone>().unwrap();
    })
    .await;
    three_pairs(&app).await;
    let email = format!("reviewer-{}@example.com", locale.to_lowercase());
    app.create_user(&email, Role::Admin).await;
    let loc = locale.to_string();
    let who = email.clone();
    app.query(move |pool| {
        with_conn!(pool, |c| c
            .execute_native(
                diesel::update(users::table.filter(users::email.eq(&who))).set(users::locale.eq(Some(&loc)))
            )
            .map_err(DbError::from))
    })
    .await;
    let browser = Browser::start().await;
    browser.goto(&app.url("/admin/login")).await;
    browser.type_into("#email", &email).await;
    browser.type_into("#password", "a long enough password").await;
    browser.click("button[type=submit]").await;
    browser.wait_for_text("/admin/logout").await;
    browser.goto(&app.url("/admin/duplicates")).await;
    let source = browser.source().await;
    assert!(source.contains(&format!(r#"<html lang="{locale}">"#)), "{source}");
    let text = visible(&source);
    for word in words {
        assert!(text.contains(word), "{word} missing: {text}");
    }
    for id in ["same_sender", "not_duplicate", "PENDING"] {
        assert!(!text.contains(id), "{id} shown: {text}");
    }
    let submission = source
        .split(r#"href="/admin/submissions/"#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no link to a submission: {source}"))
        .to_string();
    for width in [1280, 390] {
        at_width(&browser, &format!("duplicates-{locale}"), width).await;
    }
    browser.goto(&app.url(&format!("/admin/submissions/{submission}"))).await;
    assert!(visible(&browser.source().await).contains("陳小明"));
    for width in [1280, 390] {
        at_width(&browser, &format!("submission-{locale}"), width).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_duplicates_page_in_zh_tw_in_a_browser() {
    duplicates_in_a_browser("zh-TW", &["疑似重複", "待審核", "同一寄件人的新需求", "陳小明"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_duplicates_page_in_ja_in_a_browser() {
    duplicates_in_a_browser("ja", &["重複の疑い", "確認待ち", "同じ送信者の新しい依頼", "陳小明"]).await;
}

/// The labels of a submission's page: `<dt>` of its fields.
fn labels(html: &str) -> Vec<String> {
    let fields = html.split_once(r#"<dl id="fields">"#).map_or("", |(_, rest)| rest);
    let fields = fields.split_once("</dl>").map_or(fields, |(list, _)| list);
    fields.split("<dt>").skip(1).filter_map(|d| d.split_once("</dt>")).map(|(l, _)| l.to_string()).collect()
}

/// The contact form gives its labels in English (its own locale) and one in zh-TW: an admin
/// reads each field by the form's label in their language, else by the field's name, never
/// by a label in another language.
async fn a_fields_label_is_the_forms_own_in_the_admins_language_else_its_name(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        let contact = c.forms.get_mut("contact").unwrap();
        contact.locales = vec![Locale::En, Locale::ZhTw];
        let mut zh_tw = onceform::config::locale::FormTexts::default();
        zh_tw.labels.insert("name".into(), "您的大名".into());
        contact.texts.insert(Locale::ZhTw, zh_tw);
    })
    .await;
    let key = new_key();
    assert_eq!(app.submit(&key, &person("陳小明", "chen@example.com", "請報價")).await.status(), 201);
    let url = format!("/admin/submissions/{}", super::review::submission_id(&app, &key).await);
    let admin = app.sign_in(Role::Admin).await;
    let mut seen = Vec::new();
    for locale in ["en", "zh-TW", "ja"] {
        assert_eq!(choose(&app, &admin, locale).await.status(), 303);
        seen.push(labels(&page(&app, &admin, &url).await));
    }
    // The declared fields first, in the form's order (anything else stored after them).
    let first = |i: usize| seen[i].iter().take(4).map(String::as_str).collect::<Vec<_>>();
    assert_eq!(first(0), ["Your name", "Email", "Topic", "Message"], "en: the form's own labels");
    assert_eq!(first(1), ["您的大名", "email", "topic", "message"], "zh-TW: its label there, else the name");
    assert_eq!(first(2), ["name", "email", "topic", "message"], "ja: no label in ja, the names");
}

/// A database failure on an admin page is said in the admin's language: a page whose query
/// fails (a table gone) in the language the user chose (zh-TW); the database out of reach,
/// when not even the session can be read, in the site's (`[admin] locale`, ja).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_failure_is_said_in_the_admins_language() {
    let db = TestDb::new(Backend::Postgres);
    let proxy = Proxy::start(db.host_port()).await;
    let direct_url = db.url.clone();
    let mut config = test_config(&db.url_via(&format!("127.0.0.1:{}", proxy.port)));
    config.database.acquire_timeout_ms = 500;
    config.admin.locale = Locale::Ja;
    let app = spawn_on(db, config).await;
    let admin = app.sign_in(Role::Admin).await;
    assert_eq!(choose(&app, &admin, "zh-TW").await.status(), 303);
    let mut direct = onceform::db::establish_pg(&direct_url).unwrap();

    direct.batch_execute("ALTER TABLE audit_log RENAME TO audit_log_away").unwrap();
    let resp = app.admin_get(Some(&admin), "/admin/audit").await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.text().await.unwrap(), Locale::ZhTw.text("admin-db-unavailable"));
    direct.batch_execute("ALTER TABLE audit_log_away RENAME TO audit_log").unwrap();

    proxy.cut();
    let resp = app.admin_get(Some(&admin), "/admin/audit").await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.text().await.unwrap(), Locale::Ja.text("admin-db-unavailable"));
    proxy.restore();
    assert_eq!(app.admin_get(Some(&admin), "/admin/audit").await.status(), 200, "back once it is");
}
