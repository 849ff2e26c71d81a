//! CRM adapters: where a lead goes, and whether it can be looked up by its external reference.

mod dir_sync;
mod file;
mod generic;
mod hubspot;
mod salesforce;
pub mod url_policy;

pub use file::{file_name as lead_file_name, safe_name};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::{http, BoxFuture, Lookup, Report};
use crate::config::{CrmAdapterName, CrmConfig};

/// A lead as sent: the effect's key as external reference, the mapped fields.
#[derive(Debug, Clone)]
pub struct Lead {
    pub external_ref: String,
    pub fields: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Creating twice with one external reference leaves one lead (an upsert).
    pub idempotent_upsert: bool,
    /// A lead can be found by its external reference.
    pub lookup: bool,
}

pub trait CrmAdapter: Send + Sync {
    fn capabilities(&self) -> Capabilities;
    fn create<'a>(&'a self, lead: &'a Lead) -> BoxFuture<'a, Report>;
    fn lookup<'a>(&'a self, external_ref: &'a str) -> BoxFuture<'a, Lookup>;
}

/// The adapter the configuration names; the token is read from `token_env` here, once.
pub fn adapter(config: &CrmConfig, timeout: Duration) -> anyhow::Result<Arc<dyn CrmAdapter>> {
    let token = std::env::var(&config.token_env).ok().filter(|t| !t.is_empty()).map(http::Secret);
    if config.adapter() != CrmAdapterName::File {
        url_policy::check_config(config).map_err(anyhow::Error::msg)?;
    }
    let url = || config.url.clone().ok_or_else(|| anyhow::anyhow!("crm.url is required for this adapter"));
    Ok(match config.adapter() {
        CrmAdapterName::File => Arc::new(file::FileCrm::new(&config.dir)),
        CrmAdapterName::Generic => {
            Arc::new(generic::GenericCrm::new(url()?, config.lookup_url.clone(), token, timeout)?)
        }
        CrmAdapterName::Hubspot => {
            Arc::new(hubspot::Hubspot::new(url()?, config.hubspot_id_property.clone(), token, timeout)?)
        }
        CrmAdapterName::Salesforce => Arc::new(salesforce::Salesforce::new(
            url()?,
            config.salesforce_external_id_field.clone(),
            token,
            timeout,
        )?),
    })
}
