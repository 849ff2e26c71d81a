//! Issue 22: the duplicate review finds the repeated request, not just the repeated address.
//! Canonical forms (E.164 phones read with the form's `default_region`, width-folded email
//! without +tag), candidates by email OR phone OR name plus company (across a
//! `duplicates.group`), and a judgement that tells a repeat from the same sender's new
//! request and from colleagues sharing a switchboard; `duplicates rescreen` keeps decisions.

use diesel::prelude::*;
use onceform::config::Config;
use onceform::db::schema::{duplicate_pairs, submissions};
use onceform::db::DbError;
use onceform::domain::{FieldConfig, FieldType};
use onceform::with_conn;
use serde_json::{json, Value};

use crate::on_both_backends;
use crate::support::delivery::spawn_delivery_app;
use crate::support::{new_key, spawn_app_with, test_keyring, Backend, TestApp};

on_both_backends!(
    a_full_width_phone_and_email_are_accepted_and_stored_as_typed,
    a_retry_of_a_phone_stored_by_the_previous_release_replays_however_it_is_typed,
    one_person_with_two_phone_formats_and_two_addresses_gives_one_pair_with_readable_reasons,
    the_same_persons_other_product_gives_no_duplicate_item,
    colleagues_sharing_a_switchboard_give_no_item,
    a_chinese_retyped_message_scores_as_alike,
    forms_of_one_group_see_each_other,
    a_full_width_address_gets_its_confirmation,
    rescreening_keeps_admin_decisions,
);

/// The demo form with a phone field read as Taiwanese (US numbers tried next), and a
/// `quote` form like it; `group`: both in one duplicates group.
fn with_phone(config: &mut Config, group: bool) {
    let contact = config.forms.get_mut("contact").unwrap();
    contact.fields.push(FieldConfig {
        name: "phone".into(),
        label: Some("Phone".into()),
        kind: FieldType::Phone,
        ..FieldConfig::default()
    });
    contact.default_region = Some("TW".into());
    contact.duplicates.other_regions = vec!["US".into()];
    contact.confirmation_window_minutes = 0;
    if group {
        contact.duplicates.group = Some("example-site".into());
        let quote = contact.clone();
        config.forms.insert("quote".into(), quote);
    }
    config.link_duplicate_groups();
}

async fn app(backend: Backend) -> TestApp {
    spawn_app_with(backend, |c| with_phone(c, false)).await
}

fn inquiry(name: &str, email: &str, phone: &str, company: &str, topic: &str, message: &str) -> Value {
    let mut v = json!({"name": name, "email": email, "topic": topic, "message": message});
    if !phone.is_empty() {
        v["phone"] = phone.into();
    }
    if !company.is_empty() {
        v["company"] = company.into();
    }
    v
}

async fn send(app: &TestApp, form: &str, body: &Value) -> String {
    let resp = app
        .client
        .post(app.url(&format!("/api/forms/{form}/submissions")))
        .header("Idempotency-Key", new_key())
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201, "{body}");
    let body: Value = resp.json().await.unwrap();
    body["submission_id"].as_str().unwrap().to_string()
}

/// (original, duplicate, score, reasons, status) of every pair, once none is screening.
type Pair = (String, String, f64, Vec<String>, String);

async fn pairs(app: &TestApp) -> Vec<Pair> {
    let all = app.screened_pairs().await;
    all.into_iter().map(|(o, d, s, r, st)| (o, d, s, serde_json::from_str(&r).unwrap(), st)).collect()
}

fn open(pairs: &[Pair]) -> Vec<&Pair> {
    pairs.iter().filter(|p| p.4 == "open").collect()
}

async fn a_full_width_phone_and_email_are_accepted_and_stored_as_typed(backend: Backend) {
    let app = app(backend).await;
    let typed = inquiry(
        "林美玲",
        "ＭＥＩ．ＬＩＮ＠ｅｘａｍｐｌｅ．ｃｏｍ",
        "０９１２３４５６７８",
        "",
        "Sales",
        "請提供X200報價",
    );
    let resp = app.submit(&new_key(), &typed).await;
    assert_eq!(resp.status(), 201, "what a full-width IME types is valid input");
    let key = new_key();
    app.submit(
        &key,
        &inquiry("林美玲", "mei.lin@example.com", "0912-345-678", "", "Sales", "請提供X200報價，謝謝"),
    )
    .await;
    let stored = app.stored_fields(&key).await.unwrap();
    assert_eq!(stored["phone"], "0912-345-678", "what was typed is stored, separators and all");
    let all = pairs(&app).await;
    assert_eq!(open(&all).len(), 1, "the full-width phone and address matched the ASCII ones: {all:?}");
    let fields: Vec<Option<String>> = app
        .query(|pool| {
            with_conn!(pool, |c| submissions::table
                .order(submissions::received_at)
                .select(submissions::fields_json)
                .load(c)
                .map_err(DbError::from))
        })
        .await;
    let first: Value = serde_json::from_str(fields[0].as_deref().unwrap()).unwrap();
    assert_eq!(first["phone"], "０９１２３４５６７８", "what was typed is what is stored and shown");
    assert_eq!(first["email"], "ｍｅｉ．ｌｉｎ＠ｅｘａｍｐｌｅ．ｃｏｍ");
}

/// The release before phones were kept as typed stored a phone's digits (`0912345678` for
/// `0912-345-678`) and digested those. A retry of such a row, typed with separators or
/// without, replays it; another number under its key is a conflict, and the row stays as it
/// was. The row is written as that release wrote it, under a key this process never saw (so
/// the retry is judged by the database, not the memory of recent answers).
async fn a_retry_of_a_phone_stored_by_the_previous_release_replays_however_it_is_typed(backend: Backend) {
    let app = app(backend).await;
    let (key, id) = (new_key(), uuid::Uuid::now_v7().to_string());
    let sent =
        inquiry("Mei Lin", "mei@example.com", "0912-345-678", "", "Sales", "A quote for the X200, please");
    let mut previous: std::collections::BTreeMap<String, String> =
        serde_json::from_value(sent.clone()).unwrap();
    previous.insert("phone".into(), "0912345678".into());
    let fields_json = serde_json::to_string(&previous).unwrap();
    let fingerprint = test_keyring().digest(&fields_json);
    let body = json!({"submission_id": id, "operation_id": key, "form": "contact", "status": "accepted",
        "received_at": "2026-12-01T10:00:00Z", "operation_expires_at": "2026-12-31T10:00:00Z", "effects": []})
    .to_string();
    let quote = |s: &str| s.replace('\'', "''");
    let row = format!(
        "INSERT INTO submissions (id, form, operation_id, fingerprint, fields_json, response_body, channel, \
         keyless, spam, received_at, operation_expires_at) VALUES ('{id}', 'contact', '{key}', '{fingerprint}', \
         '{}', '{}', 'api', FALSE, FALSE, '2026-12-01 10:00:00', '2999-12-31 10:00:00')",
        quote(&fields_json),
        quote(&body)
    );
    app.query(move |pool| {
        use diesel::connection::SimpleConnection;
        with_conn!(pool, |c| c.batch_execute(&row).map_err(DbError::from))
    })
    .await;
    for typed in ["0912-345-678", "0912 345 678", "0912345678"] {
        let mut retry = sent.clone();
        retry["phone"] = typed.into();
        let resp = app.submit(&key, &retry).await;
        assert_eq!(resp.status(), 200, "{typed}: the same content, replayed");
        assert_eq!(resp.text().await.unwrap(), body, "{typed}: the stored answer");
    }
    let mut other = sent.clone();
    other["phone"] = "0912-345-679".into();
    assert_eq!(app.submit(&key, &other).await.status(), 409, "another number is another content");
    assert_eq!(app.stored_fields(&key).await.unwrap()["phone"], "0912345678", "the original untouched");
    assert_eq!(app.stats().await.submissions, 1);
}

async fn one_person_with_two_phone_formats_and_two_addresses_gives_one_pair_with_readable_reasons(
    backend: Backend,
) {
    let app = app(backend).await;
    let message = "您好，我們想詢問X200型號的報價，數量大約50台，請問交期多久？謝謝。";
    let first = send(
        &app,
        "contact",
        &inquiry("林美玲", "meiling@example.com.tw", "+886 912 345 678", "", "Sales", message),
    )
    .await;
    let again = send(
        &app,
        "contact",
        &inquiry(
            "林美玲",
            "mei.lin.home@gmail.com",
            "0912-345-678",
            "",
            "Sales",
            &format!("上一封好像沒送出，再寄一次。{message}"),
        ),
    )
    .await;
    let all = pairs(&app).await;
    assert_eq!(all.len(), 1, "{all:?}");
    let (o, d, score, reasons, status) = &all[0];
    assert_eq!((o, d, status.as_str()), (&first, &again, "open"));
    assert!(*score >= 0.8, "{score} {reasons:?}");
    for reason in
        ["same phone, written differently", "same name", "same product code", "same quantity", "same topic"]
    {
        assert!(reasons.contains(&reason.to_string()), "{reason}: {reasons:?}");
    }
    assert!(reasons.iter().any(|r| r.starts_with("message ") && r.ends_with("% alike")), "{reasons:?}");
    assert!(!reasons.iter().any(|r| r.contains("912")), "no personal data in stored reasons: {reasons:?}");

    // The review page shows the canonical phone both matched on, and what differs.
    let viewer = app.sign_in(onceform::services::accounts::Role::Viewer).await;
    let page = app.admin_get(Some(&viewer), "/admin/duplicates").await.text().await.unwrap();
    assert!(page.contains("+886 912 345 678"), "the canonical phone: {page}");
    assert!(page.contains(r#"<mark class="diff">"#), "what differs is highlighted");
}

async fn the_same_persons_other_product_gives_no_duplicate_item(backend: Backend) {
    let app = app(backend).await;
    let ask = |product: &str| {
        format!("Hello, we would like a quote for 40 units of the {product}. What is the lead time?")
    };
    send(
        &app,
        "contact",
        &inquiry(
            "Ada Lovelace",
            "ada@example.com",
            "(415) 555-0132",
            "Analytical Engines",
            "Sales",
            &ask("X200"),
        ),
    )
    .await;
    let other = send(
        &app,
        "contact",
        &inquiry(
            "Ada Lovelace",
            "ada@example.com",
            "415-555-0132",
            "Analytical Engines Ltd",
            "Sales",
            &ask("A-17"),
        ),
    )
    .await;
    let all = pairs(&app).await;
    assert!(open(&all).is_empty(), "another product is another request: {all:?}");
    assert_eq!(all.len(), 1, "listed apart as the same sender's new request: {all:?}");
    assert_eq!((all[0].1.as_str(), all[0].4.as_str()), (other.as_str(), "same_sender"));
    assert!(all[0].3.contains(&"different product code".to_string()), "{:?}", all[0].3);
    let viewer = app.sign_in(onceform::services::accounts::Role::Viewer).await;
    let page = app.admin_get(Some(&viewer), "/admin/duplicates").await.text().await.unwrap();
    assert!(page.contains("Same sender, new request"), "listed apart: {page}");
}

async fn colleagues_sharing_a_switchboard_give_no_item(backend: Backend) {
    let app = app(backend).await;
    let switchboard = "(02) 2712-3456";
    let price_list = "請提供價目表，謝謝。";
    send(
        &app,
        "contact",
        &inquiry("陳怡君", "yijun@tpc.com.tw", switchboard, "台灣精密股份有限公司", "Sales", price_list),
    )
    .await;
    send(
        &app,
        "contact",
        &inquiry("黃志明", "chihming@tpc.com.tw", "02-27123456", "台灣精密公司", "Sales", price_list),
    )
    .await;
    send(
        &app,
        "contact",
        &inquiry("Mary Smith", "mary@northwind.example", "", "", "Sales", "Please send a price list."),
    )
    .await;
    send(
        &app,
        "contact",
        &inquiry("John Brown", "john@redwood.example", "", "", "Sales", "Please send a price list."),
    )
    .await;
    let all = pairs(&app).await;
    assert!(all.is_empty(), "a shared number or a generic message is not an identity: {all:?}");
}

async fn a_chinese_retyped_message_scores_as_alike(backend: Backend) {
    let app = app(backend).await;
    send(
        &app,
        "contact",
        &inquiry(
            "張家豪",
            "chiahao@example.com",
            "",
            "",
            "Support",
            "我們的RT-AX88U出現異常，開機後無法連線，已經重新啟動過，請協助處理。",
        ),
    )
    .await;
    send(
        &app,
        "contact",
        &inquiry(
            "張 家豪",
            "Chiahao@Example.com",
            "",
            "",
            "Support",
            "你好，我們的 RT-AX88U 有異常：開機後沒辦法連線，重新啟動過了，請幫忙處理！",
        ),
    )
    .await;
    let all = pairs(&app).await;
    assert_eq!(open(&all).len(), 1, "{all:?}");
    let alike: f64 = all[0]
        .3
        .iter()
        .find_map(|r| r.strip_prefix("message ")?.strip_suffix("% alike")?.parse().ok())
        .unwrap();
    assert!(alike >= 40.0, "a retyped Chinese message is alike, not one long word: {:?}", all[0].3);
    assert!(all[0].3.contains(&"same name".to_string()), "張 家豪 = 張家豪: {:?}", all[0].3);
}

async fn forms_of_one_group_see_each_other(backend: Backend) {
    let app = spawn_app_with(backend, |c| with_phone(c, true)).await;
    let message = "Please quote 25 units of the K-300, delivery to Taipei.";
    let first =
        send(&app, "contact", &inquiry("Grace Hopper", "grace@example.com", "", "", "Sales", message)).await;
    let again =
        send(&app, "quote", &inquiry("Grace Hopper", "grace+quote@example.com", "", "", "Sales", message))
            .await;
    let all = pairs(&app).await;
    assert_eq!(open(&all).len(), 1, "{all:?}");
    assert_eq!((&all[0].0, &all[0].1), (&first, &again), "the quote form saw the contact form's submission");
}

async fn rescreening_keeps_admin_decisions(backend: Backend) {
    let app = app(backend).await;
    let message = "Quote for 40 units of the X200 please";
    send(&app, "contact", &inquiry("Ada Lovelace", "ada@example.com", "", "", "Sales", message)).await;
    let decided =
        send(&app, "contact", &inquiry("Ada Lovelace", "ada@example.com", "", "", "Sales", message)).await;
    let undecided =
        send(&app, "contact", &inquiry("Ada Lovelace", "ADA@example.com", "", "", "Sales", message)).await;
    let before = pairs(&app).await;
    assert_eq!(open(&before).len(), 2, "{before:?}");
    // An admin decided one: not a duplicate (as the review page's action stores it).
    let id = decided.clone();
    app.query(move |pool| {
        with_conn!(pool, |c| diesel::update(
            duplicate_pairs::table.filter(duplicate_pairs::duplicate_id.eq(&id))
        )
        .set((duplicate_pairs::status.eq("not_duplicate"), duplicate_pairs::decided_by.eq(Some("admin-1")),))
        .execute(c)
        .map_err(DbError::from))
    })
    .await;
    // Older rows' digests as a release before canonical matching stored them: gone.
    app.query(|pool| {
        with_conn!(pool, |c| diesel::update(submissions::table)
            .set(submissions::email_digest.eq(None::<String>))
            .execute(c)
            .map_err(DbError::from))
    })
    .await;

    let config = app.config.clone();
    let report = app
        .query(move |pool| {
            onceform::services::duplicates::rescreen::rescreen(
                &config,
                pool,
                &crate::support::test_keyring(),
                Some("contact"),
                None,
            )
            .map_err(|e| DbError::Unavailable(e.to_string()))
        })
        .await;
    assert_eq!((report.screened, report.decided), (2, 1), "{report}");
    let after = pairs(&app).await;
    let mine: Vec<&Pair> = after.iter().filter(|p| p.1 == decided).collect();
    assert_eq!(mine.len(), 1, "{after:?}");
    assert_eq!(mine[0].4, "not_duplicate", "the admin's decision is kept");
    let again: Vec<&Pair> = after.iter().filter(|p| p.1 == undecided).collect();
    assert_eq!(again.len(), 1, "{after:?}");
    assert_eq!(again[0].4, "open", "screened again from fresh digests: {after:?}");
}

async fn a_full_width_address_gets_its_confirmation(backend: Backend) {
    let d = spawn_delivery_app(backend, |c| with_phone(c, false)).await;
    let key = new_key();
    let typed = inquiry(
        "林美玲",
        "ｍｅｉ＠ｅｘａｍｐｌｅ．ｃｏｍ",
        "０９１２３４５６７８",
        "",
        "Sales",
        "請提供報價",
    );
    assert_eq!(d.app.submit(&key, &typed).await.status(), 201);
    let worker = d.worker();
    d.settle(&worker).await;
    assert!(
        d.effects(Some(&key)).await.iter().all(|e| e.state == "SENT"),
        "{:?}",
        d.effects(Some(&key)).await
    );
    assert!(
        d.smtp.messages().iter().any(|m| m.contains("To: mei@example.com")),
        "the confirmation went to the mailbox the full-width address names"
    );
}
