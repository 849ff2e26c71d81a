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

/// A file as a download the browser never renders: `attachment` with its name (an ASCII
/// fallback and the UTF-8 name, RFC 6266), `nosniff`, a sandboxing CSP, never cached.
pub fn download(name: &str, bytes: Vec<u8>) -> HttpResponse {
    use actix_web::http::header::{
        Charset, ContentDisposition, DispositionParam, DispositionType, ExtendedValue,
    };
    let ascii: String =
        name.chars().map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' { c } else { '_' }).collect();
    let disposition = ContentDisposition {
        disposition: DispositionType::Attachment,
        parameters: vec![
            DispositionParam::Filename(ascii),
            DispositionParam::FilenameExt(ExtendedValue {
                charset: Charset::Ext("UTF-8".into()),
                language_tag: None,
                value: name.as_bytes().to_vec(),
            }),
        ],
    };
    HttpResponse::Ok()
        .content_type("application/octet-stream")
        .insert_header(disposition)
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header(("Content-Security-Policy", "default-src 'none'; sandbox"))
        .insert_header(("Cache-Control", "no-store"))
        .body(bytes)
}
