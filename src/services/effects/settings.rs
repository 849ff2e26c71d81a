//! A kind's own table (`[forms.F.NAME]`, `[crm.NAME]`) checked against its type when the
//! config is read (`settings_of`, what each `Kind::settings` and CRM adapter calls), and read
//! as that type where it is used (`parse_table`).

use serde::de::DeserializeOwned;

use crate::config::kind_settings::Settings;
pub use crate::config::kind_settings::{check_table, parse_table};

/// `Kind::settings` for a table that must read as `T`: the table, kept as written.
pub fn settings_of<T: DeserializeOwned>(table: toml::Value) -> Result<Settings, String> {
    check_table::<T>(&table)?;
    Ok(table)
}
