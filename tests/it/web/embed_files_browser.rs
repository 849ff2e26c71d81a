//! In headless Chromium: a static page's embedded form with a file field. The browser picks
//! a real PDF and a PNG; `embed.js` uploads them, then submits naming the uploads; the first
//! submission's answer is lost, and the retry (same operation ID) names the same uploads: one
//! upload per file, one submission, one stored blob per file. Screenshot:
//! target/test-artifacts/embed-file-receipt.png. A file over its limit is refused in the page's
//! language, and nothing is sent.

use super::embed_browser::wait_long;
use crate::support::browser::Browser;
use crate::support::files::{blobs, pdf, png, sha256};
use crate::support::static_site::{HttpProxy, StaticSite};
use crate::support::Backend;
use onceform::domain::FileRef;

fn page(form_url: &str, script_url: &str) -> String {
    format!(
        r#"<!doctype html><html><head><meta charset="utf-8"><title>A static site</title></head>
<body><h1>Ask for a quote (static site)</h1>
<form data-onceform="{form_url}">
<p><label for="name">Your name</label><input id="name" name="name"></p>
<p><label for="email">Email</label><input id="email" name="email"></p>
<p><label for="topic">Topic</label><select id="topic" name="topic"><option>Sales</option><option>Support</option></select></p>
<p><label for="message">Message</label><textarea id="message" name="message"></textarea></p>
<p><label for="drawing">Drawing</label><input id="drawing" name="drawing" type="file" accept="application/pdf,image/png" multiple></p>
<button type="submit">Send</button>
</form>
<script src="{script_url}"></script>
</body></html>"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_file_is_uploaded_once_and_submitted_once_through_a_lost_answer() {
    let site = StaticSite::start().await;
    let origin = site.origin.clone();
    let work = crate::support::own_dir();
    let files_dir = work.join("files");
    let dir = files_dir.to_string_lossy().into_owned();
    let app = crate::support::spawn_app_with(Backend::Sqlite, |c| {
        c.server.files_dir = dir;
        let form = c.forms.get_mut("contact").unwrap();
        form.allowed_origins = vec![origin];
        form.fields.push(
            toml::from_str(
                "name = 'drawing'\ntype = 'file'\naccept = ['application/pdf', 'image/png']\n\
                 max_bytes = 10485760\nmax_files = 3",
            )
            .unwrap(),
        );
    })
    .await;
    let proxy = HttpProxy::start(app.address.clone()).await;
    site.set_page(page(&format!("{}/f/contact", proxy.url), &app.url("/embed.js")));
    let (bytes, photo) = (pdf("embedded"), png());
    let file = work.join("drawing.pdf");
    std::fs::write(&file, &bytes).unwrap();
    let photo_file = work.join("photo.png");
    std::fs::write(&photo_file, &photo).unwrap();

    let browser = Browser::start().await;
    browser.goto(&format!("{}/quote.html", site.origin)).await;
    browser.type_into("#name", "Ada Lovelace").await;
    browser.type_into("#email", "ada@example.com").await;
    browser.type_into("#message", "The drawing is attached").await;
    // WebDriver's send keys to a file input chooses the files at these paths (one a line).
    let chosen = format!("{}\n{}", file.to_string_lossy(), photo_file.to_string_lossy());
    browser.type_into("#drawing", &chosen).await;
    proxy.drop_next_submit();
    browser.click("button[type=submit]").await;
    let source = wait_long(&browser, "onceform-reference", 20).await;
    browser.screenshot("embed-file-receipt").await;

    let posts = |suffix: &str| -> Vec<_> {
        proxy.seen().into_iter().filter(|s| s.method == "POST" && s.path.ends_with(suffix)).collect()
    };
    assert_eq!(
        posts("/uploads").len(),
        2,
        "one per file; the retry names the same uploads: {:?}",
        proxy.seen()
    );
    let submits = posts("/submissions");
    assert_eq!(submits.len(), 2, "the lost answer and its retry: {submits:?}");
    assert!(submits[0].dropped && !submits[1].dropped);
    let key = submits[0].idempotency_key.clone().unwrap();
    assert_eq!(submits[1].idempotency_key.as_deref(), Some(key.as_str()), "one operation ID");

    let stats = app.stats().await;
    assert_eq!(
        (stats.submissions, stats.deliveries_with("created"), stats.deliveries_with("replayed")),
        (1, 1, 1)
    );
    let stored = app.stored_fields(&key).await.unwrap();
    let value = match &stored["drawing"] {
        serde_json::Value::Array(items) => {
            items.iter().map(|v| v.as_str().unwrap()).collect::<Vec<_>>().join(onceform::domain::SEVERAL)
        }
        v => v.as_str().unwrap_or_else(|| panic!("drawing: {stored}")).to_string(),
    };
    let mut files: Vec<_> =
        FileRef::stored_in(&value).into_iter().map(|f| (f.sha256, f.size, f.content_type, f.name)).collect();
    files.sort_by(|a, b| a.3.cmp(&b.3));
    assert_eq!(
        files,
        [
            (sha256(&bytes), bytes.len() as u64, "application/pdf".to_string(), "drawing.pdf".to_string()),
            (sha256(&photo), photo.len() as u64, "image/png".to_string(), "photo.png".to_string()),
        ],
        "{stored}"
    );
    let mut want = vec![sha256(&bytes), sha256(&photo)];
    want.sort();
    assert_eq!(blobs(&files_dir.to_string_lossy()), want, "one blob per file");

    let status: serde_json::Value = app
        .client
        .get(app.url(&format!("/api/forms/contact/submissions/{key}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let reference = onceform::base::format::reference(status["submission_id"].as_str().unwrap());
    assert!(source.contains(&reference), "the receipt shows {reference}");
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_over_the_limit_is_refused_in_the_pages_language_and_nothing_is_sent() {
    let site = StaticSite::start().await;
    let origin = site.origin.clone();
    let work = crate::support::own_dir();
    let dir = work.join("files").to_string_lossy().into_owned();
    let app = crate::support::spawn_app_with(Backend::Sqlite, |c| {
        c.server.files_dir = dir;
        let form = c.forms.get_mut("contact").unwrap();
        form.allowed_origins = vec![origin];
        form.fields.push(toml::from_str("name = 'drawing'\ntype = 'file'\nmax_bytes = 1024").unwrap());
    })
    .await;
    let page =
        page(&app.url("/f/contact"), &app.url("/embed.js")).replace("<html>", r#"<html lang="zh-TW">"#);
    site.set_page(page);
    let file = work.join("drawing.pdf");
    std::fs::write(&file, [pdf("too large"), vec![b' '; 4096]].concat()).unwrap();

    let browser = Browser::start().await;
    browser.goto(&format!("{}/quote.html", site.origin)).await;
    browser.type_into("#name", "Ada Lovelace").await;
    browser.type_into("#email", "ada@example.com").await;
    browser.type_into("#message", "The drawing is attached").await;
    browser.type_into("#drawing", &file.to_string_lossy()).await;
    browser.click("button[type=submit]").await;
    let source = wait_long(&browser, "onceform-error-drawing", 20).await;
    assert!(
        source.contains("檔案太大，請選擇較小的檔案。"),
        "the page's language, not the server's English: {source}"
    );

    let stats = app.stats().await;
    assert_eq!((stats.submissions, stats.deliveries_with("created")), (0, 0), "nothing was sent");
    assert!(blobs(&work.join("files").to_string_lossy()).is_empty(), "nothing was stored");
    let _ = std::fs::remove_dir_all(&work);
}
