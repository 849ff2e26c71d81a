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
    attachment(name).body(bytes)
}

/// A stored file sent as an attachment a piece at a time (read off the async threads), so a
/// large file never sits whole in memory: `size` bytes from `reader`.
pub fn download_stream(name: &str, size: u64, reader: Box<dyn std::io::Read + Send>) -> HttpResponse {
    /// Bytes read per piece.
    const PIECE: usize = 64 * 1024;
    let pieces = futures_util::stream::unfold(Some(reader), |reader| async move {
        let mut reader = reader?;
        let read = actix_web::web::block(move || {
            let mut buf = vec![0u8; PIECE];
            let n = reader.read(&mut buf)?;
            buf.truncate(n);
            Ok::<_, std::io::Error>((buf, reader))
        })
        .await;
        match read {
            Ok(Ok((buf, _))) if buf.is_empty() => None,
            Ok(Ok((buf, reader))) => Some((Ok(bytes::Bytes::from(buf)), Some(reader))),
            Ok(Err(e)) => Some((Err(e), None)),
            Err(_) => Some((Err(std::io::Error::other("the blocking pool is gone")), None)),
        }
    });
    attachment(name).body(actix_web::body::SizedStream::new(size, Box::pin(pieces)))
}

/// The headers of a file sent as an attachment named `name`, never shown inline.
fn attachment(name: &str) -> actix_web::HttpResponseBuilder {
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
    let mut response = HttpResponse::Ok();
    response
        .content_type("application/octet-stream")
        .insert_header(disposition)
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header(("Content-Security-Policy", "default-src 'none'; sandbox"))
        .insert_header(("Cache-Control", "no-store"));
    response
}
