//! A kind's own table (`[forms.F.NAME]`, `[crm.NAME]`) parsed into its type: what each
//! `Kind::settings` and CRM adapter calls.

use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::config::kind_settings::Settings;

/// `Kind::settings` for a table that deserialises into `T`.
pub fn settings_of<T: DeserializeOwned + Send + Sync + 'static>(
    table: toml::Value,
) -> Result<Settings, String> {
    Ok(Arc::new(parse_table::<T>(table)?))
}

/// A kind's table as `T`; the error on one line.
pub fn parse_table<T: DeserializeOwned>(table: toml::Value) -> Result<T, String> {
    table.try_into().map_err(|e| e.to_string().trim().replace('\n', " "))
}
