//! The admin's reading pages: dashboard, submissions (filters, pages, CSV, search), one
//! submission, and the audit log. Visitor content is inert on every one of them.

use diesel::prelude::*;
use onceform::db::schema::{duplicate_pairs, submissions};
use onceform::db::DbError;
use onceform::services::accounts::Role;
use onceform::with_conn;
use serde_json::{json, Value};

use crate::on_both_backends;
use crate::support::admin::AdminSession;
use crate::support::delivery::spawn_delivery_app;
use crate::support::{inquiry, new_key, seed, spawn_app, spawn_app_with, Backend, TestApp};

on_both_backends!(
    every_page_needs_a_session_and_opens_for_a_viewer,
    the_dashboard_counts_deliveries_apart_from_submissions,
    filters_narrow_the_list,
    the_list_pages_by_fifty,
    the_csv_has_a_header_and_one_neutralised_row_per_submission,
    search_finds_content_without_putting_the_term_in_a_url,
    the_detail_page_shows_fields_deliveries_effects_and_attempts,
    visitor_markup_is_inert_on_every_page,
);

const SCRIPT: &str = "<script>alert(1)</script>";
const SCRIPT_ESCAPED: &str = "&#60;script&#62;alert(1)&#60;/script&#62;";
const IMG: &str = r#""><img src=x onerror=alert(1)>"#;
const IMG_ESCAPED: &str = "&#34;&#62;&#60;img src=x onerror=alert(1)&#62;";

/// (id, operation_id, spam, keyless, form)
type Listed = (String, String, bool, bool, String);

/// Every submission, oldest first.
async fn submissions_of(app: &TestApp) -> Vec<Listed> {
    app.query(|pool| {
        with_conn!(pool, |c| submissions::table
            .order((submissions::received_at, submissions::id))
            .select((
                submissions::id,
                submissions::operation_id,
                submissions::spam,
                submissions::keyless,
                submissions::form,
            ))
            .load(c)
            .map_err(DbError::from))
    })
    .await
}

async fn id_of(app: &TestApp, key: &str) -> String {
    submissions_of(app).await.into_iter().find(|s| s.1 == key).unwrap().0
}

async fn page(app: &TestApp, session: &AdminSession, path: &str) -> String {
    let resp = app.admin_get(Some(session), path).await;
    assert_eq!(resp.status(), 200, "{path}");
    resp.text().await.unwrap()
}

/// The rows of the submissions list (or of search results): their submission IDs.
fn listed(html: &str) -> Vec<String> {
    html.split(r#"<tr id="submission-"#).skip(1).map(|r| r.split('"').next().unwrap().to_string()).collect()
}

async fn search(app: &TestApp, session: &AdminSession, csrf: &str, q: &str) -> reqwest::Response {
    app.admin_post(Some(session), "/admin/submissions/search", Some(csrf), &[("q", q)]).await
}

async fn submit_to(app: &TestApp, form: &str, body: &Value) -> reqwest::Response {
    let url = app.url(&format!("/api/forms/{form}/submissions"));
    app.client.post(url).header("Idempotency-Key", new_key()).json(body).send().await.unwrap()
}

/// Posts the HTML contact form; `with_key` takes a fresh operation ID from the form page.
async fn post_html(app: &TestApp, with_key: bool, website: &str) -> reqwest::Response {
    let mut form = vec![
        ("name", "Grace Hopper".to_string()),
        ("email", "grace@example.com".to_string()),
        ("topic", "Support".to_string()),
        ("message", "Posted from the page".to_string()),
        ("website", website.to_string()),
    ];
    if with_key {
        let html = app.client.get(app.url("/f/contact")).send().await.unwrap().text().await.unwrap();
        let start = html.find(r#"name="operation_id" value=""#).unwrap() + 27;
        form.push(("operation_id", html[start..].split('"').next().unwrap().to_string()));
    }
    let resp = app.client.post(app.url("/f/contact")).form(&form).send().await.unwrap();
    assert_eq!(resp.status(), 303);
    resp
}

async fn every_page_needs_a_session_and_opens_for_a_viewer(backend: Backend) {
    let app = spawn_app(backend).await;
    let key = new_key();
    app.submit(&key, &inquiry("Hello")).await;
    let id = id_of(&app, &key).await;
    let viewer = app.sign_in(Role::Viewer).await;
    let detail = format!("/admin/submissions/{id}");
    for path in ["/admin", "/admin/submissions", "/admin/submissions.csv", detail.as_str(), "/admin/audit"] {
        let anonymous = app.admin_get(None, path).await;
        assert_eq!(anonymous.status(), 303, "{path}");
        assert_eq!(anonymous.headers()["location"], "/admin/login", "{path}");
        let resp = app.admin_get(Some(&viewer), path).await;
        assert_eq!(resp.status(), 200, "{path}");
        assert_eq!(resp.headers()["cache-control"], "no-store", "{path}");
    }
    let anonymous =
        app.admin_post(None, "/admin/submissions/search", Some(&viewer.csrf), &[("q", "x")]).await;
    assert_eq!(anonymous.status(), 303);
    assert_eq!(anonymous.headers()["location"], "/admin/login");

    let missing = app.admin_get(Some(&viewer), "/admin/submissions/no-such-id").await;
    assert_eq!(missing.status(), 404);
    assert!(missing.text().await.unwrap().contains("No such submission"));
}

async fn the_dashboard_counts_deliveries_apart_from_submissions(backend: Backend) {
    let app = spawn_app(backend).await;
    let (a, b) = (new_key(), new_key());
    for (key, email) in
        [(&a, "ada@example.com"), (&a, "ada@example.com"), (&b, "bo@example.com"), (&b, "bo@example.com")]
    {
        let mut body = inquiry("Twice each");
        body["email"] = email.into(); // two visitors: each gets a confirmation
        assert!(app.submit(key, &body).await.status().is_success());
    }
    let viewer = app.sign_in(Role::Viewer).await;
    let html = page(&app, &viewer, "/admin").await;
    for (cell, n) in
        [("deliveries-24h", 4), ("submissions-24h", 2), ("deliveries-7d", 4), ("submissions-7d", 2)]
    {
        assert!(
            html.contains(&format!(r#"id="{cell}" data-n="{n}"><div class="n">{n}</div>"#)),
            "{cell}: {html}"
        );
    }
    assert!(html.contains(r#"id="effects-PENDING" data-n="6""#), "3 effects each");
    assert!(html.contains(r#"id="unknown" data-n="0""#) && html.contains(r#"id="failed-final" data-n="0""#));
    assert!(html.contains("<svg id=\"chart\""), "a chart");
    let today = html.rsplit(r#"class="bar-submissions" data-n=""#).next().unwrap();
    assert!(today.starts_with('2'), "today's bar: two submissions");
    assert!(!html.contains(r#"id="oldest-pending"><div class="n">–"#), "a PENDING age is shown");

    // A conflicting repeat is one more delivery, no more submissions, and an open conflict.
    assert_eq!(app.submit(&a, &inquiry("Edited")).await.status(), 409);
    let pairs: i64 = app
        .query(|pool| {
            with_conn!(pool, |c| duplicate_pairs::table
                .filter(duplicate_pairs::status.eq("open"))
                .count()
                .get_result(c)
                .map_err(DbError::from))
        })
        .await;
    let html = page(&app, &viewer, "/admin").await;
    assert!(html.contains(r#"id="deliveries-24h" data-n="5""#));
    assert!(html.contains(r#"id="submissions-24h" data-n="2""#));
    assert!(html.contains(r#"id="open-conflicts" data-n="1""#));
    assert!(html.contains(&format!(r#"id="open-duplicates" data-n="{pairs}""#)));
}

async fn filters_narrow_the_list(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        let quote = c.forms["contact"].clone();
        c.forms.insert("quote".into(), quote);
    })
    .await;
    assert_eq!(submit_to(&app, "contact", &inquiry("Through the API")).await.status(), 201);
    assert_eq!(submit_to(&app, "quote", &inquiry("For a quote")).await.status(), 201);
    post_html(&app, false, "").await;
    post_html(&app, true, "http://spam.example").await;
    let all = submissions_of(&app).await;
    let ids = |f: &dyn Fn(&Listed) -> bool| -> Vec<String> {
        let mut v: Vec<String> = all.iter().filter(|s| f(s)).map(|s| s.0.clone()).collect();
        v.sort();
        v
    };
    let viewer = app.sign_in(Role::Viewer).await;
    let shown = |html: String| {
        let mut v = listed(&html);
        v.sort();
        v
    };

    assert_eq!(shown(page(&app, &viewer, "/admin/submissions").await).len(), 4);
    let spam = shown(page(&app, &viewer, "/admin/submissions?spam=yes").await);
    assert_eq!(spam, ids(&|s| s.2));
    assert_eq!(spam.len(), 1, "only the honeypot hit");
    assert_eq!(shown(page(&app, &viewer, "/admin/submissions?spam=no").await), ids(&|s| !s.2));
    let keyless = shown(page(&app, &viewer, "/admin/submissions?keyless=yes").await);
    assert_eq!((keyless.len(), keyless.clone()), (1, ids(&|s| s.3)));
    assert_eq!(shown(page(&app, &viewer, "/admin/submissions?form=quote").await), ids(&|s| s.4 == "quote"));
    let contact = shown(page(&app, &viewer, "/admin/submissions?form=contact&spam=no&keyless=no").await);
    assert_eq!(contact, ids(&|s| s.4 == "contact" && !s.2 && !s.3));
    assert_eq!(contact.len(), 1);
    // Spam has no effects: a state filter leaves it out.
    assert_eq!(shown(page(&app, &viewer, "/admin/submissions?state=PENDING").await), ids(&|s| !s.2));
    assert!(shown(page(&app, &viewer, "/admin/submissions?state=SENT").await).is_empty());
    let today = chrono::Utc::now().date_naive();
    let yesterday = today.pred_opt().unwrap();
    assert_eq!(
        shown(page(&app, &viewer, &format!("/admin/submissions?from={today}&to={today}")).await).len(),
        4
    );
    assert!(shown(page(&app, &viewer, &format!("/admin/submissions?to={yesterday}")).await).is_empty());
    // Unreadable values are ignored rather than refused.
    assert_eq!(shown(page(&app, &viewer, "/admin/submissions?from=soon&state=x&page=y").await).len(), 4);
    let html = page(&app, &viewer, "/admin/submissions?spam=yes").await;
    assert!(html.contains(r#"<option value="yes" selected>yes</option>"#), "the form shows the filter");
}

async fn the_list_pages_by_fifty(backend: Backend) {
    let app = spawn_app(backend).await;
    seed(&app.pool, &app.config, 51).await;
    let viewer = app.sign_in(Role::Viewer).await;
    let first = page(&app, &viewer, "/admin/submissions").await;
    assert_eq!(listed(&first).len(), 50);
    assert!(first.contains("51 submission(s), page 1 of 2"));
    assert!(first.contains(r#"href="/admin/submissions?page=2" rel="next""#), "a link to page 2");
    let second = page(&app, &viewer, "/admin/submissions?page=2").await;
    assert_eq!(listed(&second).len(), 1);
    assert!(
        second.contains("page 2 of 2") && second.contains(r#"href="/admin/submissions?page=1" rel="prev""#)
    );
    assert!(listed(&first).iter().all(|id| !listed(&second).contains(id)), "no row on both pages");
    let filtered = page(&app, &viewer, "/admin/submissions?form=contact&spam=no").await;
    assert!(
        filtered.contains(r#"href="/admin/submissions?form=contact&#38;spam=no&#38;page=2""#),
        "filters kept"
    );
}

async fn the_csv_has_a_header_and_one_neutralised_row_per_submission(backend: Backend) {
    let app = spawn_app(backend).await;
    app.submit(&new_key(), &inquiry("Plain, with a comma")).await;
    app.submit(&new_key(), &inquiry("=cmd|' /C calc'!A0")).await;
    let viewer = app.sign_in(Role::Viewer).await;
    let resp = app.admin_get(Some(&viewer), "/admin/submissions.csv").await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/csv"));
    assert!(resp.headers()["content-disposition"].to_str().unwrap().starts_with("attachment"));
    let body = resp.text().await.unwrap();
    let body = body.strip_prefix('\u{feff}').expect("UTF-8 with a BOM, as Excel needs");
    let lines: Vec<&str> = body.trim_end().split("\r\n").collect();
    assert_eq!(
        lines[0],
        "submission_id,reference,form,received_at,channel,keyless,spam,effect_states,name,email,company,topic,message"
    );
    assert_eq!(lines.len(), 3, "{body}");
    assert!(body.contains(",'=cmd|' /C calc'!A0\r\n"), "neutralised: {body}");
    assert!(!body.contains(",=cmd"));
    assert!(body.contains(",\"Plain, with a comma\"\r\n"), "quoted: {body}");
    assert!(lines[1].contains("crm_lead=PENDING"), "{}", lines[1]);
    let none = app.admin_get(Some(&viewer), "/admin/submissions.csv?spam=yes").await.text().await.unwrap();
    assert_eq!(none.trim_end().split("\r\n").count(), 1, "only the header");
    let plain =
        app.admin_get(Some(&viewer), "/admin/submissions.csv?encoding=utf-8").await.text().await.unwrap();
    assert!(plain.starts_with("submission_id,"), "no BOM when asked: {plain:?}");
}

async fn search_finds_content_without_putting_the_term_in_a_url(backend: Backend) {
    let app = spawn_app(backend).await;
    let (grace, ada) = (new_key(), new_key());
    let mut body = inquiry("The printer is on fire, 100% sure. Ångström units");
    body["name"] = json!("Grace Hopper");
    body["email"] = json!("grace@example.com");
    app.submit(&grace, &body).await;
    app.submit(&ada, &inquiry("Please call me back")).await;
    let (grace, ada) = (id_of(&app, &grace).await, id_of(&app, &ada).await);
    let viewer = app.sign_in(Role::Viewer).await;
    let admin = app.sign_in(Role::Admin).await;

    for (session, term) in [
        (&viewer, "grace@example.com"),
        (&viewer, "PRINTER"),
        (&admin, "fire, 100%"),
        (&viewer, "ångström"),
        (&viewer, "ÅNGSTRÖM UNITS"),
    ] {
        let resp = search(&app, session, &session.csrf, term).await;
        assert_eq!(resp.status(), 200, "{term}");
        assert!(resp.headers().get("location").is_none());
        assert!(resp.headers().iter().all(|(_, v)| !v.to_str().unwrap_or("").contains(term)), "{term}");
        let html = resp.text().await.unwrap();
        assert_eq!(listed(&html), std::slice::from_ref(&grace), "{term}");
        let hrefs: Vec<&str> = html.split("href=\"").skip(1).map(|h| h.split('"').next().unwrap()).collect();
        assert!(hrefs.iter().all(|h| !h.to_lowercase().contains(&term.to_lowercase())), "{term}: {hrefs:?}");
        assert!(!html.contains("action=\"/admin/submissions/search?"));
    }
    let ada_found = search(&app, &viewer, &viewer.csrf, "call me").await.text().await.unwrap();
    assert_eq!(listed(&ada_found), [ada]);
    for nothing in ["%%", "_", "nobody@example.com", "email"] {
        let html = search(&app, &viewer, &viewer.csrf, nothing).await.text().await.unwrap();
        assert!(listed(&html).is_empty(), "{nothing}");
    }
    assert_eq!(search(&app, &viewer, &admin.csrf, "grace").await.status(), 403, "another session's token");
    let no_token = app.admin_post(Some(&viewer), "/admin/submissions/search", None, &[("q", "grace")]).await;
    assert_eq!(no_token.status(), 403);
}

async fn the_detail_page_shows_fields_deliveries_effects_and_attempts(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let app = &d.app;
    let key = new_key();
    app.submit(&key, &inquiry("Show me everything")).await;
    app.submit(&key, &inquiry("Show me everything")).await;
    app.submit(&key, &inquiry("Changed my mind")).await;
    let worker = d.worker();
    d.settle(&worker).await;
    let id = id_of(app, &key).await;
    let viewer = app.sign_in(Role::Viewer).await;
    let html = page(app, &viewer, &format!("/admin/submissions/{id}")).await;

    assert!(html.contains("<dt>Your name</dt><dd><pre>Ada Lovelace</pre></dd>"), "labelled fields: {html}");
    assert!(html.contains("<dt>Message</dt><dd><pre>Show me everything</pre></dd>"));
    assert!(html.contains(&format!("<code>{key}</code>")), "the operation ID");
    let deliveries = html.split(r#"id="deliveries""#).nth(1).unwrap().split("</table>").next().unwrap();
    for outcome in ["<td>accepted</td>", "<td>repeat (answered as before)</td>", "<td>conflict</td>"] {
        assert!(deliveries.contains(outcome), "{outcome}: {deliveries}");
    }
    let crm: String = app.effect_id("crm_lead").await;
    let section =
        html.split(&format!(r#"id="effect-{crm}""#)).nth(1).unwrap().split("</section>").next().unwrap();
    assert!(
        section.contains("crm_lead") && section.contains(r#"<span class="state">Sent</span>"#),
        "{section}"
    );
    assert!(section.contains(r#"<tr class="attempt">"#), "the attempt timeline");
    assert!(section.contains(&format!(r#"action="/admin/effects/{crm}/replay""#)), "its actions");
    assert!(html.contains(r#"href="/admin/conflicts/"#), "the related conflict");

    // A suspected duplicate shows from both sides, with its score and reasons.
    let later = new_key();
    app.submit(&later, &inquiry("Me again")).await;
    let later = id_of(app, &later).await;
    let (original, duplicate) = (id.clone(), later.clone());
    app.query(move |pool| {
        with_conn!(pool, |c| {
            diesel::delete(duplicate_pairs::table).execute(c).map_err(DbError::from)?;
            diesel::insert_into(duplicate_pairs::table)
                .values((
                    duplicate_pairs::id.eq("pair-1"),
                    duplicate_pairs::form.eq("contact"),
                    duplicate_pairs::original_id.eq(&original),
                    duplicate_pairs::duplicate_id.eq(&duplicate),
                    duplicate_pairs::score.eq(0.9),
                    duplicate_pairs::reasons.eq(r#"["same email address","same topic"]"#),
                    duplicate_pairs::status.eq("open"),
                    duplicate_pairs::created_at.eq(onceform::base::clock::now()),
                ))
                .execute(c)
                .map_err(DbError::from)
        })
    })
    .await;
    let html = page(app, &viewer, &format!("/admin/submissions/{id}")).await;
    let pairs = html.split(r#"id="pairs""#).nth(1).unwrap().split("</table>").next().unwrap();
    assert!(pairs.contains(&format!(r#"original of <a href="/admin/submissions/{later}">"#)), "{pairs}");
    assert!(
        pairs.contains("<td>90%</td><td>same email address; same topic</td><td>To review</td>"),
        "{pairs}"
    );
    assert!(pairs.contains(r#"href="/admin/duplicates#pair-pair-1""#));
    let other = page(app, &viewer, &format!("/admin/submissions/{later}")).await;
    assert!(other.contains(&format!(r#"duplicate of <a href="/admin/submissions/{id}">"#)));
}

async fn visitor_markup_is_inert_on_every_page(backend: Backend) {
    let app = spawn_app(backend).await;
    let key = new_key();
    let mut body = inquiry(IMG);
    body["name"] = json!(SCRIPT);
    assert_eq!(app.submit(&key, &body).await.status(), 201);
    let id = id_of(&app, &key).await;
    let (admin, viewer) = (app.sign_in(Role::Admin).await, app.sign_in(Role::Viewer).await);
    let effect: String = app.effect_id("crm_lead").await;
    let note = "<script>alert(2)</script>";
    let cancelled = app
        .admin_post(
            Some(&admin),
            &format!("/admin/effects/{effect}/cancel"),
            Some(&admin.csrf),
            &[("note", note)],
        )
        .await;
    assert_eq!(cancelled.status(), 303);

    let searched = search(&app, &viewer, &viewer.csrf, "alert(1)").await;
    let pages = [
        ("list", page(&app, &viewer, "/admin/submissions").await, true),
        ("detail", page(&app, &viewer, &format!("/admin/submissions/{id}")).await, true),
        ("search", searched.text().await.unwrap(), true),
        ("audit", page(&app, &viewer, "/admin/audit").await, false),
        ("dashboard", page(&app, &viewer, "/admin").await, false),
    ];
    for (name, html, shows_content) in &pages {
        for raw in [SCRIPT, IMG, "<img", note] {
            assert!(!html.contains(raw), "{name} contains {raw}");
        }
        if *shows_content {
            assert!(html.contains(SCRIPT_ESCAPED) && html.contains(IMG_ESCAPED), "{name}: {html}");
        }
    }
    let audit = &pages[3].1;
    assert!(audit.contains("&#60;script&#62;alert(2)&#60;/script&#62;"), "the note, escaped: {audit}");
    assert!(audit.contains(&format!(r#"href="/admin/submissions/{id}#effect-{effect}""#)), "linked target");
    assert!(pages[1].1.contains("admin: &#60;script&#62;alert(2)"), "the effect's note on the detail page");
}
