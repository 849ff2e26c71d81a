use std::path::Path;

use super::*;
use crate::config::Config;

/// Every `.route("PATH", web::METHOD()…)` written in the sources under `dir`.
fn registered_routes(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            registered_routes(&path, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") || path.ends_with("tests.rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        for chunk in source.split(".route(").skip(1) {
            let Some(rest) = chunk.strip_prefix('"') else { continue };
            let Some((route, after)) = rest.split_once('"') else { continue };
            let Some(method) = after.split("web::").nth(1).and_then(|m| m.split('(').next()) else {
                continue;
            };
            out.push((route.to_string(), method.to_string()));
        }
    }
}

#[test]
fn every_route_registered_under_src_http_is_documented() {
    let config = Config::builtin().unwrap();
    let doc = document(&config);
    let mut routes = Vec::new();
    registered_routes(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/web/http"), &mut routes);
    assert!(routes.len() >= 12, "the route scan found too little: {routes:?}");
    for (route, method) in &routes {
        // Per-form paths are documented once per configured form.
        for form in config.forms.keys() {
            let path = route.replace("{form}", form);
            let item = &doc["paths"][&path];
            assert!(item.is_object(), "{method} {route} is registered but {path} is not in /openapi.json");
            assert!(item[method.as_str()].is_object(), "{method} {path} is registered but not documented");
        }
    }
    // The assets are registered through ASSETS.
    for (path, _, _) in ASSETS {
        assert!(doc["paths"][path]["get"].is_object(), "{path}");
    }
}

#[test]
fn operation_ids_are_unique_and_links_name_real_operations() {
    let doc = document(&Config::builtin().unwrap());
    let mut ids = Vec::new();
    let mut links = Vec::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            ids.push(op["operationId"].as_str().unwrap().to_string());
            for response in op["responses"].as_object().unwrap().values() {
                for link in response["links"].as_object().into_iter().flat_map(|l| l.values()) {
                    links.push(link["operationId"].as_str().unwrap().to_string());
                }
            }
        }
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "duplicate operationId in {ids:?}");
    assert!(links.len() >= 4, "links: {links:?}");
    for link in links {
        assert!(ids.contains(&link), "a link names the unknown operation {link}");
    }
}

#[test]
fn documents_the_key_header_and_every_problem_type() {
    let doc = document(&Config::builtin().unwrap());
    let submit = &doc["paths"]["/api/forms/contact/submissions"]["post"];
    assert_eq!(submit["parameters"][0]["name"], "Idempotency-Key");
    assert_eq!(submit["parameters"][0]["required"], true, "the demo form requires a key on the API");
    let body = &submit["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(body["required"], serde_json::json!(["name", "email", "topic", "message"]));
    assert_eq!(body["additionalProperties"], false);
    let types =
        doc["components"]["schemas"]["Problem"]["properties"]["type"]["enum"].as_array().unwrap().len();
    assert_eq!(types, document::PROBLEM_TYPES_LEN);
}

#[test]
fn a_documented_path_with_another_method_is_405() {
    let published = Published::of(&Config::builtin().unwrap());
    let allowed_methods = |path| published.allowed_methods(path);
    assert_eq!(allowed_methods("/api/forms/contact/submissions"), ["POST"]);
    assert_eq!(allowed_methods("/f/contact"), ["GET", "POST"]);
    assert_eq!(allowed_methods("/api/forms/contact/submissions/op_0123456789abcdef"), ["GET"]);
    assert!(allowed_methods("/api/forms/nope/submissions").is_empty());
    assert!(allowed_methods("/api/forms/contact/submissions/").is_empty());
    assert!(allowed_methods("/admin").is_empty());
}

/// Issue 45: each unknown path built the whole document again, so a flood of them cost five
/// times what `/healthz` does. Served with no configuration at hand, only the document built
/// once: each answer comes from it, and `/openapi.json` is its very bytes.
#[actix_web::test]
async fn a_flood_of_unknown_paths_builds_no_document() {
    use actix_web::body::MessageBody;
    use actix_web::test::{call_service, init_service, TestRequest};
    use actix_web::App;

    let publisher = web::Data::new(Publisher::new(std::sync::Arc::new(Config::builtin().unwrap())));
    let published = publisher.current.lock().unwrap().1.clone();
    let app = init_service(
        App::new().app_data(publisher.clone()).configure(routes).default_service(web::to(fallback)),
    )
    .await;
    for _ in 0..2 {
        let unknown = call_service(&app, TestRequest::get().uri("/no/such/path").to_request()).await;
        assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
        let other = TestRequest::put().uri("/api/forms/contact/submissions").to_request();
        let other = call_service(&app, other).await;
        assert_eq!(other.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(other.headers().get(ALLOW).and_then(|v| v.to_str().ok()), Some("POST"));
        let resp = call_service(&app, TestRequest::get().uri("/openapi.json").to_request()).await;
        let Ok(json) = resp.into_body().try_into_bytes() else { panic!("not one piece of bytes") };
        assert_eq!(json.as_ptr(), published.json.as_ptr(), "the bytes built once, not a new rendering");
        let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(doc["openapi"], "3.1.0");
    }
}
