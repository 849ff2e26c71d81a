//! Attached files in tests: small real PDF and PNG files, a `multipart/form-data` body as a
//! browser builds it, and what the file store holds.

use sha2::{Digest, Sha256};

/// A one-page PDF (its magic bytes are what the server's type detection reads).
pub fn pdf(text: &str) -> Vec<u8> {
    format!(
        "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n\
         3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\n% {text}\ntrailer<</Root 1 0 R>>\n%%EOF\n"
    )
    .into_bytes()
}

/// A 1×1 PNG.
pub fn png() -> Vec<u8> {
    let mut bytes =
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89".to_vec();
    bytes.extend_from_slice(b"\0\0\0\rIDATx\x9cc\xf8\x0f\0\0\x01\x01\0\x05\x18\xd8N\0\0\0\0IEND\xaeB`\x82");
    bytes
}

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// One part of a form post: a text field, or a file (field, file name, bytes).
pub enum Part<'a> {
    Text(&'a str, &'a str),
    File(&'a str, &'a str, &'a [u8]),
}

/// The `Content-Type` and body of a `multipart/form-data` post of `parts`.
pub fn multipart(parts: &[Part<'_>]) -> (String, Vec<u8>) {
    let boundary = format!("----onceform{}", uuid::Uuid::new_v4().simple());
    let mut body = Vec::new();
    for part in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        match part {
            Part::Text(name, value) => {
                body.extend_from_slice(
                    format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes(),
                );
            }
            Part::File(name, file_name, bytes) => {
                body.extend_from_slice(
                    format!(
                        "Content-Disposition: form-data; name=\"{name}\"; filename=\"{file_name}\"\r\n\
                         Content-Type: application/octet-stream\r\n\r\n"
                    )
                    .as_bytes(),
                );
                body.extend_from_slice(bytes);
                body.extend_from_slice(b"\r\n");
            }
        }
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// The digests of the blobs under a file store's folder.
pub fn blobs(files_dir: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(shards) = std::fs::read_dir(files_dir) else { return out };
    for shard in shards.flatten().filter(|s| s.file_name() != "tmp") {
        for blob in std::fs::read_dir(shard.path()).into_iter().flatten().flatten() {
            out.push(blob.file_name().to_string_lossy().into_owned());
        }
    }
    out.sort();
    out
}
