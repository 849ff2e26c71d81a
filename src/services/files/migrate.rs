//! `onceform files migrate --to database|folder`: copies every blob of one store into the
//! other, streamed (a piece at a time), each checked against its digest before it is kept.
//! A blob the target holds already is left as it is, so a copy cut short is finished by
//! running it again. The source is left as it was: switch `[server] files` once the report
//! says nothing failed, then delete the old store yourself.

use std::io::{self, Read};

use super::store::BlobStore;

/// Digests read from the source at a time.
const PAGE: usize = 500;

/// What a migration did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Migrated {
    pub copied: usize,
    /// In the target already (an earlier run, or the same content).
    pub present: usize,
    /// Whose bytes do not have the digest that names them (not copied).
    pub corrupt: Vec<String>,
    /// That could not be read or written (not copied).
    pub failed: usize,
}

impl Migrated {
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![
            format!("copied: {}", self.copied),
            format!("already there: {}", self.present),
            format!("corrupt (bytes do not match their SHA-256, not copied): {}", self.corrupt.len()),
            format!("failed (run again): {}", self.failed),
        ];
        out.extend(self.corrupt.iter().map(|d| format!("  corrupt: {d}")));
        out
    }

    pub fn ok(&self) -> bool {
        self.corrupt.is_empty() && self.failed == 0
    }
}

/// Copies every blob of `from` that `to` does not hold.
pub fn migrate(from: &dyn BlobStore, to: &dyn BlobStore) -> io::Result<Migrated> {
    let mut done = Migrated::default();
    let mut after = String::new();
    loop {
        let page = from.digests(&after, PAGE)?;
        let Some(last) = page.last() else { break };
        after = last.clone();
        for sha256 in &page {
            if to.size(sha256).is_some() {
                done.present += 1;
                continue;
            }
            match copy(from, to, sha256) {
                Ok(true) => done.copied += 1,
                Ok(false) => done.corrupt.push(sha256.clone()),
                Err(e) => {
                    tracing::warn!(error = %e, "a file could not be copied");
                    done.failed += 1;
                }
            }
        }
    }
    Ok(done)
}

/// Streams one blob across; `false` (nothing kept) when its bytes are not its digest's.
fn copy(from: &dyn BlobStore, to: &dyn BlobStore, sha256: &str) -> io::Result<bool> {
    let mut reader = from.open(sha256)?;
    let mut incoming = to.begin()?;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        incoming.write(&buf[..n])?;
    }
    if incoming.digest() != sha256 {
        return Ok(false); // dropped: nothing of it is kept
    }
    to.commit(incoming)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::files::LocalStore;

    #[test]
    fn copies_once_and_refuses_corrupt_bytes() {
        let root = std::env::temp_dir().join(format!("onceform-migrate-{}", uuid::Uuid::new_v4()));
        let (a, b) = (LocalStore::new(root.join("a")), LocalStore::new(root.join("b")));
        let put = |bytes: &[u8]| {
            let mut i = a.begin().unwrap();
            i.write(bytes).unwrap();
            a.commit(i).unwrap()
        };
        let (one, two) = (put(b"one"), put(&vec![7u8; 200_000]));
        let bad = put(b"bad");
        std::fs::write(a.path(&bad).unwrap(), b"altered").unwrap();
        let first = migrate(&a, &b).unwrap();
        assert_eq!((first.copied, first.present, first.corrupt.clone()), (2, 0, vec![bad.clone()]));
        assert_eq!(b.read(&one).unwrap(), b"one");
        assert_eq!(b.read(&two).unwrap(), vec![7u8; 200_000]);
        assert!(b.path(&bad).is_none());
        let again = migrate(&a, &b).unwrap();
        assert_eq!((again.copied, again.present), (0, 2), "a second run copies nothing");
        let _ = std::fs::remove_dir_all(root);
    }
}
