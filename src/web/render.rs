//! Page rendering shared by the public pages (`http`), the admin (`admin`) and the inbound
//! webhook pages (`hooks`): a typed askama template (escaped by default, `templates/`) becomes
//! one HTML response.

use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use askama::Template;

/// Renders `page` as an HTML response with `status`.
pub fn html(status: StatusCode, page: &impl Template) -> HttpResponse {
    match page.render() {
        // Every form render carries a fresh operation ID: no cache may hand one out twice.
        Ok(body) => HttpResponse::build(status)
            .content_type("text/html; charset=utf-8")
            .insert_header(("Cache-Control", "no-store"))
            // The Content-Security-Policy (nothing inline runs) is set for every response by
            // `security_headers`.
            .body(body),
        Err(error) => {
            tracing::error!(%error, "template failed");
            HttpResponse::InternalServerError().body("internal error")
        }
    }
}
