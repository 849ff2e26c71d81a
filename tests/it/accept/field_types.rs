//! Every field type a form can declare: rendered on the page, validated with a code of its
//! own, fingerprinted by its normal form (a reordered `checkboxes` answer is the same
//! content), stored, exported and sent to the CRM. `undeclared_fields = "keep"` stores what
//! an existing HTML form sends; `reject` (the default) refuses it in plain words.

use serde_json::{json, Value};

use crate::on_both_backends;
use crate::support::delivery::spawn_delivery_app;
use crate::support::{new_key, spawn_app_with, test_keyring, Backend, TestApp};
use onceform::config::Config;
use onceform::services::accounts::Role;

on_both_backends!(
    every_type_renders_accessibly,
    every_type_has_its_own_error_code,
    answers_are_compared_by_their_normal_form,
    a_browser_post_is_stored_exported_and_sent_to_the_crm,
    kept_undeclared_fields_are_content_and_rejected_ones_are_named_in_plain_words,
    the_proof_of_consent_outlives_retention_and_erasure,
);

const QUOTE: &str = r#"
[forms.quote]
title = "Request a quote"
honeypot = ""
effects = ["crm_lead"]
[[forms.quote.fields]]
name = "name"
required = true
[[forms.quote.fields]]
name = "email"
type = "email"
required = true
[[forms.quote.fields]]
name = "interests"
type = "checkboxes"
options = ["Valves", "Pumps", "Seals"]
[[forms.quote.fields]]
name = "contact_by"
type = "radio"
options = ["Phone", "Email"]
[[forms.quote.fields]]
name = "products"
type = "multiselect"
options = ["A-100", "B-200", "C-300"]
[[forms.quote.fields]]
name = "newsletter"
type = "checkbox"
label = "Send me the newsletter"
[[forms.quote.fields]]
name = "privacy"
type = "consent"
label = "I agree to the privacy policy"
version = "2026-01"
[[forms.quote.fields]]
name = "quantity"
type = "number"
min = 1
max = 1000
step = 1
[[forms.quote.fields]]
name = "needed_by"
type = "date"
min = 2026-01-01
max = "2030-12-31"
[[forms.quote.fields]]
name = "website"
type = "url"
[[forms.quote.fields]]
name = "campaign"
type = "hidden"
value = "spring"

[forms.legacy]
title = "An existing HTML form"
honeypot = ""
effects = []
undeclared_fields = "keep"
[[forms.legacy.fields]]
name = "email"
type = "email"
required = true
"#;

fn with_quote(c: &mut Config) {
    let extra = Config::parse(QUOTE).unwrap();
    assert!(onceform::config::problems(&extra).is_empty(), "{:?}", onceform::config::problems(&extra));
    c.forms.extend(extra.forms);
}

fn good() -> Value {
    json!({
        "name": "Lin Mei", "email": "mei@example.com", "interests": ["Pumps", "Valves"],
        "contact_by": "Email", "products": ["B-200"], "newsletter": true, "privacy": true,
        "quantity": 40, "needed_by": "2027-03-01", "website": "https://Example.com", "campaign": "spring"
    })
}

async fn submit(app: &TestApp, form: &str, key: &str, body: &Value) -> reqwest::Response {
    let url = app.url(&format!("/api/forms/{form}/submissions"));
    app.client.post(url).header("Idempotency-Key", key).json(body).send().await.unwrap()
}

async fn stored(app: &TestApp, form: &str, key: &str) -> Value {
    use diesel::prelude::*;
    use onceform::db::schema::submissions::dsl as s;
    use onceform::db::DbError;
    use onceform::with_conn;
    let (form, key) = (form.to_string(), key.to_string());
    let text: String = app
        .query(move |pool| {
            with_conn!(pool, |c| s::submissions
                .filter(s::form.eq(&form).and(s::operation_id.eq(&key)))
                .select(s::fields_json)
                .first::<Option<String>>(c)
                .map_err(DbError::from))
        })
        .await
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

async fn every_type_renders_accessibly(backend: Backend) {
    let app = spawn_app_with(backend, with_quote).await;
    let page = app.client.get(app.url("/f/quote")).send().await.unwrap().text().await.unwrap();
    for wanted in [
        r#"<fieldset id="f-interests">"#,
        r#"<legend>interests</legend>"#,
        r#"<input type="checkbox" name="interests" value="Valves">"#,
        r#"<input type="radio" name="contact_by" value="Phone">"#,
        r#"<select id="f-products" name="products" multiple>"#,
        r#"<input id="f-newsletter" name="newsletter" type="checkbox" value="on">"#,
        r#"name="privacy" type="checkbox" value="on" required>"#,
        "I agree to the privacy policy",
        r#"type="number" value="" min="1" max="1000" step="1">"#,
        r#"type="date" value="" min="2026-01-01" max="2030-12-31">"#,
        r#"name="website" type="url""#,
        r#"<input type="hidden" name="campaign" value="spring">"#,
    ] {
        assert!(page.contains(wanted), "the page lacks {wanted}:\n{page}");
    }
    assert!(!page.contains(r#"<label for="f-campaign">"#), "a hidden field has no label");
}

async fn every_type_has_its_own_error_code(backend: Backend) {
    let app = spawn_app_with(backend, with_quote).await;
    let cases: &[(&str, Value, &str)] = &[
        ("interests", json!(["Pumps", "Gears"]), "not_an_option"),
        ("contact_by", json!("Fax"), "not_an_option"),
        ("products", json!(["Z-900"]), "not_an_option"),
        ("newsletter", json!("maybe"), "not_a_boolean"),
        ("privacy", json!(false), "consent_required"),
        ("quantity", json!("many"), "not_a_number"),
        ("quantity", json!(0), "below_minimum"),
        ("quantity", json!(2000), "above_maximum"),
        ("quantity", json!(1.5), "off_step"),
        ("needed_by", json!("01/03/2027"), "invalid_date"),
        ("needed_by", json!("2025-12-31"), "too_early"),
        ("needed_by", json!("2031-01-01"), "too_late"),
        ("website", json!("ftp://example.com/file"), "invalid_url"),
    ];
    for (field, value, code) in cases {
        let mut body = good();
        body[*field] = value.clone();
        let key = new_key();
        let resp = submit(&app, "quote", &key, &body).await;
        assert_eq!(resp.status(), 422, "{field} = {value}");
        let problem: Value = resp.json().await.unwrap();
        assert_eq!(problem["codes"][*field], json!([code]), "{field} = {value}: {problem}");
        assert!(problem["errors"][*field][0].as_str().unwrap().contains(field), "{problem}");
    }
    let mut no_consent = good();
    no_consent.as_object_mut().unwrap().remove("privacy");
    let problem: Value = submit(&app, "quote", &new_key(), &no_consent).await.json().await.unwrap();
    assert_eq!(problem["codes"]["privacy"], json!(["consent_required"]));
    // A JSON type the field cannot take is a malformed body, as for a text field.
    let mut wrong = good();
    wrong["quantity"] = json!([1]);
    assert_eq!(submit(&app, "quote", &new_key(), &wrong).await.status(), 400);
    assert_eq!(app.stats().await.submissions, 0, "nothing invalid was stored");
}

async fn answers_are_compared_by_their_normal_form(backend: Backend) {
    let app = spawn_app_with(backend, with_quote).await;
    let key = new_key();
    assert_eq!(submit(&app, "quote", &key, &good()).await.status(), 201);
    let fields = stored(&app, "quote", &key).await;
    assert_eq!(fields["interests"], "Valves\nPumps", "in the options' order");
    assert_eq!(fields["quantity"], "40");
    assert_eq!(fields["website"], "https://example.com/");
    assert_eq!(fields["privacy"], "2026-01", "the consent version is what is stored");
    assert_eq!(fields["newsletter"], "true");

    // Reordered and repeated options, `40.0` for 40, `on` for true: the same content.
    let mut same = good();
    same["interests"] = json!(["Valves", "Pumps", "Valves"]);
    same["quantity"] = json!("40.0");
    same["newsletter"] = json!("on");
    same["website"] = json!("https://example.com/");
    let again = submit(&app, "quote", &key, &same).await;
    assert_eq!(again.status(), 200, "{}", again.text().await.unwrap());

    let mut changed = good();
    changed["interests"] = json!(["Valves"]);
    assert_eq!(submit(&app, "quote", &key, &changed).await.status(), 409);
    let mut changed = good();
    changed["needed_by"] = json!("2027-03-02");
    assert_eq!(submit(&app, "quote", &key, &changed).await.status(), 409);
    assert_eq!(app.stats().await.submissions, 1);
}

async fn a_browser_post_is_stored_exported_and_sent_to_the_crm(backend: Backend) {
    let d = spawn_delivery_app(backend, with_quote).await;
    let app = &d.app;
    let key = new_key();
    let form = [
        ("operation_id", key.as_str()),
        ("name", "Lin Mei"),
        ("email", "mei@example.com"),
        ("interests", "Seals"),
        ("interests", "Valves"),
        ("contact_by", "Phone"),
        ("products", "A-100"),
        ("products", "C-300"),
        ("privacy", "on"),
        ("quantity", "12"),
        ("needed_by", "2027-05-20"),
        ("website", ""),
        ("campaign", "spring"),
    ];
    let body = serde_urlencoded::to_string(form).unwrap();
    let resp = app
        .client
        .post(app.url("/f/quote"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 303);
    let fields = stored(app, "quote", &key).await;
    assert_eq!(fields["interests"], "Valves\nSeals");
    assert_eq!(fields["products"], "A-100\nC-300");
    assert_eq!(fields["privacy"], "2026-01");
    assert_eq!(fields["campaign"], "spring");
    assert!(fields.get("newsletter").is_none() && fields.get("website").is_none(), "{fields}");

    let worker = d.worker();
    d.settle(&worker).await;
    let lead = d.crm.state.lock().unwrap().bodies.last().cloned().expect("a lead");
    let text = lead.to_string();
    // The consent's version, and its time (when the submission was received).
    let consented = r#""received_at":"20"#;
    for wanted in [r#""privacy":"2026-01""#, consented, r#""interests":"Valves;Seals""#, r#""quantity":"12""#]
    {
        assert!(text.contains(wanted), "the lead lacks {wanted}: {text}");
    }

    let admin = app.sign_in(Role::Viewer).await;
    let csv = app.admin_get(Some(&admin), "/admin/submissions.csv?form=quote&encoding=utf-8").await;
    let csv = csv.text().await.unwrap();
    let header = csv.lines().next().unwrap();
    assert!(header.contains("privacy") && header.contains("needed_by"), "{header}");
    assert!(csv.contains("2026-01") && csv.contains("2027-05-20"), "{csv}");
}

async fn kept_undeclared_fields_are_content_and_rejected_ones_are_named_in_plain_words(backend: Backend) {
    let app = spawn_app_with(backend, with_quote).await;
    let key = new_key();
    let body = json!({"email": "mei@example.com", "budget": "5000", "source": "trade fair"});
    assert_eq!(submit(&app, "legacy", &key, &body).await.status(), 201);
    let fields = stored(&app, "legacy", &key).await;
    assert_eq!((fields["budget"].as_str(), fields["source"].as_str()), (Some("5000"), Some("trade fair")));
    assert_eq!(submit(&app, "legacy", &key, &body).await.status(), 200);
    let changed = json!({"email": "mei@example.com", "budget": "6000", "source": "trade fair"});
    assert_eq!(submit(&app, "legacy", &key, &changed).await.status(), 409, "a kept field is content");
    let many: serde_json::Map<String, Value> = (0..25)
        .map(|i| (format!("extra{i}"), json!("x")))
        .chain([("email".into(), json!("a@b.ch"))])
        .collect();
    let problem: Value = submit(&app, "legacy", &new_key(), &Value::Object(many)).await.json().await.unwrap();
    assert!(problem["codes"].to_string().contains("too_many_fields"), "{problem}");

    // The default refuses it, and the visitor's page says so without Markdown.
    let page = app
        .client
        .post(app.url("/f/contact"))
        .form(&[
            ("name", "Ada"),
            ("email", "ada@example.com"),
            ("topic", "Sales"),
            ("message", "Hi"),
            ("budget", "5k"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 422);
    let html = page.text().await.unwrap();
    assert!(html.contains("budget is not a field of this form"), "{html}");
    assert!(!html.contains('`'), "no Markdown on a visitor's page");
}

/// A tombstone keeps the version agreed to (its time is `received_at`) and nothing else of
/// the content, whether retention or an erasure made it; the export still shows both.
async fn the_proof_of_consent_outlives_retention_and_erasure(backend: Backend) {
    use onceform::services::lifecycle::erase::{erase, Actor, Files, Person};
    let app = spawn_app_with(backend, |c| {
        with_quote(c);
        c.forms.get_mut("quote").unwrap().retention.content =
            Some(onceform::config::retention::Window::parse("1d").unwrap());
    })
    .await;
    let (erased, expired) = (new_key(), new_key());
    assert_eq!(submit(&app, "quote", &erased, &good()).await.status(), 201);
    let mut lin = good();
    lin["email"] = json!("lin@example.com");
    lin["name"] = json!("Lin Hua");
    assert_eq!(submit(&app, "quote", &expired, &lin).await.status(), 201);

    let config = app.config.clone();
    let report = app
        .query(move |pool| {
            let person = Person::Email("mei@example.com".into());
            let files = Files::of(&config);
            erase(pool, &test_keyring(), &files, &config.consent_fields(), &person, false, &Actor::cli())
        })
        .await;
    assert_eq!(report.submissions, 1);
    let config = app.config.clone();
    let later = onceform::base::clock::now() + chrono::Duration::days(2);
    app.query(move |pool| {
        let writes = onceform::db::Writes::shared(pool, &config.database).unwrap();
        onceform::services::lifecycle::purge::run_pass(&writes, &config, later)
    })
    .await;

    let admin = app.sign_in(Role::Viewer).await;
    let csv = app.admin_get(Some(&admin), "/admin/submissions.csv?form=quote&encoding=utf-8").await;
    let csv = csv.text().await.unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    for row in &rows {
        assert_eq!(row[column("privacy")], "2026-01", "the version agreed to: {csv}");
        assert!(row[column("received_at")].starts_with("20"), "and when: {csv}");
        assert_eq!((row[column("email")], row[column("name")]), ("", ""), "nothing else: {csv}");
    }
    assert!(!csv.contains("example.com") && !csv.contains("Lin"), "{csv}");
    // A late retry of either still replays from the tombstone.
    assert_eq!(submit(&app, "quote", &erased, &good()).await.status(), 200);
    assert_eq!(submit(&app, "quote", &expired, &lin).await.status(), 200);
}
