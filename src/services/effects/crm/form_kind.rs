//! A CRM adapter as a form's own effect kind (`effects = ["zoho"]` with `[forms.F.zoho]`):
//! the form's table holds what `[crm]` and `[crm.NAME]` would (`url`, `token_env`,
//! `allow_http`, `allow_private` and the adapter's own keys), read into a `CrmConfig` of its
//! own, so the adapter, its rules and the `crm_lead` effect are the same either way.

use super::{find, problems, SHARED};
use crate::config::CrmConfig;

/// `[forms.F.NAME]` of an adapter's kind: the `[crm]` it stands for.
#[derive(Clone)]
pub struct FormCrm(pub CrmConfig);

/// Parses `[forms.F.NAME]` for adapter `name`: the shared keys of `[crm]`, the rest the
/// adapter's own table. No token variable unless `token_env` names one.
pub fn form_table(name: &str, table: toml::Value) -> Result<FormCrm, String> {
    let kind = find(name).ok_or_else(|| format!("unknown CRM adapter `{name}`"))?;
    let toml::Value::Table(table) = table else { return Err("expected a table".into()) };
    let mut crm =
        CrmConfig { adapter: Some(name.to_string()), token_env: String::new(), ..Default::default() };
    let mut own = toml::Table::new();
    for (key, value) in table {
        let text = || value.as_str().map(str::to_string).ok_or_else(|| format!("{key}: expected a string"));
        let flag = || value.as_bool().ok_or_else(|| format!("{key}: expected a boolean"));
        match key.as_str() {
            "url" => crm.url = Some(text()?),
            "token_env" => crm.token_env = text()?,
            "allow_http" => crm.allow_http = flag()?,
            "allow_private" => crm.allow_private = flag()?,
            k if SHARED.contains(&k) => {
                return Err(format!("{key}: not taken here (the kind names the adapter)"))
            }
            _ => {
                own.insert(key, value);
            }
        }
    }
    // An unknown key: the adapter lists its own keys, and these are the table's too.
    let parsed = kind.settings(own).map_err(|e| match e.contains("unknown field") {
        true => format!("{e}, or one of `url`, `token_env`, `allow_http`, `allow_private`"),
        false => e,
    })?;
    crm.tables.insert(name.to_string(), parsed);
    Ok(FormCrm(crm))
}

/// check-config: the problems of a form's table (called `at`, i.e. `forms.F.NAME`), as the
/// adapter states them for `[crm]`, named at the form.
pub fn form_problems(at: &str, crm: &CrmConfig) -> Vec<String> {
    let own = format!("crm.{}.", crm.adapter_name());
    let here = format!("{at}.");
    problems(crm)
        .into_iter()
        .map(|p| {
            let rest = p.strip_prefix(&own).or_else(|| p.strip_prefix("crm.")).map(|r| format!("{here}{r}"));
            rest.unwrap_or(p).replace(" (or ONCEFORM_CRM_URL)", "")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forms_table_splits_into_the_shared_keys_and_the_adapters() {
        let table: toml::Value = toml::from_str(
            "url = 'https://acme.pipedrive.com'\ntoken_env = 'PD'\nreference_field = 'abc_key'",
        )
        .unwrap();
        let FormCrm(crm) = form_table("pipedrive", table).unwrap();
        assert_eq!(
            (crm.adapter_name(), crm.url.as_deref(), crm.token_env.as_str()),
            ("pipedrive", Some("https://acme.pipedrive.com"), "PD")
        );
        assert!(
            form_problems("forms.contact.pipedrive", &crm).is_empty(),
            "{:?}",
            form_problems("forms.contact.pipedrive", &crm)
        );
        let e = form_table("pipedrive", toml::from_str("adapter = 'zoho'").unwrap()).err().unwrap();
        assert!(e.contains("adapter"), "{e}");
        let e = form_table("pipedrive", toml::from_str("reference = 'x'").unwrap()).err().unwrap();
        assert!(e.contains("reference"), "{e}");
        let FormCrm(crm) = form_table("pipedrive", toml::from_str("reference_field = 'k'").unwrap()).unwrap();
        assert_eq!(
            form_problems("forms.c.pipedrive", &crm),
            [
                "forms.c.pipedrive.url: this CRM adapter needs a URL",
                "forms.c.pipedrive.token_env: names the environment variable holding the API token"
            ]
        );
    }
}
