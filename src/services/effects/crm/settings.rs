//! Reading `[crm]`: the shared keys, each adapter's table `[crm.NAME]` parsed by the adapter,
//! and the flat keys of earlier releases (`hubspot_id_property`, …) read as their adapter's.

use serde::de::{self, Deserializer};
use serde::Deserialize;

use super::{find, unknown, ADAPTERS};
use crate::config::CrmConfig;

pub(super) const SHARED: &[&str] = &["adapter", "url", "token_env", "allow_http", "allow_private"];

impl<'de> Deserialize<'de> for CrmConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let table = toml::Table::deserialize(d)?;
        let mut crm = CrmConfig::default();
        let mut own: std::collections::BTreeMap<&'static str, toml::Table> = Default::default();
        let mut flat = Vec::new();
        for (key, value) in table {
            match key.as_str() {
                "adapter" => {
                    let name = string(&key, value)?;
                    let kind = find(&name)
                        .ok_or_else(|| de::Error::custom(format!("adapter: {}", unknown(&name))))?;
                    crm.adapter = Some(kind.name().to_string());
                }
                "url" => crm.url = Some(string(&key, value)?),
                "token_env" => crm.token_env = string(&key, value)?,
                "allow_http" => {
                    crm.allow_http =
                        value.as_bool().ok_or_else(|| de::Error::custom("allow_http: expected a boolean"))?
                }
                "allow_private" => {
                    crm.allow_private = value
                        .as_bool()
                        .ok_or_else(|| de::Error::custom("allow_private: expected a boolean"))?
                }
                _ => match (find(&key), value) {
                    (Some(kind), toml::Value::Table(t)) => {
                        own.entry(kind.name()).or_default().extend(t);
                    }
                    (Some(_), _) => {
                        return Err(de::Error::custom(format!("{key}: expected a table [crm.{key}]")))
                    }
                    (None, value) => flat.push(moved(&key, value)?),
                },
            }
        }
        // A flat key of an earlier release: read as its adapter's, unless its table sets it.
        for (adapter, old, new, value) in flat {
            own.entry(adapter).or_default().entry(new.clone()).or_insert(value);
            crm.moved.push((old, format!("crm.{adapter}.{new}")));
        }
        for kind in ADAPTERS {
            let Some(table) = own.remove(kind.name()) else { continue };
            let parsed =
                kind.settings(table).map_err(|e| de::Error::custom(format!("{}: {e}", kind.name())))?;
            crm.tables.insert(kind.name().to_string(), parsed);
        }
        Ok(crm)
    }
}

fn string<E: de::Error>(key: &str, value: toml::Value) -> Result<String, E> {
    match value {
        toml::Value::String(s) => Ok(s),
        _ => Err(E::custom(format!("{key}: expected a string"))),
    }
}

/// The adapter that claims the flat key `key`, or serde's "unknown field" error.
fn moved<E: de::Error>(
    key: &str,
    value: toml::Value,
) -> Result<(&'static str, String, String, toml::Value), E> {
    for kind in ADAPTERS {
        if let Some((_, new)) = kind.moved_keys().iter().find(|(old, _)| *old == key) {
            return Ok((kind.name(), key.to_string(), new.to_string(), value));
        }
    }
    let mut expected: Vec<String> = SHARED.iter().map(|k| format!("`{k}`")).collect();
    expected.extend(ADAPTERS.iter().map(|a| format!("`{}`", a.name())));
    Err(E::custom(format!("unknown field `{key}`, expected one of {}", expected.join(", "))))
}

/// Gives adapter `name` the table `table` (parsed by the adapter), as `[crm.NAME]` in the
/// file would; the tests and tools that build a configuration in code use it.
pub fn set_table(crm: &mut CrmConfig, name: &str, table: toml::Table) -> Result<(), String> {
    let kind = find(name).ok_or_else(|| unknown(name))?;
    let parsed = kind.settings(table).map_err(|e| format!("crm.{name}: {e}"))?;
    crm.tables.insert(name.to_string(), parsed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn flat_keys_of_earlier_releases_are_read_as_their_adapters_and_named() {
        let c = Config::parse(
            "[crm]\nadapter = 'hubspot'\nurl = 'https://api.hubapi.com'\nhubspot_id_property = 'ref_x'\n\
             salesforce_external_id_field = 'Ref__c'\n[forms.a]\ntitle = 'x'\n[[forms.a.fields]]\nname = 'n'",
        )
        .unwrap();
        assert_eq!(
            c.crm.moved,
            [
                ("hubspot_id_property".to_string(), "crm.hubspot.id_property".to_string()),
                ("salesforce_external_id_field".to_string(), "crm.salesforce.external_id_field".to_string()),
            ]
        );
        let w = crate::services::check_config::warnings(&c).join("\n");
        assert!(w.contains("crm.hubspot_id_property: moved to `crm.hubspot.id_property`"), "{w}");
    }

    #[test]
    fn unknown_keys_and_adapters_are_parse_errors() {
        let e = Config::parse("[crm]\nhubspot_id = 'x'").unwrap_err();
        assert!(e.contains("unknown field `hubspot_id`"), "{e}");
        let e = Config::parse("[crm]\nadapter = 'dynamics'").unwrap_err();
        assert!(e.contains("unknown CRM adapter `dynamics`"), "{e}");
        let e = Config::parse("[crm.salesforce]\nexternal_id = 'x'").unwrap_err();
        assert!(e.contains("salesforce") && e.contains("external_id"), "{e}");
    }
}
