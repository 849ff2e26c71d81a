//! CRM adapters: where a lead goes, and whether it can be looked up by its external reference.
//!
//! Adding an adapter: a file here with a unit struct implementing `AdapterKind` (its name,
//! its `[crm.NAME]` table, its check-config rules, its mapping checks against the vendor,
//! and the constructor of its `CrmAdapter`), then one line in `ADAPTERS`. `generic.rs` is a
//! small example.

mod answer;
mod dir_sync;
mod file;
mod form_kind;
mod generic;
mod hubspot;
mod pipedrive;
mod salesforce;
mod settings;
mod zoho;

pub use file::{file_name as lead_file_name, leads_dir};
pub use form_kind::{form_problems, form_table, FormCrm};
pub use settings::set_table;
use settings::SHARED;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::http::{self, Secret};
use super::settings::parse_table;
use super::{BoxFuture, Lookup, Report};
use crate::config::kind_settings::{unknown_name, Settings};
use crate::config::{CrmConfig, FormConfig, Secrets};
use crate::domain::FileRef;

/// Every CRM adapter, one line each: a new adapter is a file beside this one (see
/// `AdapterKind`) and its line here.
static ADAPTERS: &[&dyn AdapterKind] = &[
    &file::FileKind,
    &generic::GenericKind,
    &hubspot::HubspotKind,
    &salesforce::SalesforceKind,
    &pipedrive::PipedriveKind,
    &zoho::ZohoKind,
];

/// A lead as sent: the effect's key as external reference, the mapped fields.
#[derive(Debug, Clone)]
pub struct Lead {
    pub external_ref: String,
    pub fields: BTreeMap<String, String>,
}

/// One attached file of a lead, sent as a step of its own after the lead: `key` (see
/// `file_key`) names it at the vendor, so a retry after an unknown outcome finds the file it
/// already sent instead of sending it twice.
#[derive(Debug, Clone)]
pub struct LeadFile {
    pub key: String,
    pub file: FileRef,
    pub bytes: Arc<Vec<u8>>,
    /// A signed link to the file (`[server] public_url` set), for a CRM that fetches it.
    pub url: Option<String>,
}

/// The step key of one file of a lead: its external reference, `:file:`, the content's SHA-256.
pub fn file_key(external_ref: &str, sha256: &str) -> String {
    format!("{external_ref}:file:{sha256}")
}

/// A note on the lead sent under the external reference `on`, naming the lead sent under
/// `about` (a decided duplicate's lead and its original's, `crm_note`).
#[derive(Debug, Clone)]
pub struct LeadNote {
    /// The note record's key: kept with the note at the vendor, so that a lookup finds it.
    pub key: String,
    pub on: String,
    pub about: String,
    /// What the note says, plain text (no visitor content).
    pub text: String,
}

/// A note's lookup as the adapters make it: the record the note hangs on (found by the
/// lead's reference: `holder`, or `None` when there is none yet), then the note on it by its
/// key (`find`); `what` names the record in a failed lookup's class (`lookup_lead`).
async fn find_note_on<E1, E2, F>(
    holder: Result<Option<String>, E1>,
    what: &str,
    find: impl FnOnce(String) -> F,
) -> Lookup
where
    F: std::future::Future<Output = Result<Option<String>, E2>>,
{
    let id = match holder {
        Ok(Some(id)) => id,
        Ok(None) => return Lookup::Absent,
        Err(_) => return http::lookup_failed(format!("lookup_{what}")),
    };
    match find(id).await {
        Ok(Some(provider_ref)) => Lookup::Found { provider_ref },
        Ok(None) => Lookup::Absent,
        Err(_) => http::lookup_failed("lookup_note"),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Creating twice with one external reference leaves one lead (an upsert).
    pub idempotent_upsert: bool,
    /// A lead can be found by its external reference.
    pub lookup: bool,
    /// A note can be added to a lead, and found again by its key (`add_note`, `find_note`).
    pub notes: bool,
}

/// What an adapter without notes answers `add_note`: a final failure that says why.
pub fn notes_unsupported() -> Report {
    Report::failed(super::Outcome::Permanent, "crm_notes_unsupported").with_detail(Some(
        "the CRM adapter in use cannot add notes (hubspot, salesforce, pipedrive and zoho can)".into(),
    ))
}

/// What `add_note` answers while the lead the note goes on is not in the CRM (yet): it is
/// tried again later (the lead's own attempt may still be under way).
pub fn note_lead_absent() -> Report {
    Report::failed(super::Outcome::Transient { retry_after: None }, "note_lead_absent")
        .with_detail(Some("the duplicate's lead is not in the CRM (yet)".into()))
}

/// A connected CRM: creates leads and looks them up.
pub trait CrmAdapter: Send + Sync {
    fn capabilities(&self) -> Capabilities;
    fn create<'a>(&'a self, lead: &'a Lead) -> BoxFuture<'a, Report>;
    fn lookup<'a>(&'a self, external_ref: &'a str) -> BoxFuture<'a, Lookup>;

    /// Creates the lead, then sends its files the vendor's way, each a step that looks
    /// itself up before it sends (so the whole may be repeated). An adapter that takes no
    /// files creates the lead only.
    fn create_with_files<'a>(&'a self, lead: &'a Lead, _files: &'a [LeadFile]) -> BoxFuture<'a, Report> {
        self.create(lead)
    }

    /// Looks the lead up and, where the adapter sends files, each of them: `Found` only
    /// when every step is there (else `Absent`, and sending again completes the rest).
    fn lookup_with_files<'a>(&'a self, lead: &'a Lead, _files: &'a [LeadFile]) -> BoxFuture<'a, Lookup> {
        self.lookup(&lead.external_ref)
    }

    /// Adds `note` to the lead sent under `note.on` (found by its external reference),
    /// naming the lead under `note.about` where the CRM has it; looks for the note by its
    /// key first. While the lead is not in the CRM: `note_lead_absent`. An adapter without
    /// notes (`Capabilities::notes`): `notes_unsupported`.
    fn add_note<'a>(&'a self, _note: &'a LeadNote) -> BoxFuture<'a, Report> {
        Box::pin(async { notes_unsupported() })
    }

    /// Looks for `note` on its lead by its key (after an unknown outcome).
    fn find_note<'a>(&'a self, _note: &'a LeadNote) -> BoxFuture<'a, Lookup> {
        Box::pin(async { http::lookup_failed("crm_notes_unsupported") })
    }
}

/// A kind of CRM: its name in `[crm] adapter`, its own table, its rules, its constructor.
pub trait AdapterKind: Sync {
    /// Its name in `[crm] adapter` and of its table `[crm.NAME]`.
    fn name(&self) -> &'static str;

    /// Its table `[crm.NAME]`, parsed (an empty table when the file has none).
    fn settings(&self, table: toml::Table) -> Result<Settings, String>;

    /// Keys that earlier releases had flat in `[crm]` and that now live in its table:
    /// (the flat key, its name in the table). They are still read, with a warning.
    fn moved_keys(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// check-config: the problems of `[crm]` and its table, when it is the adapter in use.
    fn problems(&self, crm: &CrmConfig) -> Vec<String>;

    /// check-config: what it warns about `form` (called `at`, i.e. `forms.NAME`), a form
    /// with `crm_lead`: its mapping held against the vendor's fields (lengths, required ones).
    fn mapping_warnings(&self, _at: &str, _form: &FormConfig) -> Vec<String> {
        Vec::new()
    }

    /// The secrets it cannot work without, read from the environment at start: (its key,
    /// e.g. `token_env`, and the variable it names). None by default.
    fn secret_vars(&self, _crm: &CrmConfig) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// The adapter, built from `[crm]` and its table; `token`: the value of `token_env`;
    /// `secrets`: where the other variables its table names are read.
    fn build(
        &self,
        crm: &CrmConfig,
        token: Option<Secret>,
        secrets: &Secrets,
        timeout: Duration,
    ) -> anyhow::Result<Arc<dyn CrmAdapter>>;
}

/// The registered adapter named `name`.
pub fn find(name: &str) -> Option<&'static dyn AdapterKind> {
    ADAPTERS.iter().copied().find(|a| a.name() == name)
}

/// "unknown CRM adapter `NAME`, expected one of …".
fn unknown(name: &str) -> String {
    unknown_name("CRM adapter", name, ADAPTERS.iter().map(|a| a.name()))
}

/// `name`'s settings: its parsed table, or its defaults.
fn settings_of(crm: &CrmConfig, kind: &dyn AdapterKind) -> Result<Settings, String> {
    match crm.tables.get(kind.name()) {
        Some(parsed) => Ok(parsed.clone()),
        None => kind.settings(toml::Table::new()),
    }
}

/// The configured adapter's own settings, typed (its defaults when its table is absent).
fn own<T: DeserializeOwned>(crm: &CrmConfig, kind: &dyn AdapterKind) -> anyhow::Result<Arc<T>> {
    let read = settings_of(crm, kind).and_then(parse_table::<T>);
    read.map(Arc::new).map_err(|e| anyhow::anyhow!("crm.{}: {e}", kind.name()))
}

/// The adapter the configuration names; the token is read from `token_env` (in `secrets`)
/// here, once.
pub fn adapter(
    config: &CrmConfig,
    secrets: &Secrets,
    timeout: Duration,
) -> anyhow::Result<Arc<dyn CrmAdapter>> {
    let kind = find(config.adapter_name())
        .ok_or_else(|| anyhow::anyhow!("crm.adapter: unknown adapter `{}`", config.adapter_name()))?;
    if let Some(problem) = kind.problems(config).into_iter().next() {
        anyhow::bail!(problem);
    }
    let token = secrets.non_empty(&config.token_env).map(|t| Secret(t.to_string()));
    kind.build(config, token, secrets, timeout)
}

/// check-config: the problems of `[crm]` (the adapter in use judges its own settings).
pub fn problems(crm: &CrmConfig) -> Vec<String> {
    match find(crm.adapter_name()) {
        Some(kind) => kind.problems(crm),
        None => vec![format!(
            "crm.adapter: {}",
            unknown_name("adapter", crm.adapter_name(), ADAPTERS.iter().map(|a| a.name()))
        )],
    }
}

/// check-config: the secrets the adapter of `crm` (called `at`: `crm` or `forms.F.NAME`)
/// needs that `env` does not hold; a message names the variable, never a value.
pub fn secret_problems(at: &str, crm: &CrmConfig, env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let Some(kind) = find(crm.adapter_name()) else { return Vec::new() };
    // `token_env` is `[crm]`'s own key; the others are in the adapter's table.
    let table = match at {
        "crm" => format!("crm.{}", kind.name()),
        _ => at.to_string(),
    };
    kind.secret_vars(crm)
        .into_iter()
        .filter(|(_, var)| env(var).is_none_or(|v| v.trim().is_empty()))
        .map(|(key, var)| {
            let place = if key == "token_env" { at } else { table.as_str() };
            format!("{place}.{key}: the environment variable {var} is not set")
        })
        .collect()
}

/// check-config: keys that moved into an adapter's table, and each `crm_lead` form's
/// mapping held against the adapter in use.
pub fn warnings<'a>(
    crm: &CrmConfig,
    forms: impl Iterator<Item = (&'a String, &'a FormConfig)>,
) -> Vec<String> {
    let mut out: Vec<String> = crm
        .moved
        .iter()
        .map(|(old, new)| format!("crm.{old}: moved to `{new}` (still read; write it there)"))
        .collect();
    let in_use = find(crm.adapter_name());
    for (name, form) in forms {
        let at = format!("forms.{name}");
        if let Some(kind) = in_use.filter(|_| form.lists(&crate::domain::EffectKind::CRM_LEAD)) {
            out.extend(kind.mapping_warnings(&at, form));
        }
        // A form's own CRM kinds (`effects = ["zoho"]`), each against its vendor.
        for kind in ADAPTERS.iter().filter(|k| form.effects.iter().any(|e| e.as_str() == k.name())) {
            out.extend(kind.mapping_warnings(&at, form));
        }
        let noted = form.crm.on_duplicate == crate::config::OnDuplicate::Note;
        if let Some(kind) = in_use.filter(|k| noted && !NOTES.contains(&k.name())) {
            out.push(format!(
                "{at}.crm.on_duplicate: the `{}` CRM adapter cannot add notes: a duplicate's note \
                 will end FAILED_FINAL (crm_notes_unsupported)",
                kind.name()
            ));
        }
    }
    out
}

/// check-config: why the vendor field `required` can be left blank by `form`'s mapping (no
/// required form field is mapped to it and `crm_defaults` does not fill it); `None`: it cannot.
/// Vendor field names are compared without regard to case.
fn may_be_blank(form: &FormConfig, required: &str) -> Option<String> {
    let defaulted =
        form.crm_defaults.iter().any(|(k, v)| k.eq_ignore_ascii_case(required) && !v.trim().is_empty());
    let from: Vec<&String> =
        form.crm_fields.iter().filter(|(_, to)| to.eq_ignore_ascii_case(required)).map(|(f, _)| f).collect();
    if defaulted || from.iter().any(|f| form.field(f).is_some_and(|f| f.required)) {
        return None;
    }
    Some(match from.first() {
        Some(f) => format!("the optional field `{f}` can leave it blank"),
        None => "no field is mapped to it".to_string(),
    })
}

/// check-config: the form fields mapped to the vendor field `to` that may be longer than
/// `length` characters (`crm_defaults` included): (the form's key, its length).
fn too_long(form: &FormConfig, to: &str, length: usize) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = form
        .crm_fields
        .iter()
        .filter(|(_, t)| t.eq_ignore_ascii_case(to))
        .filter_map(|(name, _)| Some((format!("fields ({name})"), form.field(name)?.max_length())))
        .filter(|(_, max)| *max > length)
        .collect();
    for (key, value) in form.crm_defaults.iter().filter(|(k, _)| k.eq_ignore_ascii_case(to)) {
        if value.chars().count() > length {
            out.push((format!("crm_defaults.{key}"), value.chars().count()));
        }
    }
    out
}

/// The adapters that add notes (`Capabilities::notes`), for check-config (which builds none).
const NOTES: &[&str] = &["hubspot", "salesforce", "pipedrive", "zoho"];

/// The HTTP adapters' shared rule: a URL (`[crm] url` or `ONCEFORM_CRM_URL`) that the URL
/// policy allows, at an address the reach admits (`allow_private`).
fn url_problems(crm: &CrmConfig) -> Vec<String> {
    let reach = http::Reach::allowing_private(crm.allow_private);
    match &crm.url {
        None => vec!["crm.url: this CRM adapter needs a URL (or ONCEFORM_CRM_URL)".into()],
        Some(url) => http::url_policy::check("crm.url", url, crm.allow_http)
            .err()
            .or_else(|| http::reach::problem("crm.url", url, reach))
            .into_iter()
            .collect(),
    }
}

/// `crm.url`, or the problem that there is none (the constructors run after `problems`).
fn url_of(crm: &CrmConfig) -> anyhow::Result<String> {
    crm.url.clone().ok_or_else(|| anyhow::anyhow!("crm.url is required for this adapter"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_adapter_takes_an_empty_table_and_names_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for kind in ADAPTERS {
            assert!(seen.insert(kind.name()), "{} registered twice", kind.name());
            assert!(kind.settings(toml::Table::new()).is_ok(), "{} has no defaults", kind.name());
        }
    }
}
