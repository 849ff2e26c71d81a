//! `when_store_down = "spool"`: a verified delivery that the database cannot take is appended
//! to a local spool file and `fsync`ed before the sender gets its 200; the spool is replayed
//! into the ordinary ingest transaction as soon as the database answers (every second, and
//! at start). The unique (source, event ID) constraint makes a spooled event that also
//! arrived by redelivery a replay, not a second event, so handlers run once.
//!
//! Each process appends to a file of its own (`{uuid}.jsonl` under `server.spool_dir`) and
//! holds an exclusive `flock` on it while it lives; a replay takes every file whose lock it
//! can get (its own, after setting it aside, and those of processes that died), and deletes a
//! file only once every record in it was committed. A full spool (`server.spool_max_bytes`)
//! or an unwritable one answers 503, as `reject` does.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use chrono::NaiveDateTime;
use serde::{Deserialize, Serialize};

use super::inbound::Checked;
use crate::services::storage::DbError;

/// One spooled delivery: what the ingest transaction needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub source: String,
    pub body: String,
    pub content_type: String,
    pub event_id: Option<String>,
    pub received_at: NaiveDateTime,
}

impl Record {
    /// The verified delivery as the endpoint checked it.
    pub fn checked(&self) -> Checked {
        let content_type =
            if self.content_type == "application/xml" { "application/xml" } else { "application/json" };
        Checked { body: self.body.clone(), content_type, event_id: self.event_id.clone() }
    }
}

/// This process's spool file, opened on the first append.
struct Active {
    file: File,
    path: PathBuf,
    bytes: u64,
}

pub struct Spool {
    dir: PathBuf,
    max_bytes: u64,
    active: Mutex<Option<Active>>,
}

/// What `/metrics` shows of the spool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpoolStats {
    pub files: u64,
    pub bytes: u64,
    /// When the oldest spooled record was received.
    pub oldest: Option<NaiveDateTime>,
}

/// An exclusive lock on `file` (`flock`), held until it is closed: false when another
/// open file holds one.
fn try_lock(file: &File) -> bool {
    file.try_lock().is_ok()
}

impl Spool {
    /// The spool in `dir` (made, mode 0700, if missing), at most `max_bytes` in all.
    pub fn open(dir: &Path, max_bytes: u64) -> std::io::Result<Spool> {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        Ok(Spool { dir: dir.to_path_buf(), max_bytes, active: Mutex::new(None) })
    }

    /// Appends `record` and syncs it to disk; an error means it is not spooled (503).
    pub fn append(&self, record: &Record) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(record)?;
        line.push(b'\n');
        if self.stats().bytes + line.len() as u64 > self.max_bytes {
            return Err(std::io::Error::other("the spool is full"));
        }
        let mut active = self.active.lock().map_err(|_| std::io::Error::other("spool lock poisoned"))?;
        if active.is_none() {
            let path = self.dir.join(format!("{}.jsonl", uuid::Uuid::now_v7().simple()));
            let file = OpenOptions::new().create_new(true).append(true).read(true).open(&path)?;
            if !try_lock(&file) {
                return Err(std::io::Error::other("the new spool file is locked"));
            }
            *active = Some(Active { file, path, bytes: 0 });
        }
        let a = active.as_mut().ok_or_else(|| std::io::Error::other("no spool file"))?;
        a.file.write_all(&line)?;
        a.file.sync_data()?;
        a.bytes += line.len() as u64;
        Ok(())
    }

    /// The spool's files, bytes and oldest record.
    pub fn stats(&self) -> SpoolStats {
        let mut stats = SpoolStats::default();
        for path in self.files() {
            let Ok(meta) = fs::metadata(&path) else { continue };
            stats.files += 1;
            stats.bytes += meta.len();
            let first = File::open(&path).ok().and_then(|f| {
                let mut line = String::new();
                BufReader::new(f).read_line(&mut line).ok()?;
                serde_json::from_str::<Record>(&line).ok()
            });
            if let Some(r) = first {
                stats.oldest = Some(stats.oldest.map_or(r.received_at, |o| o.min(r.received_at)));
            }
        }
        stats
    }

    fn files(&self) -> Vec<PathBuf> {
        let Ok(entries) = fs::read_dir(&self.dir) else { return Vec::new() };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        files
    }

    /// The files this replay may take, each with its lock held: this process's own (set
    /// aside, so that new deliveries start a new file) and every file no live process holds.
    fn claim(&self) -> Vec<(PathBuf, File)> {
        let own = self.active.lock().ok().and_then(|mut a| a.take());
        let own_path = own.as_ref().map(|a| a.path.clone());
        let mut claimed: Vec<(PathBuf, File)> = own.into_iter().map(|a| (a.path, a.file)).collect();
        for path in self.files().into_iter().filter(|p| Some(p) != own_path.as_ref()) {
            if let Ok(file) = File::open(&path) {
                if try_lock(&file) {
                    claimed.push((path, file));
                }
            }
        }
        claimed
    }

    /// Ingests every spooled record with `store` (one transaction each) and deletes each
    /// file whose records all committed; the records of a file that failed stay for the next
    /// replay (those that committed then count as replays). Returns the records stored.
    pub fn replay(&self, store: impl Fn(&Record) -> Result<(), DbError>) -> Result<usize, DbError> {
        let mut stored = 0;
        let mut failure = None;
        for (path, mut file) in self.claim() {
            if failure.is_some() {
                continue;
            }
            if file.rewind().is_err() {
                continue;
            }
            let mut ok = true;
            for line in BufReader::new(&file).lines() {
                let Ok(line) = line else { break };
                // A torn last line (a crash mid-append) was never acknowledged.
                let Ok(record) = serde_json::from_str::<Record>(&line) else { continue };
                if let Err(e) = store(&record) {
                    failure = Some(e);
                    ok = false;
                    break;
                }
                stored += 1;
            }
            if ok {
                if let Err(error) = fs::remove_file(&path) {
                    tracing::warn!(%error, file = %path.display(), "spool file not removed");
                }
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(stored),
        }
    }
}

/// How often the spool is looked at while `serve` runs.
pub const REPLAY_EVERY: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str) -> Record {
        Record {
            source: "helpdesk".into(),
            body: format!("{{\"id\":\"{id}\"}}"),
            content_type: "application/json".into(),
            event_id: Some(id.into()),
            received_at: crate::base::clock::now(),
        }
    }

    fn dir() -> PathBuf {
        std::env::temp_dir().join(format!("onceform-spool-test-{}", uuid::Uuid::new_v4().simple()))
    }

    #[test]
    fn records_leave_the_spool_only_once_stored() {
        let spool = Spool::open(&dir(), 1 << 20).unwrap();
        spool.append(&record("a")).unwrap();
        spool.append(&record("b")).unwrap();
        assert_eq!(spool.stats().files, 1);
        assert!(spool.stats().oldest.is_some());
        let down = spool.replay(|_| Err(DbError::Unavailable("down".into())));
        assert!(down.is_err());
        assert_eq!(spool.stats().files, 1, "kept while the database is down");
        let seen = Mutex::new(Vec::new());
        let n = spool.replay(|r| {
            seen.lock().unwrap().push(r.event_id.clone().unwrap());
            Ok(())
        });
        assert_eq!(n.unwrap(), 2);
        assert_eq!(*seen.lock().unwrap(), ["a", "b"]);
        assert_eq!(spool.stats(), SpoolStats::default(), "gone once stored");
        spool.append(&record("c")).unwrap();
        assert_eq!(spool.stats().files, 1, "a new file after the replay");
    }

    #[test]
    fn a_full_spool_refuses() {
        let spool = Spool::open(&dir(), 150).unwrap();
        spool.append(&record("a")).unwrap();
        assert!(spool.append(&record("b")).is_err());
    }

    #[test]
    fn another_processs_live_file_is_left_alone_and_a_dead_ones_is_taken() {
        let d = dir();
        let (mine, theirs) = (Spool::open(&d, 1 << 20).unwrap(), Spool::open(&d, 1 << 20).unwrap());
        theirs.append(&record("t")).unwrap();
        let n = mine.replay(|_| Ok(())).unwrap();
        assert_eq!(n, 0, "its file is locked while it lives");
        drop(theirs);
        assert_eq!(mine.replay(|_| Ok(())).unwrap(), 1, "taken once its process is gone");
    }
}
