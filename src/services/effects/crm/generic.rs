//! `generic`: POST the lead as JSON with an `Idempotency-Key`; optional lookup URL. A lead
//! with attached files lists them in `files` (each file's `name`, `content_type`, `size`,
//! `sha256` and, with `[server] public_url`, a signed `url` the receiver fetches it from for a
//! week); their bytes are not sent.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::{own, url_of, url_problems, AdapterKind, Capabilities, CrmAdapter, Lead, LeadFile};
use crate::config::kind_settings::Settings;
use crate::config::CrmConfig;
use crate::services::effects::http::url_policy::check_template;
use crate::services::effects::http::{
    authorize, client, fill, id_of, lookup_failed, reach, status_error, Client, Reach, Secret,
};
use crate::services::effects::settings::settings_of;
use crate::services::effects::{BoxFuture, Lookup, Report};

/// `[crm.generic]`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GenericSettings {
    /// A `GET` URL with `{external_ref}`: 200 found, 404 absent; without it, unknown
    /// outcomes wait for an admin.
    #[serde(default)]
    lookup_url: Option<String>,
}

/// The lookup URL may carry a token in its query: printed redacted.
impl std::fmt::Debug for GenericSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = self.lookup_url.as_deref().map(crate::config::redact_url);
        f.debug_struct("GenericSettings").field("lookup_url", &url).finish()
    }
}

pub struct GenericKind;

impl AdapterKind for GenericKind {
    fn name(&self) -> &'static str {
        "generic"
    }

    fn settings(&self, table: toml::Table) -> Result<Settings, String> {
        settings_of::<GenericSettings>(toml::Value::Table(table))
    }

    fn moved_keys(&self) -> &'static [(&'static str, &'static str)] {
        &[("lookup_url", "lookup_url")]
    }

    fn problems(&self, crm: &CrmConfig) -> Vec<String> {
        let mut out = url_problems(crm);
        let lookup = own::<GenericSettings>(crm, self).ok().and_then(|s| s.lookup_url.clone());
        if let Some(l) = lookup {
            let at = "crm.generic.lookup_url";
            if !l.contains("{external_ref}") {
                out.push(format!("{at}: must contain {{external_ref}}"));
            } else {
                let checked = check_template(at, &l, "{external_ref}", crm.allow_http);
                out.extend(
                    checked
                        .err()
                        .or_else(|| reach::problem(at, &l, Reach::allowing_private(crm.allow_private))),
                );
            }
        }
        out
    }

    fn build(
        &self,
        crm: &CrmConfig,
        token: Option<Secret>,
        _secrets: &crate::config::Secrets,
        timeout: Duration,
    ) -> anyhow::Result<Arc<dyn CrmAdapter>> {
        let settings = own::<GenericSettings>(crm, self)?;
        Ok(Arc::new(GenericCrm::new(
            url_of(crm)?,
            settings.lookup_url.clone(),
            token,
            Reach::allowing_private(crm.allow_private),
            timeout,
        )?))
    }
}

pub struct GenericCrm {
    client: Client,
    url: String,
    /// With `{external_ref}` where the reference goes.
    lookup_url: Option<String>,
    token: Option<Secret>,
}

impl GenericCrm {
    pub fn new(
        url: String,
        lookup_url: Option<String>,
        token: Option<Secret>,
        reach: Reach,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        Ok(GenericCrm { client: client(timeout, reach)?, url, lookup_url, token })
    }
}

impl CrmAdapter for GenericCrm {
    fn capabilities(&self) -> Capabilities {
        Capabilities { idempotent_upsert: false, lookup: self.lookup_url.is_some(), notes: false }
    }

    fn create<'a>(&'a self, lead: &'a Lead) -> BoxFuture<'a, Report> {
        self.create_with_files(lead, &[])
    }

    fn create_with_files<'a>(&'a self, lead: &'a Lead, files: &'a [LeadFile]) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let mut body = json!({"external_ref": lead.external_ref, "fields": lead.fields});
            if !files.is_empty() {
                let listed: Vec<serde_json::Value> = files
                    .iter()
                    .map(|f| {
                        json!({"name": f.file.name, "content_type": f.file.content_type,
                               "size": f.file.size, "sha256": f.file.sha256, "url": f.url})
                    })
                    .collect();
                body["files"] = serde_json::Value::Array(listed);
            }
            let req = self.client.post(&self.url).header("Idempotency-Key", &lead.external_ref).json(&body);
            let resp = match self.client.send(authorize(req, &self.token)).await {
                Ok(r) => r,
                Err(report) => return report,
            };
            let status = resp.status();
            if !status.is_success() {
                return status_error(resp).await;
            }
            let body: serde_json::Value = resp.json().await.unwrap_or_default();
            Report::sent(id_of(&body, "id").unwrap_or_else(|| lead.external_ref.clone()))
                .with_http(status.as_u16())
        })
    }

    fn lookup<'a>(&'a self, external_ref: &'a str) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            let Some(template) = &self.lookup_url else { return lookup_failed("no_lookup") };
            // The reference is one path segment (or query value), encoded: a reference like
            // `x/../../admin?…#` cannot walk the path this request and its token go to.
            let Some(url) = fill(template, "{external_ref}", external_ref) else {
                return lookup_failed("bad_reference");
            };
            let resp = match self.client.send(authorize(self.client.get(url), &self.token)).await {
                Ok(r) => r,
                Err(_) => return lookup_failed("lookup_transport"),
            };
            match resp.status().as_u16() {
                404 => Lookup::Absent,
                200 => {
                    let body: serde_json::Value = resp.json().await.unwrap_or_default();
                    match id_of(&body, "id") {
                        Some(provider_ref) => Lookup::Found { provider_ref },
                        None => lookup_failed("lookup_body"),
                    }
                }
                s => lookup_failed(format!("lookup_http_{s}")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::effects::crm::hubspot::fake::serve;
    use crate::services::effects::Outcome;
    use std::collections::BTreeMap;

    /// Issue 21: the raw reference made the CRM receive `GET /admin/delete-all?confirm=yes`
    /// with the bearer token.
    #[tokio::test]
    async fn a_lookup_reference_with_dot_segments_and_a_query_cannot_walk_the_crm_path() {
        let (base, rx) = serve("404 Not Found", "", "").await;
        let crm = GenericCrm::new(
            format!("{base}/leads"),
            Some(format!("{base}/leads/{{external_ref}}")),
            Some(Secret("tok".into())),
            Reach::Public,
            Duration::from_secs(5),
        )
        .unwrap();
        let reference = "x/../../../admin/delete-all?confirm=yes#";
        assert_eq!(crm.lookup(reference).await, Lookup::Absent);
        let got = rx.await.unwrap();
        assert_eq!(
            got.request_line(),
            "GET /leads/x%2F..%2F..%2F..%2Fadmin%2Fdelete-all%3Fconfirm%3Dyes%23 HTTP/1.1"
        );
        assert_eq!(crm.lookup("..").await, lookup_failed("bad_reference"), "no request for a dot segment");
    }

    /// Issue 45: only addresses written in `crm.url` were checked, and only by check-config;
    /// a CRM whose host name resolved to a private address was called with the lead and the
    /// token. No connection is made now, and the lead fails for good.
    #[tokio::test]
    async fn a_crm_whose_host_name_resolves_to_loopback_is_not_connected_to() {
        let (base, mut rx) = serve("201 Created", "", r#"{"id":"ld_1"}"#).await;
        let named = base.replace("127.0.0.1", "localhost");
        let crm = |reach| {
            let lookup = Some(format!("{named}/leads/{{external_ref}}"));
            GenericCrm::new(
                format!("{named}/leads"),
                lookup,
                Some(Secret("tok".into())),
                reach,
                Duration::from_secs(5),
            )
            .unwrap()
        };
        let lead = Lead { external_ref: "0193-ab:crm_lead:0".into(), fields: BTreeMap::new() };
        let refused = crm(Reach::Public).create(&lead).await;
        assert_eq!(
            (refused.outcome, refused.error_class.as_deref()),
            (Outcome::Permanent, Some("private_address"))
        );
        assert_eq!(crm(Reach::Public).lookup("0193-ab").await, lookup_failed("lookup_transport"));
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(rx.try_recv().is_err(), "no request reached the CRM");
        // `[crm] allow_private = true`: the operator's own CRM on their network.
        assert!(matches!(crm(Reach::Any).create(&lead).await.outcome, Outcome::Sent { .. }));
        assert!(rx.await.is_ok());
    }
}
