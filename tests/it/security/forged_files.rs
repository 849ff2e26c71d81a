//! A file value is only ever an upload the server received (issue 45, row 1), and a refused
//! post leaves the file store as it was (row 4). Each test is named for the attack it stops.

use serde_json::{json, Value};

use crate::files::attach::{post_form, stored, upload, with_quote};
use crate::on_both_backends;
use crate::support::files::{kept_blobs, multipart, pdf, png, sha256, Part};
use crate::support::{new_key, problem_type, spawn_app_with, Backend, TestApp};

on_both_backends!(
    a_plain_form_post_naming_a_stored_file_is_refused,
    a_plain_form_post_names_uploads_and_gets_their_true_type_and_name,
    refused_multipart_posts_leave_the_store_as_it_was,
    the_upload_api_refuses_types_the_form_does_not_take,
    equal_files_under_two_names_keep_both_names,
);

/// An executable, by its magic bytes.
const EXE: &[u8] = b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00";

/// `POST /f/quote` as `application/x-www-form-urlencoded`.
async fn post_urlencoded(app: &TestApp, pairs: &[(&str, &str)]) -> reqwest::Response {
    let body = serde_urlencoded::to_string(pairs).unwrap();
    let resp =
        app.client.post(app.url("/f/quote")).header("Content-Type", "application/x-www-form-urlencoded");
    resp.body(body).send().await.unwrap()
}

/// Every entry of the file store, blobs and what is being written alike.
fn store_entries(app: &TestApp) -> usize {
    crate::support::files::store_entries(&app.config)
}

async fn a_plain_form_post_naming_a_stored_file_is_refused(backend: Backend) {
    let app = spawn_app_with(backend, with_quote).await;
    let real = pdf("someone else's contract");
    let (status, _) = upload(&app, "quote", "contract.pdf", &real).await;
    assert_eq!(status, 201);
    let stored_digest = sha256(&real);
    let forgeries = [
        // A stored blob under a made-up type, size and a name with a bidi override and a header.
        format!("{stored_digest} 1 application/pdf invoice%E2%80%AEfdp.exe%0D%0AX-Injected:%20yes"),
        // A digest that is not stored at all.
        format!("{} 10 application/pdf x.pdf", "a".repeat(64)),
    ];
    for forged in &forgeries {
        let key = new_key();
        let resp = post_urlencoded(
            &app,
            &[("operation_id", &key), ("email", "eve@example.com"), ("drawing", forged)],
        )
        .await;
        assert_eq!(resp.status(), 422, "a forged reference is refused: {forged}");
        let page = resp.text().await.unwrap();
        assert!(!page.contains("X-Injected"), "the forged name is not echoed");
        // The same forgery through the JSON API and as a multipart text part.
        let body = json!({"email": "eve@example.com", "drawing": [forged]});
        let (status, answer) = crate::files::attach::submit(&app, &new_key(), &body).await;
        assert_eq!(status, 422, "{answer}");
        assert_eq!(answer["codes"]["drawing"], json!(["unknown_upload"]));
    }
    let resp = post_form(
        &app,
        &[
            Part::Text("operation_id", &new_key()),
            Part::Text("email", "eve@example.com"),
            Part::Text("spec", &forgeries[0]),
        ],
    )
    .await;
    assert_eq!(resp.status(), 303, "a text part where a file is due is no file");
    let rows = stored(&app).await;
    assert_eq!(rows.len(), 1, "only the post that named no file was stored");
    assert!(rows[0].get("spec").is_none() && rows[0].get("drawing").is_none(), "{}", rows[0]);
}

async fn a_plain_form_post_names_uploads_and_gets_their_true_type_and_name(backend: Backend) {
    let app = spawn_app_with(backend, with_quote).await;
    let (_, up) = upload(&app, "quote", "invoice%E2%80%AEfdp.pdf%0D%0AX-Injected:%20yes", &pdf("p")).await;
    let id = up["upload_id"].as_str().unwrap();
    let resp =
        post_urlencoded(&app, &[("operation_id", &new_key()), ("email", "mei@example.com"), ("drawing", id)])
            .await;
    assert_eq!(resp.status(), 303, "{}", resp.text().await.unwrap());
    let value = stored(&app).await[0]["drawing"].as_str().unwrap().to_string();
    let sha = sha256(&pdf("p"));
    let size = pdf("p").len();
    assert_eq!(value, format!("{sha} {size} application/pdf invoicefdp%2EpdfX%2DInjected%3A%20yes"));
}

async fn refused_multipart_posts_leave_the_store_as_it_was(backend: Backend) {
    let app = spawn_app_with(backend, with_quote).await;
    let (drawing, big) = (pdf("ok"), pdf(&"x".repeat(120_000)));
    let posts: Vec<Vec<Part<'_>>> = vec![
        // Valid files, an invalid text field: 422 after every part was read.
        vec![Part::Text("email", "not an address"), Part::File("drawing", "a.pdf", &drawing)],
        // A missing required field.
        vec![Part::File("drawing", "a.pdf", &drawing), Part::File("spec", "b.pdf", &drawing)],
        // More files than `max_files` (3).
        vec![
            Part::Text("email", "a@example.com"),
            Part::File("drawing", "1.pdf", &drawing),
            Part::File("drawing", "2.png", EXE),
            Part::File("drawing", "3.pdf", &drawing),
            Part::File("drawing", "4.pdf", &drawing),
        ],
        vec![
            Part::Text("email", "a@example.com"),
            Part::File("spec", "1.pdf", &drawing),
            Part::File("spec", "2.pdf", &drawing),
        ],
        // A type the field does not accept.
        vec![Part::Text("email", "a@example.com"), Part::File("drawing", "x.pdf", EXE)],
        // Over the field's `max_bytes`.
        vec![Part::Text("email", "a@example.com"), Part::File("drawing", "big.pdf", &big)],
        // A file where the form takes none.
        vec![Part::Text("email", "a@example.com"), Part::File("email", "a.pdf", &drawing)],
        // A forged key.
        vec![
            Part::Text("operation_id", "no"),
            Part::Text("email", "a@example.com"),
            Part::File("drawing", "a.pdf", &drawing),
        ],
    ];
    let before = store_entries(&app);
    for (i, parts) in
        posts.iter().cycle().take(if backend == Backend::Sqlite { 1000 } else { 80 }).enumerate()
    {
        let resp = post_form(&app, parts).await;
        let status = resp.status().as_u16();
        assert!((400..500).contains(&status), "post {i} was refused: {status}");
    }
    assert_eq!(store_entries(&app), before, "refused posts left files in the store");
    assert!(stored(&app).await.is_empty());
    // The same files in a valid post are stored.
    let key = new_key();
    let resp = post_form(
        &app,
        &[
            Part::Text("operation_id", &key),
            Part::Text("email", "a@example.com"),
            Part::File("drawing", "a.pdf", &drawing),
        ],
    )
    .await;
    assert_eq!(resp.status(), 303);
    assert_eq!(kept_blobs(&app.config), [sha256(&drawing)]);
}

async fn the_upload_api_refuses_types_the_form_does_not_take(backend: Backend) {
    let app = spawn_app_with(backend, with_quote).await;
    let svg = b"<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>";
    let html = b"<!doctype html><html><script>alert(1)</script></html>";
    for (name, bytes) in
        [("x.svg", svg.as_slice()), ("x.html", html), ("x.pdf", EXE), ("x.png", &[0u8; 20_000])]
    {
        let (status, body) = upload(&app, "quote", name, bytes).await;
        assert_eq!(status, 415, "{name}: {body}");
        assert_eq!(problem_type(&body), "unsupported-media-type");
    }
    assert_eq!(store_entries(&app), 0, "a refused upload stores nothing");
    let (status, up) = upload(&app, "quote", "photo.png", &png()).await;
    assert_eq!(status, 201, "{up}");
}

async fn equal_files_under_two_names_keep_both_names(backend: Backend) {
    let app = spawn_app_with(backend, with_quote).await;
    let same = pdf("one content");
    let (content_type, body) = multipart(&[
        Part::Text("operation_id", &new_key()),
        Part::Text("email", "a@example.com"),
        Part::File("drawing", "offer.pdf", &same),
        Part::File("drawing", "invoice.pdf", &same),
        Part::File("drawing", "receipt.pdf", &same),
    ]);
    let resp = app.client.post(app.url("/f/quote")).header("Content-Type", content_type).body(body);
    assert_eq!(resp.send().await.unwrap().status(), 303);
    let value: Value = stored(&app).await.remove(0);
    let names: Vec<&str> =
        value["drawing"].as_str().unwrap().lines().map(|l| l.rsplit(' ').next().unwrap()).collect();
    assert_eq!(names, ["invoice%2Epdf", "offer%2Epdf", "receipt%2Epdf"], "one entry per file sent");
    assert_eq!(kept_blobs(&app.config), [sha256(&same)], "one blob for the one content");
}
