//! Static sites: exact-match CORS on the JSON API, the refusal of other origins, the
//! per-form redirect for plain HTML posts, and `GET /embed.js`.

use reqwest::Method;

use crate::files::attach::{upload, with_quote};
use crate::on_both_backends;
use crate::support::files::pdf;
use crate::support::{inquiry, new_key, problem_type, spawn_app, spawn_app_with, Backend, TestApp};

on_both_backends!(
    an_allowed_origin_posts_and_reads_the_exposed_headers,
    another_origin_is_refused_with_nothing_stored,
    a_plain_html_post_lands_on_the_configured_redirect,
    a_percent_encoded_form_name_does_not_bypass_allowed_origins,
);

const SITE: &str = "https://www.example.com";
const OTHER: &str = "https://evil.example.net";

async fn static_site_app(backend: Backend) -> TestApp {
    spawn_app_with(backend, |c| {
        c.forms.get_mut("contact").unwrap().allowed_origins = vec![SITE.into(), "http://127.0.0.1:9".into()];
    })
    .await
}

async fn preflight(app: &TestApp, path: &str, origin: &str) -> reqwest::Response {
    app.client
        .request(Method::OPTIONS, app.url(path))
        .header("Origin", origin)
        .header("Access-Control-Request-Method", "POST")
        .header("Access-Control-Request-Headers", "content-type,idempotency-key,onceform-journey-id")
        .send()
        .await
        .unwrap()
}

fn header<'a>(resp: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    resp.headers().get(name).map(|v| v.to_str().unwrap())
}

#[tokio::test]
async fn preflights_are_answered_for_listed_origins_only() {
    let app = static_site_app(Backend::Sqlite).await;
    for path in ["/api/forms/contact/submissions", "/api/forms/contact/operations"] {
        let ok = preflight(&app, path, SITE).await;
        assert_eq!(ok.status(), 204, "{path}");
        assert_eq!(header(&ok, "access-control-allow-origin"), Some(SITE));
        let allowed = header(&ok, "access-control-allow-headers").unwrap().to_ascii_lowercase();
        for h in ["content-type", "idempotency-key", "onceform-journey-id"] {
            assert!(allowed.contains(h), "{allowed}");
        }
        assert!(header(&ok, "access-control-allow-methods").unwrap().contains("POST"));
        assert_eq!(header(&ok, "vary"), Some("Origin"));
        assert_eq!(header(&ok, "access-control-allow-credentials"), None, "never credentials");

        for origin in [OTHER, "https://www.example.com.evil.net", "http://www.example.com", "null"] {
            let refused = preflight(&app, path, origin).await;
            assert_eq!(refused.status(), 403, "{origin}");
            assert_eq!(header(&refused, "access-control-allow-origin"), None);
            assert_eq!(header(&refused, "vary"), Some("Origin"));
        }
    }
    // A form without a list answers no preflight at all.
    let plain = spawn_app(Backend::Sqlite).await;
    let refused = preflight(&plain, "/api/forms/contact/submissions", SITE).await;
    assert_eq!(refused.status(), 403);
    assert_eq!(header(&refused, "access-control-allow-origin"), None);
}

async fn an_allowed_origin_posts_and_reads_the_exposed_headers(backend: Backend) {
    let app = static_site_app(backend).await;
    let op = app
        .client
        .post(app.url("/api/forms/contact/operations"))
        .header("Origin", SITE)
        .send()
        .await
        .unwrap();
    assert_eq!(op.status(), 201);
    assert_eq!(header(&op, "access-control-allow-origin"), Some(SITE));
    let key = op.json::<serde_json::Value>().await.unwrap()["operation_id"].as_str().unwrap().to_string();

    let send = || {
        app.client
            .post(app.url("/api/forms/contact/submissions"))
            .header("Origin", SITE)
            .header("Idempotency-Key", &key)
            .header("Onceform-Journey-Id", "journey-0123456789abcdef")
            .json(&inquiry("From a static site"))
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status(), 201);
    assert_eq!(header(&first, "access-control-allow-origin"), Some(SITE));
    let exposed = header(&first, "access-control-expose-headers").unwrap();
    assert_eq!(exposed, "Location, Idempotent-Replayed, Retry-After");
    assert_eq!(header(&first, "vary"), Some("Origin"));
    assert_eq!(header(&first, "access-control-allow-credentials"), None);
    let again = send().await.unwrap();
    assert_eq!((again.status().as_u16(), header(&again, "idempotent-replayed")), (200, Some("true")));
    assert_eq!(header(&again, "access-control-allow-origin"), Some(SITE));

    // Errors carry the headers too, so the page can read them.
    let invalid = app
        .client
        .post(app.url("/api/forms/contact/submissions"))
        .header("Origin", SITE)
        .header("Idempotency-Key", new_key())
        .json(&serde_json::json!({"email": "nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(invalid.status(), 422);
    assert_eq!(header(&invalid, "access-control-allow-origin"), Some(SITE));

    // Servers (no Origin) and onceform's own pages (same origin) are not cross-origin callers.
    assert_eq!(app.submit(&new_key(), &inquiry("From a server")).await.status(), 201);
    let own = app.address.clone();
    let same = app
        .client
        .post(app.url("/api/forms/contact/submissions"))
        .header("Origin", own)
        .header("Idempotency-Key", new_key())
        .json(&inquiry("From onceform's own page"))
        .send()
        .await
        .unwrap();
    assert_eq!(same.status(), 201);
    assert_eq!(app.stats().await.submissions, 3);
}

async fn another_origin_is_refused_with_nothing_stored(backend: Backend) {
    let app = static_site_app(backend).await;
    let resp = app
        .client
        .post(app.url("/api/forms/contact/submissions"))
        .header("Origin", OTHER)
        .header("Idempotency-Key", new_key())
        .json(&inquiry("From elsewhere"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert_eq!(header(&resp, "access-control-allow-origin"), None);
    assert!(header(&resp, "content-type").unwrap().starts_with("application/problem+json"));
    assert_eq!(problem_type(&resp.json().await.unwrap()), "origin-not-allowed");
    let op = app
        .client
        .post(app.url("/api/forms/contact/operations"))
        .header("Origin", OTHER)
        .send()
        .await
        .unwrap();
    assert_eq!(op.status(), 403);

    // The HTML form's post from a page on another site: a 403 page for the visitor.
    let html = app
        .client
        .post(app.url("/f/contact"))
        .header("Origin", OTHER)
        .form(&[("name", "Eve"), ("email", "eve@example.net"), ("topic", "Sales"), ("message", "Hi")])
        .send()
        .await
        .unwrap();
    assert_eq!(html.status(), 403);
    assert!(html.text().await.unwrap().contains("This form cannot be sent from the page you used"));
    let stats = app.stats().await;
    assert_eq!((stats.submissions, stats.deliveries_total()), (0, 0));
    assert_eq!(app.refused("contact", "origin-not-allowed").await, 3, "counted, not written");

    // The listed site's own plain form may post (keyless), and so may onceform's own page.
    for origin in [SITE.to_string(), app.address.clone()] {
        let ok = app
            .client
            .post(app.url("/f/contact"))
            .header("Origin", origin.as_str())
            .form(&[("name", "Ann"), ("email", "ann@example.com"), ("topic", "Sales"), ("message", "Hi")])
            .send()
            .await
            .unwrap();
        assert_eq!(ok.status(), 303, "{origin}");
    }
    assert_eq!(app.stats().await.submissions, 2);
}

async fn a_plain_html_post_lands_on_the_configured_redirect(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        c.forms.get_mut("contact").unwrap().redirect = Some("https://www.example.com/thanks".into());
    })
    .await;
    let form = [
        ("operation_id", "static-site-0000000001"),
        ("name", "Ann"),
        ("email", "ann@example.com"),
        ("topic", "Sales"),
        ("message", "Hello"),
        // A visitor's field never chooses the destination.
        ("_next", "https://evil.example.net/"),
    ];
    let post = || app.client.post(app.url("/f/contact")).form(&form).send();
    let first = post().await.unwrap();
    assert_eq!(first.status(), 422, "unknown fields are refused, not followed");
    let form = &form[..5];
    for _ in 0..2 {
        let resp = app.client.post(app.url("/f/contact")).form(form).send().await.unwrap();
        assert_eq!(resp.status(), 303);
        assert_eq!(header(&resp, "location"), Some("https://www.example.com/thanks"));
    }
    assert_eq!(app.stats().await.submissions, 1, "the re-post was a replay");
    // onceform's own form page lets the browser follow that redirect (form-action).
    let page = app.client.get(app.url("/f/contact")).send().await.unwrap();
    let policy = header(&page, "content-security-policy").unwrap_or_default().to_string();
    assert!(policy.contains("form-action 'self' https://www.example.com;"), "{policy}");
    assert!(policy.contains("base-uri 'none'"), "{policy}");
}

#[tokio::test]
async fn the_embed_script_is_served_small_and_dependency_free() {
    let app = spawn_app(Backend::Sqlite).await;
    let resp = app.client.get(app.url("/embed.js")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(header(&resp, "content-type").unwrap().starts_with("text/javascript"));
    let js = resp.text().await.unwrap();
    assert!(js.contains("data-onceform") && js.contains("Idempotency-Key") && js.contains("sessionStorage"));
    assert!(!js.contains("import ") && !js.contains("require("), "no modules, no framework");
    // Its messages in the four shipped locales are most of what it grew by.
    assert!(js.len() < 20 * 1024, "{} bytes", js.len());
}

/// Issue 45: the origin check once read the raw path while the router decoded it, so
/// `/f/cont%61ct` was the `contact` form without its `allowed_origins`. Every spelling the
/// router takes for a form is that form, with its checks; a spelling it does not take
/// (`%2F`, another case: names are case-sensitive) names no form.
async fn a_percent_encoded_form_name_does_not_bypass_allowed_origins(backend: Backend) {
    let app = spawn_app_with(backend, |c| {
        with_quote(c);
        for form in ["contact", "quote"] {
            c.forms.get_mut(form).unwrap().allowed_origins = vec![SITE.into()];
        }
    })
    .await;
    let html_post = |path: &str| {
        app.client
            .post(app.url(path))
            .header("Origin", OTHER)
            .form(&[("name", "Eve"), ("email", "eve@example.net"), ("topic", "Sales"), ("message", "Hi")])
            .send()
    };
    let api_post = |path: &str| {
        app.client
            .post(app.url(path))
            .header("Origin", OTHER)
            .header("Idempotency-Key", new_key())
            .json(&inquiry("From elsewhere, encoded"))
            .send()
    };
    for form in ["cont%61ct", "c%6Fntact", "c%6fntact", "%63%6F%6E%74%61%63%74"] {
        let html = html_post(&format!("/f/{form}")).await.unwrap();
        assert_eq!(html.status(), 403, "POST /f/{form}");
        for tail in ["submissions", "operations"] {
            let api = api_post(&format!("/api/forms/{form}/{tail}")).await.unwrap();
            assert_eq!(api.status(), 403, "POST /api/forms/{form}/{tail}");
            assert_eq!(problem_type(&api.json().await.unwrap()), "origin-not-allowed");
        }
        let refused = preflight(&app, &format!("/api/forms/{form}/submissions"), OTHER).await;
        assert_eq!((refused.status().as_u16(), header(&refused, "access-control-allow-origin")), (403, None));
        // The listed site is answered on this spelling as on the plain one.
        let allowed = preflight(&app, &format!("/api/forms/{form}/submissions"), SITE).await;
        assert_eq!(
            (allowed.status().as_u16(), header(&allowed, "access-control-allow-origin")),
            (204, Some(SITE))
        );
    }
    // Uploads: the file never reaches the store.
    let (uploaded, _) = upload_from(&app, "qu%6Fte", OTHER).await;
    assert_eq!(uploaded, 403, "POST /api/forms/qu%6Fte/uploads");
    assert_eq!(upload(&app, "qu%6Fte", "a.pdf", &pdf("from a server")).await.0, 201, "no Origin: a server");
    // A slash inside the name, or another case, is no form at all.
    for path in ["/f/contact%2F", "/f/cont%2Fact", "/f/CONTACT", "/f/Cont%61ct", "/f/CONT%41CT"] {
        let status = html_post(path).await.unwrap().status().as_u16();
        assert_eq!(status, 404, "POST {path}");
    }
    for form in ["contact%2F", "cont%2fact", "CONTACT", "Cont%61ct"] {
        for tail in ["submissions", "operations"] {
            let status = api_post(&format!("/api/forms/{form}/{tail}")).await.unwrap().status().as_u16();
            assert_eq!(status, 404, "POST /api/forms/{form}/{tail}");
        }
    }
    for form in ["quote%2F", "qu%2fote", "QUOTE", "Qu%6Fte"] {
        assert_eq!(upload_from(&app, form, OTHER).await.0, 404, "POST /api/forms/{form}/uploads");
    }
    let stats = app.stats().await;
    assert_eq!((stats.submissions, stats.deliveries_total()), (0, 0), "nothing stored");
    // Counted under the form's one name: 4 spellings × 3 posts, and the upload.
    assert_eq!(app.refused("contact", "origin-not-allowed").await, 12);
    assert_eq!(app.refused("quote", "origin-not-allowed").await, 1);
}

/// `POST /api/forms/FORM/uploads` of a small PDF, sent by a page on `origin`.
async fn upload_from(app: &TestApp, form: &str, origin: &str) -> (u16, serde_json::Value) {
    let resp = app
        .client
        .post(app.url(&format!("/api/forms/{form}/uploads")))
        .header("Origin", origin)
        .header("Content-Type", "application/octet-stream")
        .header("Onceform-File-Name", "a.pdf")
        .body(pdf("from elsewhere"))
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap_or_default())
}

/// The rate limit counts a client's posts to a form under the form's one name, however the
/// path spells it: an encoded spelling is not a fresh bucket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_percent_encoded_form_name_does_not_get_a_fresh_rate_limit() {
    let app = spawn_app_with(Backend::Sqlite, |c| {
        c.server.rate_limit = true;
        let form = c.forms.get_mut("contact").unwrap();
        form.rate_limit.requests = 2;
        form.rate_limit.per_seconds = 60;
    })
    .await;
    let post = |path: &'static str| {
        app.client
            .post(app.url(path))
            .header("Idempotency-Key", new_key())
            .json(&inquiry("Counted once"))
            .send()
    };
    assert_eq!(post("/api/forms/contact/submissions").await.unwrap().status(), 201);
    assert_eq!(post("/api/forms/cont%61ct/submissions").await.unwrap().status(), 201);
    for path in ["/api/forms/c%6Fntact/submissions", "/api/forms/contact/submissions"] {
        assert_eq!(post(path).await.unwrap().status(), 429, "{path}");
    }
    assert_eq!(app.refused("contact", "rate-limited").await, 2);
}
