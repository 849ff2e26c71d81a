//! `[crm]`: where leads go. The settings every adapter shares live here; each adapter's own
//! table (`[crm.file]`, `[crm.generic]`, `[crm.hubspot]`, `[crm.salesforce]`) is checked by
//! the adapter itself when the config is read, and read as its type where it is used (`src/services/effects/crm/`, which also implements
//! `Deserialize` for this type, as `effects` does for `KindSettings`).

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;

use super::kind_settings::Settings;

/// Where leads go; see `src/effects/crm/` for the adapters.
#[derive(Clone)]
pub struct CrmConfig {
    /// A registered adapter's name; unset: `generic` when `url` is set, else `file`.
    pub adapter: Option<String>,
    /// The HTTP adapters' URL (generic: where leads are POSTed; hubspot/salesforce: the API base).
    pub url: Option<String>,
    /// The environment variable holding the API token (never logged).
    pub token_env: String,
    /// Allow `http://` CRM URLs to hosts other than loopback (else only `https://`).
    pub allow_http: bool,
    /// Allow a CRM at a private or reserved address, written in the URL or resolved from its
    /// host name (`effects::http::reach`); a loopback address written in the URL needs none.
    pub allow_private: bool,
    /// Each adapter's own table `[crm.NAME]`, as written (checked by that adapter).
    pub tables: BTreeMap<String, Settings>,
    /// Keys of earlier releases found flat in `[crm]` and read as their adapter's: (the key,
    /// where it lives now). check-config warns about each.
    pub moved: Vec<(String, String)>,
}

impl CrmConfig {
    /// The configured adapter's name.
    pub fn adapter_name(&self) -> &str {
        match (&self.adapter, &self.url) {
            (Some(a), _) => a,
            (None, Some(_)) => "generic",
            (None, None) => "file",
        }
    }

    /// Adapter `name`'s table read as `T` (`None`: not given; the adapter takes its defaults).
    pub fn table<T: DeserializeOwned>(&self, name: &str) -> Option<T> {
        self.tables.get(name)?.clone().try_into().ok()
    }
}

impl Default for CrmConfig {
    fn default() -> Self {
        Self {
            adapter: None,
            url: None,
            token_env: "ONCEFORM_CRM_TOKEN".into(),
            allow_http: false,
            allow_private: false,
            tables: BTreeMap::new(),
            moved: Vec::new(),
        }
    }
}
