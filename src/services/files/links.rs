//! Signed links to one file of one submission, for receivers that fetch files themselves (the
//! generic CRM): `{public_url}/files/{submission}/{sha256}?expires=T&signature=S`, where S is
//! the server secret's keyed digest of the submission, the digest and T. A link opens only
//! that file of that submission, until T (seven days after it was made), and only while the
//! submission still names the file.

use std::sync::Arc;

use crate::base::secret::constant_time_eq;
use crate::db::files::FileRefs;
use crate::db::{DbError, Pool};
use crate::domain::keyring::Keyring;
use crate::domain::FileRef;

use super::Files;

/// How long a link opens its file.
pub const LINK_DAYS: i64 = 7;

#[derive(Clone)]
pub struct FileLinks {
    keyring: Arc<Keyring>,
    /// `[server] public_url`, without a trailing `/`.
    base: String,
}

impl FileLinks {
    pub fn new(keyring: Arc<Keyring>, public_url: &str) -> FileLinks {
        FileLinks { keyring, base: public_url.trim_end_matches('/').to_string() }
    }

    /// The link to `sha256` of `submission`, made at `now` (Unix seconds).
    pub fn link(&self, submission: &str, sha256: &str, now: i64) -> String {
        let expires = now + LINK_DAYS * 86_400;
        let signature = signature(&self.keyring, submission, sha256, expires);
        format!("{}/files/{submission}/{sha256}?expires={expires}&signature={signature}", self.base)
    }
}

/// The signature of a link (the keyed digest's hex, without its key version).
pub fn signature(keyring: &Keyring, submission: &str, sha256: &str, expires: i64) -> String {
    let digest = keyring.digest(&format!("file-link\n{submission}\n{sha256}\n{expires}"));
    digest.split_once(':').map_or(digest.clone(), |(_, hex)| hex.to_string())
}

/// Whether a link's `expires` and `signature` open `sha256` of `submission` at `now`.
pub fn opens(keyring: &Keyring, submission: &str, sha256: &str, expires: i64, given: &str, now: i64) -> bool {
    let wanted = signature(keyring, submission, sha256, expires);
    now <= expires
        && expires <= now + LINK_DAYS * 86_400
        && constant_time_eq(wanted.as_bytes(), given.as_bytes())
}

/// A file a signed link opens: its display name, its size and its bytes.
pub struct Opened {
    pub name: String,
    pub size: u64,
    pub reader: Box<dyn std::io::Read + Send>,
}

/// The file `sha256` of `submission`: `None` unless the submission still names it, is not
/// spam, and the store still holds its bytes.
pub fn open(pool: &Pool, files: &Files, submission: &str, sha256: &str) -> Result<Option<Opened>, DbError> {
    let Some((spam, fields)) = pool.get()?.naming(submission, sha256)? else { return Ok(None) };
    if spam {
        return Ok(None);
    }
    let name = fields
        .as_deref()
        .and_then(|f| crate::domain::stored_fields::parse(f).ok())
        .and_then(|f| f.values().flat_map(|v| FileRef::stored_in(v)).find(|r| r.sha256 == sha256))
        .map(|r| r.name);
    let opened = files.store().size(sha256).and_then(|size| Some((size, files.store().open(sha256).ok()?)));
    Ok(name.zip(opened).map(|(name, (size, reader))| Opened { name, size, reader }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_opens_its_file_only_until_it_expires() {
        let keyring =
            Arc::new(Keyring::new(crate::base::secret::Secret::new("onceform unit-test secret"), Vec::new()));
        let links = FileLinks::new(keyring.clone(), "https://forms.example.com/");
        let link = links.link("sub1", &"a".repeat(64), 1_000);
        let (path, query) = link.split_once('?').unwrap();
        assert_eq!(path, format!("https://forms.example.com/files/sub1/{}", "a".repeat(64)));
        let expires: i64 = query.split('&').next().unwrap().trim_start_matches("expires=").parse().unwrap();
        let sig = query.split("signature=").nth(1).unwrap();
        assert!(opens(&keyring, "sub1", &"a".repeat(64), expires, sig, 2_000));
        assert!(!opens(&keyring, "sub1", &"a".repeat(64), expires, sig, expires + 1), "expired");
        assert!(!opens(&keyring, "sub2", &"a".repeat(64), expires, sig, 2_000), "another submission");
        assert!(!opens(&keyring, "sub1", &"b".repeat(64), expires, sig, 2_000), "another file");
        assert!(!opens(&keyring, "sub1", &"a".repeat(64), expires + 60, sig, 2_000), "a moved expiry");
        let far = 2_000 + 30 * 86_400;
        let forged_far = signature(&keyring, "sub1", &"a".repeat(64), far);
        assert!(
            !opens(&keyring, "sub1", &"a".repeat(64), far, &forged_far, 2_000),
            "never longer than a week"
        );
    }
}
