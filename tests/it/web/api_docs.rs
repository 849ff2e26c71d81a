//! `/openapi.json`, `/docs` and its assets served by onceform itself, and 405 with `Allow`
//! for a documented path asked with another method.

use crate::on_both_backends;
use crate::support::{spawn_app, Backend};

async fn the_api_is_described_and_rendered_without_a_cdn(backend: Backend) {
    let app = spawn_app(backend).await;
    let doc: serde_json::Value =
        app.client.get(app.url("/openapi.json")).send().await.unwrap().json().await.unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/api/forms/contact/submissions"]["post"].is_object());

    let page = app.client.get(app.url("/docs")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    let assets: Vec<&str> =
        html.split(['"', '\'']).filter(|s| s.starts_with("/static/docs/") || s.starts_with("http")).collect();
    assert_eq!(assets.len(), 3, "{html}");
    for asset in assets {
        assert!(asset.starts_with('/'), "{asset} is not served by onceform");
        let resp = app.client.get(app.url(asset)).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{asset}");
        assert!(resp.bytes().await.unwrap().len() > 100, "{asset}");
    }
}

async fn another_method_on_a_documented_path_is_405_with_allow(backend: Backend) {
    let app = spawn_app(backend).await;
    let resp = app.client.delete(app.url("/api/forms/contact/submissions")).send().await.unwrap();
    assert_eq!(resp.status(), 405);
    assert_eq!(resp.headers()["allow"], "POST");
    assert_eq!(resp.headers()["content-type"], "application/problem+json");
    let resp = app.client.put(app.url("/f/contact")).send().await.unwrap();
    assert_eq!((resp.status().as_u16(), resp.headers()["allow"].to_str().unwrap()), (405, "GET, POST"));
    let resp = app.client.delete(app.url("/api/forms/nope/submissions")).send().await.unwrap();
    assert_eq!(resp.status(), 404);
}

on_both_backends!(
    the_api_is_described_and_rendered_without_a_cdn,
    another_method_on_a_documented_path_is_405_with_allow
);
