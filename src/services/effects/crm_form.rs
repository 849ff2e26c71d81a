//! `pipedrive`, `zoho`: a CRM as a form's own effect kind (`effects = ["zoho"]`, its settings
//! in `[forms.F.zoho]`, see `crm::form_table`). Each form's records go to the adapter built
//! from its own table and are delivered by the same `CrmLead` as `crm_lead` (the same
//! mapping `crm_fields`, retries, UNKNOWN and reconciliation by lookup).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::crm::{self, form_problems, FormCrm};
use super::crm_lead::CrmLead;
use super::{BoxFuture, Deps, Effect, Job, Kind, Lookup, Outcome, Report, Settings};
use crate::config::FormConfig;
use crate::domain::EffectKind;

/// A CRM adapter registered as a form effect kind of the same name.
pub struct CrmFormKind {
    adapter: &'static str,
}

impl CrmFormKind {
    /// `form`'s `[forms.F.NAME]` read as the `[crm]` it stands for (`crm::form_table`).
    fn form_crm(&self, form: &FormConfig) -> Option<FormCrm> {
        let table = form.settings.raw(&self.name())?;
        crm::form_table(self.adapter, table.clone()).ok()
    }
}

pub static PIPEDRIVE: CrmFormKind = CrmFormKind { adapter: "pipedrive" };
pub static ZOHO: CrmFormKind = CrmFormKind { adapter: "zoho" };

impl Kind for CrmFormKind {
    fn name(&self) -> EffectKind {
        EffectKind::named(self.adapter)
    }

    fn settings(&self, table: toml::Value) -> Option<Result<Settings, String>> {
        Some(crm::form_table(self.adapter, table.clone()).map(|_| table))
    }

    fn check(&self, at: &str, form: &FormConfig) -> Vec<String> {
        let (kind, name) = (self.name(), self.adapter);
        let listed = form.lists(&kind);
        match self.form_crm(form) {
            None if listed => vec![format!("{at}.{name}: the {name} effect needs its table [{at}.{name}]")],
            None => Vec::new(),
            Some(FormCrm(crm)) => {
                let mut out = form_problems(&format!("{at}.{name}"), &crm);
                if !listed {
                    out.insert(0, format!("{at}.{name}: set, but `{name}` is not in {at}.effects"));
                }
                out
            }
        }
    }

    fn secret_problems(
        &self,
        at: &str,
        form: &FormConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        match self.form_crm(form).filter(|_| form.lists(&self.name())) {
            Some(FormCrm(crm)) => crm::secret_problems(&format!("{at}.{}", self.adapter), &crm, env),
            None => Vec::new(),
        }
    }

    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        let kind = self.name();
        let mut forms = BTreeMap::new();
        for (name, form) in &deps.config.forms {
            let Some(FormCrm(crm)) = self.form_crm(form).filter(|_| form.lists(&kind)) else {
                continue;
            };
            let at = format!("forms.{name}.{}", self.adapter);
            let adapter =
                crm::adapter(&crm, deps.secrets, deps.timeout).map_err(|e| anyhow::anyhow!("{at}: {e}"))?;
            let lead = CrmLead::new(adapter, deps.config.clone()).with_files(deps.files.clone());
            forms.insert(name.clone(), lead);
        }
        Ok(Arc::new(ByForm { kind, forms }))
    }
}

/// Each form's `CrmLead`, by form name.
struct ByForm {
    kind: EffectKind,
    forms: BTreeMap<String, CrmLead>,
}

impl Effect for ByForm {
    fn can_reconcile(&self) -> bool {
        self.forms.values().any(|l| l.can_reconcile())
    }

    fn idempotent(&self) -> bool {
        self.forms.values().all(|l| l.idempotent())
    }

    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report> {
        match self.forms.get(&job.form) {
            Some(lead) => lead.deliver(job),
            None => {
                let class = format!("{}_not_configured", self.kind.as_str());
                Box::pin(async move { Report::failed(Outcome::Permanent, class) })
            }
        }
    }

    fn reconcile<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Lookup> {
        match self.forms.get(&job.form) {
            Some(lead) => lead.reconcile(job),
            None => Box::pin(async { Lookup::Failed { error_class: "not_configured".into() } }),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, DEFAULT_CONFIG};

    /// The demo form with `effects` and `table` as its own `[forms.contact.KIND]`.
    fn config(effects: &str, kind: &str, table: &str) -> Config {
        let text = DEFAULT_CONFIG
            .replace(r#"effects = ["crm_lead", "confirmation_email", "owner_notification"]"#, effects)
            + &format!("\n[forms.contact.{kind}]\n{table}");
        Config::parse(&text).unwrap()
    }

    #[test]
    fn check_config_names_the_forms_own_crm_table_and_its_secrets() {
        let zoho = "client_id = \"1000.X\"\nclient_secret_env = \"ZS\"\nrefresh_token_env = \"ZR\"\n";
        let c = config(r#"effects = ["zoho"]"#, "zoho", zoho);
        let problems = crate::services::check_config::problems(&c);
        assert!(problems.iter().all(|p| !p.contains("zoho")), "{problems:?}");
        let env = |var: &str| (var == "ZS").then(|| "secret".to_string());
        assert_eq!(
            crate::services::check_config::secret_problems(&c, &env),
            ["forms.contact.zoho.refresh_token_env: the environment variable ZR is not set"]
        );

        let c = config(r#"effects = []"#, "pipedrive", "url = \"http://crm.example.com\"\n");
        let mut problems = super::super::problems("forms.contact", &c.forms["contact"]);
        problems.retain(|p| p.contains("pipedrive"));
        assert_eq!(
            problems[0],
            "forms.contact.pipedrive: set, but `pipedrive` is not in forms.contact.effects"
        );
        assert!(problems.iter().any(|p| p.starts_with("forms.contact.pipedrive.url:")), "{problems:?}");
        assert!(
            problems.iter().any(|p| p.starts_with("forms.contact.pipedrive.reference_field:")),
            "{problems:?}"
        );
        assert!(problems.iter().any(|p| p.starts_with("forms.contact.pipedrive.token_env:")), "{problems:?}");

        let text = DEFAULT_CONFIG.replace(
            r#"effects = ["crm_lead", "confirmation_email", "owner_notification"]"#,
            r#"effects = ["zoho"]"#,
        );
        let c = Config::parse(&text).unwrap();
        let problems = super::super::problems("forms.contact", &c.forms["contact"]);
        assert!(problems.contains(
            &"forms.contact.zoho: the zoho effect needs its table [forms.contact.zoho]".to_string()
        ));
    }
}
