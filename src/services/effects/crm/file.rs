//! `file`: one JSON file per lead, `DIR/leads/{external_ref}.json`, written atomically (a
//! temporary file, fsync, rename, then a directory fsync shared with concurrent writers).
//! Writing is O(1) per lead, and so is the lookup by external reference: the file exists or
//! not. Every file operation runs on the blocking pool, never on the async threads. The
//! embedded default, so `cargo run` shows the whole flow without a CRM.

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use super::dir_sync::DirSync;
use super::{own, AdapterKind, Capabilities, CrmAdapter, Lead};
use crate::base::private_files;
use crate::config::kind_settings::Settings;
use crate::config::CrmConfig;
use crate::services::effects::http::Secret;
use crate::services::effects::settings::settings_of;
use crate::services::effects::{BoxFuture, Lookup, Outcome, Report};

/// `[crm.file]`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    /// Leads are written as `DIR/leads/{external_ref}.json`.
    #[serde(default = "default_dir")]
    dir: String,
}

fn default_dir() -> String {
    "./data/crm".into()
}

pub struct FileKind;

impl AdapterKind for FileKind {
    fn name(&self) -> &'static str {
        "file"
    }

    fn settings(&self, table: toml::Table) -> Result<Settings, String> {
        settings_of::<FileSettings>(toml::Value::Table(table))
    }

    fn moved_keys(&self) -> &'static [(&'static str, &'static str)] {
        &[("dir", "dir")]
    }

    fn problems(&self, _crm: &CrmConfig) -> Vec<String> {
        Vec::new()
    }

    fn build(
        &self,
        crm: &CrmConfig,
        _token: Option<Secret>,
        _secrets: &crate::config::Secrets,
        _timeout: std::time::Duration,
    ) -> anyhow::Result<Arc<dyn CrmAdapter>> {
        Ok(Arc::new(FileCrm::new(&own::<FileSettings>(crm, self)?.dir)))
    }
}

/// Where the `file` adapter writes its leads (`DIR/leads`), when it is the adapter in use.
pub fn leads_dir(crm: &CrmConfig) -> Option<PathBuf> {
    (crm.adapter_name() == FileKind.name())
        .then(|| own::<FileSettings>(crm, &FileKind).ok())
        .flatten()
        .map(|s| PathBuf::from(&s.dir).join("leads"))
}

pub struct FileCrm {
    /// `DIR/leads`: one file per external reference.
    leads: PathBuf,
    sync: Arc<DirSync>,
}

impl FileCrm {
    pub fn new(dir: &str) -> Self {
        let leads = PathBuf::from(dir).join("leads");
        FileCrm { sync: Arc::new(DirSync::new(leads.clone())), leads }
    }
}

/// The lead's file name: `safe_name(external_ref, "json")`.
pub fn file_name(external_ref: &str) -> String {
    private_files::safe_name(external_ref, "json")
}

/// Whether the lead's file exists.
fn exists(path: &Path) -> std::io::Result<bool> {
    match std::fs::metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Writes the lead's file unless it exists (readable by the server's user only); blocking.
fn write(leads: &Path, sync: &DirSync, external_ref: &str, body: &[u8]) -> std::io::Result<()> {
    let name = file_name(external_ref);
    let path = leads.join(&name);
    if exists(&path)? {
        return sync.sync(); // written before, perhaps by a writer whose directory fsync is still under way
    }
    private_files::create_dir_all(leads)?;
    let tmp = leads.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let written = private_files::create_new(&tmp).and_then(|mut f| {
        f.write_all(body)?;
        f.sync_data()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, &path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    sync.sync()
}

impl CrmAdapter for FileCrm {
    fn capabilities(&self) -> Capabilities {
        Capabilities { idempotent_upsert: true, lookup: true, notes: false }
    }

    fn create<'a>(&'a self, lead: &'a Lead) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let body = json!({"external_ref": lead.external_ref, "fields": lead.fields}).to_string();
            let (leads, sync, external_ref) =
                (self.leads.clone(), self.sync.clone(), lead.external_ref.clone());
            let written =
                tokio::task::spawn_blocking(move || write(&leads, &sync, &external_ref, body.as_bytes()))
                    .await;
            match written {
                Ok(Ok(())) => Report::sent(lead.external_ref.clone()),
                _ => Report::failed(Outcome::Transient { retry_after: None }, "file_io"),
            }
        })
    }

    fn lookup<'a>(&'a self, external_ref: &'a str) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            let path = self.leads.join(file_name(external_ref));
            match tokio::task::spawn_blocking(move || exists(&path)).await {
                Ok(Ok(true)) => Lookup::Found { provider_ref: external_ref.to_string() },
                Ok(Ok(false)) => Lookup::Absent,
                _ => Lookup::Failed { error_class: "file_io".into() },
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lead(external_ref: &str) -> Lead {
        Lead { external_ref: external_ref.into(), fields: [("email".into(), "a@b.c".into())].into() }
    }

    fn scratch() -> PathBuf {
        std::env::temp_dir().join(format!("onceform-filecrm-{}", uuid::Uuid::new_v4().simple()))
    }

    #[test]
    fn file_names_are_one_per_reference_and_stay_in_the_directory() {
        assert_eq!(file_name("0193-ab:crm_lead:0"), "0193-ab%3Acrm_lead%3A0.json");
        assert_ne!(file_name("a:b"), file_name("a_b"));
        assert_eq!(file_name("../x"), "%2E%2E%2Fx.json");
        let long = file_name(&"x".repeat(300));
        assert!(long.starts_with("sha256-") && long.len() < 100, "{long}");
    }

    #[tokio::test]
    async fn a_lead_is_written_once_and_found_by_its_reference() {
        let dir = scratch();
        let crm = FileCrm::new(dir.to_str().unwrap());
        assert_eq!(crm.lookup("r:1").await, Lookup::Absent);
        assert_eq!(crm.create(&lead("r:1")).await, Report::sent("r:1"));
        assert_eq!(crm.lookup("r:1").await, Lookup::Found { provider_ref: "r:1".into() });
        let path = dir.join("leads").join("r%3A1.json");
        let stored: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(stored, json!({"external_ref": "r:1", "fields": {"email": "a@b.c"}}));

        let mut again = lead("r:1");
        again.fields.insert("email".into(), "changed@b.c".into());
        assert_eq!(crm.create(&again).await, Report::sent("r:1"), "sending twice is harmless");
        assert_eq!(std::fs::read(&path).unwrap(), serde_json::to_vec(&stored).unwrap(), "the first stays");
        let files: Vec<_> = std::fs::read_dir(dir.join("leads")).unwrap().collect();
        assert_eq!(files.len(), 1, "no temporary files left behind");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn a_temporary_file_left_by_a_crash_is_not_a_lead() {
        let dir = scratch();
        let leads = dir.join("leads");
        std::fs::create_dir_all(&leads).unwrap();
        // A worker died mid-write: a torn temporary file, never renamed into place.
        let torn = leads.join(format!(".{}.{}.tmp", file_name("r:1"), uuid::Uuid::new_v4().simple()));
        std::fs::write(&torn, b"{\"external_ref\": \"r:1\", \"fie").unwrap();
        let crm = FileCrm::new(dir.to_str().unwrap());
        assert_eq!(crm.lookup("r:1").await, Lookup::Absent, "a torn write is no lead");
        assert_eq!(crm.create(&lead("r:1")).await, Report::sent("r:1"));
        let stored: serde_json::Value =
            serde_json::from_slice(&std::fs::read(leads.join("r%3A1.json")).unwrap()).unwrap();
        assert_eq!(stored["external_ref"], "r:1");
        assert_eq!(crm.lookup("r:1").await, Lookup::Found { provider_ref: "r:1".into() });
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn concurrent_deliveries_of_one_reference_leave_one_complete_lead() {
        let dir = scratch();
        let crm = Arc::new(FileCrm::new(dir.to_str().unwrap()));
        let sends = (0..16).map(|i| {
            let crm = crm.clone();
            tokio::spawn(async move {
                let mut l = lead("r:2");
                l.fields.insert("n".into(), i.to_string());
                crm.create(&l).await
            })
        });
        for sent in futures_util::future::join_all(sends).await {
            assert_eq!(sent.unwrap(), Report::sent("r:2"));
        }
        let names: Vec<String> = std::fs::read_dir(dir.join("leads"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["r%3A2.json"], "one file, no temporary left");
        let stored: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("leads").join("r%3A2.json")).unwrap()).unwrap();
        assert_eq!(stored["external_ref"], "r:2", "complete JSON");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn an_unwritable_directory_is_a_transient_failure() {
        let dir = scratch();
        std::fs::write(&dir, "a file where the directory should be").unwrap();
        let crm = FileCrm::new(dir.to_str().unwrap());
        let want = Report::failed(Outcome::Transient { retry_after: None }, "file_io");
        assert_eq!(crm.create(&lead("r:1")).await, want);
        std::fs::remove_file(dir).unwrap();
    }
}
