//! The three ways a file comes in (a browser's multipart post, the JSON API's upload then
//! submission; embed.js is in `web::embed_browser`) mean one thing: the file is stored once
//! under its digest and named in the submission, an identical retry replays, a changed file
//! under the same key is a conflict, and the type is the content's, not the name's.

use serde_json::{json, Value};

use crate::on_both_backends;
use crate::support::files::{kept_blobs, multipart, pdf, png, read_stored, sha256, Part};
use crate::support::{new_key, spawn_app_with, Backend, TestApp};
use onceform::config::Config;

on_both_backends!(
    a_browser_posts_files_stored_once_under_their_digest,
    an_api_client_uploads_then_names_the_upload,
    an_identical_retry_replays_and_a_changed_file_conflicts,
    a_png_named_pdf_is_not_a_pdf,
    a_file_over_its_limit_is_refused_before_it_is_all_read,
    uploads_belong_to_their_form,
    uploads_beyond_the_concurrent_limit_wait_their_turn,
);

pub const QUOTE: &str = r#"
[forms.quote]
title = "Request a quote"
honeypot = ""
min_fill_seconds = 0
max_files_bytes = 1000000
effects = []
[[forms.quote.fields]]
name = "email"
type = "email"
required = true
[[forms.quote.fields]]
name = "drawing"
type = "file"
accept = ["application/pdf", "image/png"]
max_bytes = 100000
max_files = 3
[[forms.quote.fields]]
name = "spec"
type = "file"
accept = [".pdf"]
"#;

pub fn with_quote(c: &mut Config) {
    let extra = Config::parse(QUOTE).unwrap();
    assert!(onceform::config::problems(&extra).is_empty(), "{:?}", onceform::config::problems(&extra));
    c.forms.extend(extra.forms);
}

/// `POST /f/quote` as a browser sends it.
pub async fn post_form(app: &TestApp, parts: &[Part<'_>]) -> reqwest::Response {
    let (content_type, body) = multipart(parts);
    let url = app.url("/f/quote");
    app.client.post(url).header("Content-Type", content_type).body(body).send().await.unwrap()
}

/// `POST /api/forms/quote/uploads` → its JSON answer.
pub async fn upload(app: &TestApp, form: &str, name: &str, bytes: &[u8]) -> (u16, Value) {
    let resp = app
        .client
        .post(app.url(&format!("/api/forms/{form}/uploads")))
        .header("Content-Type", "application/octet-stream")
        .header("Onceform-File-Name", name)
        .body(bytes.to_vec())
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

pub async fn submit(app: &TestApp, key: &str, body: &Value) -> (u16, Value) {
    let url = app.url("/api/forms/quote/submissions");
    let resp = app.client.post(url).header("Idempotency-Key", key).json(body).send().await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}

/// The stored fields of each submission to `quote`, oldest first.
pub async fn stored(app: &TestApp) -> Vec<Value> {
    use diesel::prelude::*;
    use onceform::db::schema::submissions::dsl as s;
    use onceform::db::DbError;
    use onceform::with_conn;
    let rows: Vec<Option<String>> = app
        .query(|pool| {
            with_conn!(pool, |c| s::submissions
                .filter(s::form.eq("quote"))
                .order(s::received_at)
                .select(s::fields_json)
                .load(c)
                .map_err(DbError::from))
        })
        .await;
    rows.into_iter().map(|t| t.map_or(Value::Null, |t| serde_json::from_str(&t).unwrap())).collect()
}

/// The digests a stored file field names.
pub fn digests(value: &Value) -> Vec<String> {
    value.as_str().unwrap_or("").lines().map(|l| l.split(' ').next().unwrap().to_string()).collect()
}

async fn a_browser_posts_files_stored_once_under_their_digest(backend: Backend) {
    let app = spawn_app_with(backend, with_quote).await;
    let page = app.client.get(app.url("/f/quote")).send().await.unwrap().text().await.unwrap();
    assert!(page.contains(r#"enctype="multipart/form-data""#), "{page}");
    assert!(page.contains(r#"type="file" accept="application/pdf,image/png" multiple>"#), "{page}");
    let (drawing, photo) = (pdf("drawing"), png());
    let key = new_key();
    let resp = post_form(
        &app,
        &[
            Part::Text("operation_id", &key),
            Part::Text("email", "mei@example.com"),
            Part::File("drawing", "../../etc/Zeichnung \u{202e}v2.pdf", &drawing),
            Part::File("drawing", "photo.png", &photo),
            Part::File("spec", "", b""), // no file chosen: an empty part
        ],
    )
    .await;
    assert_eq!(resp.status(), 303, "{}", resp.text().await.unwrap());
    let rows = stored(&app).await;
    assert_eq!(rows.len(), 1);
    let mut want = vec![sha256(&drawing), sha256(&photo)];
    want.sort();
    assert_eq!(digests(&rows[0]["drawing"]), want);
    let value = rows[0]["drawing"].as_str().unwrap();
    assert!(value.contains("application/pdf") && value.contains("image/png"), "{value}");
    assert!(value.contains("Zeichnung%20v2%2Epdf"), "the name lost its path and its bidi override: {value}");
    assert!(rows[0].get("spec").is_none(), "no file chosen is no answer");
    assert_eq!(kept_blobs(&app.config), want, "one blob per file, named by its digest");
    let on_disk = read_stored(&app.config, &want[0]);
    assert!(on_disk == drawing || on_disk == photo);
}

async fn an_api_client_uploads_then_names_the_upload(backend: Backend) {
    let app = spawn_app_with(backend, with_quote).await;
    let drawing = pdf("api");
    let (status, up) = upload(&app, "quote", "Spec%20sheet.pdf", &drawing).await;
    assert_eq!(status, 201, "{up}");
    assert_eq!(up["sha256"], sha256(&drawing));
    assert_eq!(up["size"], drawing.len());
    assert_eq!(up["content_type"], "application/pdf", "from the content, not the declared octet-stream");
    let id = up["upload_id"].as_str().unwrap();
    assert!(id.starts_with("upl_"), "{id}");
    let (status, body) =
        submit(&app, &new_key(), &json!({"email": "mei@example.com", "drawing": [id], "spec": id})).await;
    assert_eq!(status, 201, "{body}");
    let rows = stored(&app).await;
    assert_eq!(digests(&rows[0]["drawing"]), [sha256(&drawing)]);
    assert!(rows[0]["spec"].as_str().unwrap().ends_with(" Spec%20sheet%2Epdf"), "{}", rows[0]["spec"]);
    assert_eq!(kept_blobs(&app.config), [sha256(&drawing)], "the same content is one blob");
    let (_, photo) = upload(&app, "quote", "photo.png", &png()).await;
    assert_eq!(photo["content_type"], "image/png");
    let (status, _) =
        submit(&app, &new_key(), &json!({"email": "mei@example.com", "drawing": [photo["upload_id"], id]}))
            .await;
    assert_eq!(status, 201);
    let mut both = vec![sha256(&drawing), sha256(&png())];
    both.sort();
    assert_eq!(digests(&stored(&app).await[1]["drawing"]), both, "a PNG and a PDF in one field");

    // A client names uploads, never blobs: a digest written as the value is refused.
    let forged = format!("{} 10 application/pdf x.pdf", sha256(&drawing));
    let (status, body) =
        submit(&app, &new_key(), &json!({"email": "a@example.com", "drawing": forged})).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["codes"]["drawing"], json!(["unknown_upload"]));
}

async fn an_identical_retry_replays_and_a_changed_file_conflicts(backend: Backend) {
    let app = spawn_app_with(backend, with_quote).await;
    let (v1, v2) = (pdf("first"), pdf("second"));
    let key = new_key();
    let post = |bytes: Vec<u8>| {
        let (app, key) = (&app, key.clone());
        async move {
            post_form(
                app,
                &[
                    Part::Text("operation_id", &key),
                    Part::Text("email", "mei@example.com"),
                    Part::File("drawing", "drawing.pdf", &bytes),
                ],
            )
            .await
        }
    };
    let first = post(v1.clone()).await;
    assert_eq!(first.status(), 303);
    let receipt = first.headers()["location"].to_str().unwrap().to_string();
    let again = post(v1.clone()).await;
    assert_eq!(again.status(), 303, "the same files under the same key replay");
    assert_eq!(again.headers()["location"].to_str().unwrap(), receipt);
    let changed = post(v2.clone()).await;
    assert_eq!(changed.status(), 409, "a different file under the same key is a conflict");
    let rows = stored(&app).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(digests(&rows[0]["drawing"]), [sha256(&v1)], "the original is untouched");

    // The API's two steps: a retry names the same upload (or a new upload of the same bytes).
    let key = new_key();
    let (_, a) = upload(&app, "quote", "a.pdf", &v1).await;
    let (_, a_again) = upload(&app, "quote", "a.pdf", &v1).await;
    let (_, b) = upload(&app, "quote", "a.pdf", &v2).await;
    let body = |id: &Value| json!({"email": "mei@example.com", "drawing": [id]});
    assert_eq!(submit(&app, &key, &body(&a["upload_id"])).await.0, 201);
    assert_eq!(submit(&app, &key, &body(&a["upload_id"])).await.0, 200);
    assert_eq!(submit(&app, &key, &body(&a_again["upload_id"])).await.0, 200, "the same bytes and name");
    let (status, problem) = submit(&app, &key, &body(&b["upload_id"])).await;
    assert_eq!(status, 409);
    assert_eq!(problem["type"].as_str().unwrap().rsplit('/').next(), Some("operation-conflict"));
}

async fn a_png_named_pdf_is_not_a_pdf(backend: Backend) {
    let app = spawn_app_with(backend, with_quote).await;
    let key = new_key();
    let resp = post_form(
        &app,
        &[
            Part::Text("operation_id", &key),
            Part::Text("email", "mei@example.com"),
            Part::File("spec", "drawing.pdf", &png()),
        ],
    )
    .await;
    assert_eq!(resp.status(), 422);
    let page = resp.text().await.unwrap();
    assert!(page.contains("spec must be a file of type .pdf"), "{page}");
    let (_, up) = upload(&app, "quote", "drawing.pdf", &png()).await;
    assert_eq!(up["content_type"], "image/png");
    let (status, body) =
        submit(&app, &new_key(), &json!({"email": "a@example.com", "spec": up["upload_id"]})).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["codes"]["spec"], json!(["invalid_file_type"]));
    assert!(stored(&app).await.is_empty(), "nothing was accepted");
}

/// The body is sent by hand, and only its first part: the answer comes before the rest.
async fn a_file_over_its_limit_is_refused_before_it_is_all_read(backend: Backend) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn_app_with(backend, with_quote).await;
    let boundary = "XyZ";
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nmei@example.com\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"drawing\"; filename=\"big.pdf\"\r\n\r\n%PDF-1.4\n"
    );
    let declared = head.len() + 900_000; // within the form's total, far over the field's 100 kB
    let addr = app.address.trim_start_matches("http://").to_string();
    let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "POST /f/quote HTTP/1.1\r\nHost: {addr}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\n\
         Content-Length: {declared}\r\n\r\n{head}"
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    tcp.write_all(&vec![b'x'; 200_000]).await.unwrap(); // 200 kB of 900 kB, then nothing
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(std::time::Duration::from_secs(5), tcp.read(&mut answer))
        .await
        .expect("answered while the body was still due")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 422"), "{answer}");
    assert!(stored(&app).await.is_empty());

    // The uploads endpoint refuses a body over the form's total by its declared length.
    let resp = app
        .client
        .post(app.url("/api/forms/quote/uploads"))
        .body(vec![b'x'; 1_000_001])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    assert!(kept_blobs(&app.config).is_empty(), "a refused file leaves no blob");
}

async fn uploads_belong_to_their_form(backend: Backend) {
    let app = spawn_app_with(backend, with_quote).await;
    let (status, _) = upload(&app, "contact", "a.pdf", &pdf("x")).await;
    assert_eq!(status, 404, "the contact form takes no files");
    let (status, body) =
        submit(&app, &new_key(), &json!({"email": "a@example.com", "drawing": ["upl_0000"]})).await;
    assert_eq!(status, 422);
    assert_eq!(body["codes"]["drawing"], json!(["unknown_upload"]));
    // A text part where a file is due is no file.
    let resp = post_form(
        &app,
        &[
            Part::Text("operation_id", &new_key()),
            Part::Text("email", "a@example.com"),
            Part::Text("drawing", "x"),
        ],
    )
    .await;
    assert_eq!(resp.status(), 303);
    assert!(stored(&app).await[0].get("drawing").is_none());
}

/// `max_concurrent_uploads = 1`: while one upload streams in, the next waits (its body is not
/// read), and goes on when the first is done.
async fn uploads_beyond_the_concurrent_limit_wait_their_turn(backend: Backend) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn_app_with(backend, |c| {
        with_quote(c);
        c.server.max_concurrent_uploads = 1;
    })
    .await;
    let first = pdf("first, sent slowly");
    let addr = app.address.trim_start_matches("http://").to_string();
    let mut slow = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /api/forms/quote/uploads HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n\r\n",
        first.len()
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    slow.write_all(&first[..10]).await.unwrap();
    // It takes the turn once its head is read: under a full test run's load 200 ms was not
    // always enough (the second upload took the turn first); a second is.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;

    let next = tokio::spawn({
        let (client, url) = (app.client.clone(), app.url("/api/forms/quote/uploads"));
        async move { client.post(url).body(pdf("second")).send().await.unwrap().status().as_u16() }
    });
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    assert!(!next.is_finished(), "the second upload waits while the first streams in");

    slow.write_all(&first[10..]).await.unwrap();
    let mut answer = vec![0u8; 1024];
    let n = slow.read(&mut answer).await.unwrap();
    assert!(String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 201"));
    assert_eq!(next.await.unwrap(), 201, "then the second one's turn came");
    let mut want = vec![sha256(&first), sha256(&pdf("second"))];
    want.sort();
    assert_eq!(kept_blobs(&app.config), want);
}
