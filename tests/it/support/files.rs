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

/// The digests of the blobs in the file store `config` names (the folder, or the database's
/// `blobs` tables), complete ones only.
pub fn kept_blobs(config: &onceform::config::Config) -> Vec<String> {
    store_of(config).store().digests("", 100_000).unwrap()
}

/// The bytes of the blob `sha256` in the store `config` names.
pub fn read_stored(config: &onceform::config::Config, sha256: &str) -> Vec<u8> {
    store_of(config).store().read(sha256).unwrap()
}

/// Deletes the blob `sha256` from the store `config` names (as a purge elsewhere would).
pub fn remove_stored(config: &onceform::config::Config, sha256: &str) {
    store_of(config).store().remove(sha256).unwrap()
}

/// Makes every blob of the store look written an hour and a minute ago (past the sweep's
/// hour and `IN_FLIGHT`).
pub fn age_stored(config: &onceform::config::Config) {
    use diesel::prelude::*;
    use onceform::config::FileStoreKind;
    use onceform::db::schema::blobs;
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3660);
    match config.server.file_store(&config.database.url) {
        FileStoreKind::Folder => {
            let dir = &config.server.files_dir;
            for b in blobs(dir) {
                let f = std::fs::File::options().write(true).open(format!("{dir}/{}/{b}", &b[..2])).unwrap();
                f.set_modified(old).unwrap();
            }
        }
        FileStoreKind::Database => {
            let pool = onceform::db::Pool::for_files(&config.database);
            let at = chrono::DateTime::<chrono::Utc>::from(old).naive_utc();
            let mut c = pool.get().unwrap();
            diesel::update(blobs::table).set(blobs::written_at.eq(at)).execute(&mut *c).unwrap();
        }
    }
}

fn store_of(config: &onceform::config::Config) -> onceform::services::files::Files {
    onceform::services::files::Files::stored(&config.server, &config.database)
}

/// Every entry of the store `config` names, blobs and what is being written alike: the
/// folder's files (temporary ones too), or the rows of `blobs` and `blob_chunks`.
pub fn store_entries(config: &onceform::config::Config) -> usize {
    use diesel::prelude::*;
    use onceform::config::FileStoreKind;
    use onceform::db::schema::{blob_chunks, blobs};
    fn walk(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir)
            .map_or(0, |d| d.flatten().map(|e| if e.path().is_dir() { walk(&e.path()) } else { 1 }).sum())
    }
    match config.server.file_store(&config.database.url) {
        FileStoreKind::Folder => walk(std::path::Path::new(&config.server.files_dir)),
        FileStoreKind::Database => {
            let pool = onceform::db::Pool::for_files(&config.database);
            let mut c = pool.get().unwrap();
            let rows: i64 = blobs::table.count().get_result(&mut *c).unwrap();
            let chunks: i64 = blob_chunks::table.count().get_result(&mut *c).unwrap();
            usize::try_from(rows + chunks).unwrap()
        }
    }
}
