//! `file`: leads appended as JSON lines to `DIR/leads.jsonl`, one per external reference.
//! The embedded default, so `cargo run` shows the whole flow without a CRM.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::json;

use super::{Capabilities, CrmAdapter, Lead};
use crate::effects::{BoxFuture, Lookup, Outcome, Report};

pub struct FileCrm {
    path: PathBuf,
    /// Serialises check-then-append within this process.
    lock: Mutex<()>,
}

impl FileCrm {
    pub fn new(dir: &str) -> Self {
        FileCrm { path: PathBuf::from(dir).join("leads.jsonl"), lock: Mutex::new(()) }
    }

    fn find(&self, external_ref: &str) -> std::io::Result<Option<String>> {
        let file = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        for line in BufReader::new(file).lines() {
            let v: serde_json::Value = serde_json::from_str(&line?).unwrap_or_default();
            if v["external_ref"] == external_ref {
                return Ok(Some(external_ref.to_string()));
            }
        }
        Ok(None)
    }

    fn append(&self, lead: &Lead) -> std::io::Result<String> {
        let _guard = self.lock.lock().map_err(|_| std::io::Error::other("lock poisoned"))?;
        if let Some(existing) = self.find(&lead.external_ref)? {
            return Ok(existing);
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let line = json!({"external_ref": lead.external_ref, "fields": lead.fields});
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&self.path)?;
        writeln!(f, "{line}")?;
        f.sync_data()?;
        Ok(lead.external_ref.clone())
    }
}

impl CrmAdapter for FileCrm {
    fn capabilities(&self) -> Capabilities {
        Capabilities { idempotent_upsert: true, lookup: true }
    }

    fn create<'a>(&'a self, lead: &'a Lead) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            match self.append(lead) {
                Ok(reference) => Report::sent(reference),
                Err(_) => Report::failed(Outcome::Transient { retry_after: None }, "file_io"),
            }
        })
    }

    fn lookup<'a>(&'a self, external_ref: &'a str) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            match self.find(external_ref) {
                Ok(Some(provider_ref)) => Lookup::Found { provider_ref },
                Ok(None) => Lookup::Absent,
                Err(_) => Lookup::Failed { error_class: "file_io".into() },
            }
        })
    }
}
