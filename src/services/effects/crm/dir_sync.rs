//! Durable renames for the file adapters: an fsync of a directory shared by every writer
//! waiting for one (group commit), so concurrent leads cost one directory fsync, not one each.

use std::io;
use std::path::PathBuf;
use std::sync::{Condvar, Mutex, MutexGuard};

pub struct DirSync {
    dir: PathBuf,
    state: Mutex<SyncState>,
    done: Condvar,
}

#[derive(Default)]
struct SyncState {
    /// Callers so far; each takes the next number.
    requested: u64,
    /// Every caller up to this number is covered by a completed fsync.
    synced: u64,
    running: bool,
}

fn poisoned() -> io::Error {
    io::Error::other("directory sync lock poisoned")
}

impl DirSync {
    pub fn new(dir: PathBuf) -> DirSync {
        DirSync { dir, state: Mutex::default(), done: Condvar::new() }
    }

    fn lock(&self) -> io::Result<MutexGuard<'_, SyncState>> {
        self.state.lock().map_err(|_| poisoned())
    }

    /// Returns once an fsync of the directory that began after this call has completed, so
    /// that every rename made before the call is durable. Blocks: call it off the async threads.
    pub fn sync(&self) -> io::Result<()> {
        let mut s = self.lock()?;
        s.requested += 1;
        let mine = s.requested;
        loop {
            if s.synced >= mine {
                return Ok(());
            }
            if s.running {
                s = self.done.wait(s).map_err(|_| poisoned())?;
                continue;
            }
            // Lead an fsync covering everyone registered so far.
            s.running = true;
            let target = s.requested;
            drop(s);
            let result = std::fs::File::open(&self.dir).and_then(|d| d.sync_all());
            s = self.lock()?;
            s.running = false;
            if result.is_ok() {
                s.synced = s.synced.max(target);
            }
            self.done.notify_all();
            result?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn concurrent_callers_all_return_after_a_sync() {
        let dir = std::env::temp_dir().join(format!("onceform-dirsync-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let sync = Arc::new(DirSync::new(dir.clone()));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let sync = sync.clone();
                std::thread::spawn(move || sync.sync())
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        let s = sync.state.lock().unwrap();
        assert_eq!((s.requested, s.synced, s.running), (16, 16, false));
        drop(s);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_hang() {
        let sync = DirSync::new(std::env::temp_dir().join("onceform-no-such-dir-for-sure"));
        assert!(sync.sync().is_err());
        assert!(!sync.state.lock().unwrap().running);
    }
}
