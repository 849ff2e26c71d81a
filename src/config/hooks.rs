//! `[hooks.NAME]`: one inbound webhook source, how it is verified and what runs per event.

use serde::Deserialize;

/// How a source's deliveries are authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerifyKind {
    StandardWebhooks,
    Github,
    Stripe,
    Wecom,
    /// No signature (only behind a network boundary you trust).
    None,
}

impl VerifyKind {
    /// Whether `spec` takes the event ID from a header that the signature does not cover:
    /// every header of a signed source but Standard Webhooks' `webhook-id` (GitHub's
    /// `X-GitHub-Delivery` included: GitHub signs only the body and sends no timestamp).
    pub fn unsigned_header(self, spec: &str) -> bool {
        let Some(name) = spec.strip_prefix("header:") else { return false };
        match self {
            VerifyKind::None => false,
            VerifyKind::StandardWebhooks => !name.eq_ignore_ascii_case("webhook-id"),
            VerifyKind::Github | VerifyKind::Stripe | VerifyKind::Wecom => true,
        }
    }

    /// How late the provider may still deliver an event again (its documented automatic
    /// retries, or how far back its "redeliver" reaches), rounded up; `None`: unknown.
    pub fn redelivery_span(self) -> Option<(chrono::Duration, &'static str)> {
        match self {
            VerifyKind::Stripe => Some((chrono::Duration::days(3), "Stripe retries for up to 3 days")),
            VerifyKind::StandardWebhooks => Some((
                chrono::Duration::days(5),
                "Svix-style senders retry for about 28 hours and keep an endpoint for 5 days of failures",
            )),
            VerifyKind::Github => Some((
                chrono::Duration::days(3),
                "GitHub redelivers deliveries of the past 3 days on request",
            )),
            VerifyKind::Wecom => Some((chrono::Duration::minutes(1), "WeCom retries 3 times within seconds")),
            VerifyKind::None => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            VerifyKind::StandardWebhooks => "standard-webhooks",
            VerifyKind::Github => "github",
            VerifyKind::Stripe => "stripe",
            VerifyKind::Wecom => "wecom",
            VerifyKind::None => "none",
        }
    }
}

/// What to do when the database cannot take the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StoreDown {
    /// 503 with Retry-After: the sender redelivers later (customer-visible effects).
    #[default]
    Reject,
    /// The verified delivery goes to a local, fsynced spool and gets its 200; the spool is
    /// replayed into the store once it is back (naturally idempotent, internal handlers).
    Spool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    pub verify: VerifyKind,
    /// The variable holding the signing secret (standard-webhooks `whsec_…`, GitHub, Stripe).
    /// Several secrets during a rotation: separated by spaces (GitHub: by new lines).
    #[serde(default)]
    pub secret_env: Option<String>,
    /// WeCom: the variable holding the callback Token.
    #[serde(default)]
    pub token_env: Option<String>,
    /// WeCom: the variable holding the 43-character EncodingAESKey.
    #[serde(default)]
    pub aes_key_env: Option<String>,
    /// WeCom: the CorpID (or suite ID) every decrypted message must name.
    #[serde(default)]
    pub corp_id: Option<String>,
    /// `header:NAME` or `json:/pointer`; unset: the provider's own (see `event_id`).
    #[serde(default)]
    pub event_id: Option<String>,
    #[serde(default)]
    pub when_store_down: StoreDown,
    /// How far a signed timestamp may be from now.
    #[serde(default = "default_tolerance")]
    pub tolerance_seconds: u64,
    #[serde(default = "default_max_body")]
    pub max_body_bytes: usize,
    #[serde(default)]
    pub handlers: Vec<HandlerConfig>,
    /// How long events' bodies and then their tombstones are kept (`[hooks.NAME.retention]`,
    /// the same windows as a form's).
    #[serde(default)]
    pub retention: super::RetentionConfig,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandlerKind {
    Forward,
    CrmLead,
    OwnerNotification,
    Webhook,
}

impl HandlerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            HandlerKind::Forward => "forward",
            HandlerKind::CrmLead => "crm_lead",
            HandlerKind::OwnerNotification => "owner_notification",
            HandlerKind::Webhook => "webhook",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandlerConfig {
    /// Part of every key; never rename a handler that has run.
    pub name: String,
    pub kind: HandlerKind,
    /// forward, webhook: where the verified body (webhook: the signed event) is POSTed.
    #[serde(default)]
    pub url: Option<String>,
    /// webhook: the environment variable holding the `whsec_…` secret(s), space-separated.
    #[serde(default)]
    pub secret_env: Option<String>,
    /// forward: `GET` with `{key}` replaced: 200 found, 404 absent (reconciles UNKNOWN).
    #[serde(default)]
    pub lookup_url: Option<String>,
    /// forward: allow `http://` to hosts other than loopback (else only `https://`).
    #[serde(default)]
    pub allow_http: bool,
    /// crm_lead: CRM field name → JSON pointer into the event.
    #[serde(default)]
    pub crm_fields: std::collections::BTreeMap<String, String>,
    /// owner_notification: who is told.
    #[serde(default)]
    pub notify: Vec<String>,
}

fn default_tolerance() -> u64 {
    300
}

fn default_max_body() -> usize {
    256 * 1024
}

impl HookConfig {
    pub fn handler(&self, name: &str) -> Option<&HandlerConfig> {
        self.handlers.iter().find(|h| h.name == name)
    }

    /// What check-config warns about this source: a fail-open `spool`, and an `event_id` read from a header the
    /// signature does not cover (deliveries are then told apart by their body instead).
    pub fn warnings(&self, source: &str) -> Vec<String> {
        let mut out = Vec::new();
        if let (Some(keys), Some((span, why))) = (self.retention.keys, self.verify.redelivery_span()) {
            if keys.duration() < span {
                out.push(format!(
                    "hooks.{source}.retention.keys: {keys} is shorter than the provider's redelivery \
                     span ({why}): a redelivery later than that would run its handlers again"
                ));
            }
        }
        if self.when_store_down == StoreDown::Spool {
            out.push(format!(
                "hooks.{source}.when_store_down: `spool` is fail-open: while the database is down its \
                 deliveries are answered 200 from a local spool (lost with the disk); use it only for \
                 naturally idempotent, internal handlers"
            ));
        }
        let Some(spec) = self.event_id.as_deref() else { return out };
        if !self.verify.unsigned_header(spec) {
            return out;
        }
        out.push(format!(
            "hooks.{source}.event_id: `{spec}` is a header the {} signature does not cover, so a \
             signed delivery could be sent again under a new ID; deliveries are told apart by a \
             keyed digest of their verified body instead (use a `json:/pointer` into the signed body)",
            self.verify.as_str()
        ));
        out
    }

    /// Problems with this source, each prefixed by its path.
    pub fn problems(&self, source: &str) -> Vec<String> {
        let mut out = Vec::new();
        let at = format!("hooks.{source}");
        if !source.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            out.push(format!("{at}: a source name may hold only letters, digits, - and _"));
        }
        match self.verify {
            VerifyKind::StandardWebhooks | VerifyKind::Github | VerifyKind::Stripe
                if self.secret_env.is_none() =>
            {
                out.push(format!("{at}.secret_env: names the variable holding the secret"))
            }
            VerifyKind::Wecom
                if self.token_env.is_none() || self.aes_key_env.is_none() || self.corp_id.is_none() =>
            {
                out.push(format!("{at}: wecom needs token_env, aes_key_env and corp_id"))
            }
            _ => {}
        }
        if let Some(e) = &self.event_id {
            if !(e.starts_with("header:") || e.starts_with("json:/")) {
                out.push(format!("{at}.event_id: `header:NAME` or `json:/pointer`"));
            }
        }
        let mut seen = std::collections::HashSet::new();
        for h in &self.handlers {
            let hat = format!("{at}.handlers.{}", h.name);
            if h.name.is_empty() || h.name.contains(':') || !seen.insert(h.name.as_str()) {
                out.push(format!("{hat}: names must be unique, non-empty and without `:`"));
            }
            if matches!(h.kind, HandlerKind::Forward | HandlerKind::Webhook) && h.url.is_none() {
                out.push(format!("{hat}.url: a {} handler needs a URL", h.kind.as_str()));
            }
            if h.kind == HandlerKind::Webhook && h.secret_env.is_none() {
                out.push(format!(
                    "{hat}.secret_env: a webhook handler needs the variable holding its whsec_ secret"
                ));
            }
            if let Some(l) = &h.lookup_url {
                if !l.contains("{key}") {
                    out.push(format!("{hat}.lookup_url: must contain {{key}}"));
                }
            }
            if h.kind == HandlerKind::OwnerNotification && h.notify.is_empty() {
                out.push(format!("{hat}.notify: an owner_notification handler needs addresses"));
            }
            for (field, ptr) in &h.crm_fields {
                if !ptr.is_empty() && !ptr.starts_with('/') {
                    out.push(format!("{hat}.crm_fields.{field}: a JSON pointer starts with /"));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_shorter_than_the_providers_redelivery_span_are_warned_about() {
        let parse = |t: &str| toml::from_str::<HookConfig>(t).unwrap();
        let short = parse("verify = 'stripe'\nsecret_env = 'S'\n[retention]\nkeys = '2d'");
        let warning = short.warnings("pay").join("\n");
        assert!(warning.contains("hooks.pay.retention.keys: 2d is shorter than"), "{warning}");
        assert!(warning.contains("Stripe retries for up to 3 days"), "{warning}");
        assert!(parse("verify = 'stripe'\nsecret_env = 'S'\n[retention]\nkeys = '4d'")
            .warnings("pay")
            .is_empty());
        assert!(parse("verify = 'none'\n[retention]\nkeys = '1h'").warnings("x").is_empty());
    }

    #[test]
    fn an_event_id_from_an_unsigned_header_of_a_signed_source_is_warned_about() {
        let parse = |t: &str| toml::from_str::<HookConfig>(t).unwrap();
        let github = parse("verify = 'github'\nsecret_env = 'S'\nevent_id = 'header:x-github-delivery'");
        let warning = github.warnings("gh").join("\n");
        assert!(
            warning.contains("hooks.gh.event_id: `header:x-github-delivery` is a header the github"),
            "{warning}"
        );
        let stripe = parse("verify = 'stripe'\nsecret_env = 'S'\nevent_id = 'header:x-request-id'");
        assert_eq!(stripe.warnings("st").len(), 1);
        for quiet in [
            "verify = 'standard-webhooks'\nsecret_env = 'S'\nevent_id = 'header:webhook-id'",
            "verify = 'stripe'\nsecret_env = 'S'\nevent_id = 'json:/id'",
            "verify = 'none'\nevent_id = 'header:x-id'",
            "verify = 'github'\nsecret_env = 'S'",
        ] {
            assert!(parse(quiet).warnings("x").is_empty(), "{quiet}");
        }
    }

    #[test]
    fn problems_name_each_missing_or_wrong_setting() {
        let parse = |t: &str| toml::from_str::<HookConfig>(t).unwrap();
        let ok = parse(
            "verify = \"github\"\nsecret_env = \"S\"\n[[handlers]]\nname = \"a\"\nkind = \"forward\"\nurl = \"http://x\"",
        );
        assert!(ok.problems("gh").is_empty());
        let bad = parse(
            "verify = \"wecom\"\nevent_id = \"body:/id\"\n\
             [[handlers]]\nname = \"a\"\nkind = \"forward\"\nlookup_url = \"http://x/\"\n\
             [[handlers]]\nname = \"a\"\nkind = \"owner_notification\"",
        );
        let p = bad.problems("we com").join("\n");
        for needle in [
            "hooks.we com: a source name",
            "wecom needs token_env, aes_key_env and corp_id",
            "event_id: `header:NAME` or `json:/pointer`",
            "handlers.a.url: a forward handler needs a URL",
            "handlers.a.lookup_url: must contain {key}",
            "handlers.a: names must be unique",
            "handlers.a.notify",
        ] {
            assert!(p.contains(needle), "{needle} in\n{p}");
        }
        assert!(toml::from_str::<HookConfig>("verify = \"hmac\"").is_err());
    }
}
