//! `[hooks.NAME]`: one inbound webhook source, how it is verified and what runs per event.

use serde::Deserialize;

/// What the configuration knows of a verifier: its name in `verify = "…"`, the settings of
/// `[hooks.NAME]` it needs, what its signature covers and how late its provider redelivers.
/// Verifying itself is the rest of the verifier, in `hooks::verify` (which lists them and
/// implements `Deserialize` for `Verify`).
pub trait VerifierRules: Sync {
    fn name(&self) -> &'static str;

    /// check-config: what `hook` (called `at`, i.e. `hooks.NAME`) lacks for this verifier.
    fn problems(&self, _at: &str, _hook: &HookConfig) -> Vec<String> {
        Vec::new()
    }

    /// check-config: what is wrong with the secrets `hook` (called `at`) names, read from `env`
    /// as the verifier reads them at start; a message names the variable, never its value.
    fn secret_problems(
        &self,
        _at: &str,
        _hook: &HookConfig,
        _env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        Vec::new()
    }

    /// Whether deliveries are signed at all (`none`: they are not).
    fn signs(&self) -> bool {
        true
    }

    /// Whether the signature covers header `name` (lower-case).
    fn signs_header(&self, _name: &str) -> bool {
        false
    }

    /// Where the provider puts its event ID when `event_id` is not set.
    fn default_event_id(&self) -> Option<EventIdSpec> {
        None
    }

    /// How late the provider may still deliver an event again (its documented automatic
    /// retries, or how far back its "redeliver" reaches), rounded up; `None`: unknown.
    fn redelivery_span(&self) -> Option<(chrono::Duration, &'static str)> {
        None
    }
}

/// A source's verifier (`verify = "…"`), one of `hooks::verify`'s list.
#[derive(Clone, Copy)]
pub struct Verify(pub &'static dyn VerifierRules);

impl Verify {
    pub fn as_str(self) -> &'static str {
        self.0.name()
    }

    /// Whether `spec` takes the event ID from a header that the signature does not cover
    /// (GitHub's `X-GitHub-Delivery` included: GitHub signs only the body).
    pub fn unsigned_header(self, spec: &EventIdSpec) -> bool {
        match spec {
            EventIdSpec::Header(name) => self.0.signs() && !self.0.signs_header(name),
            EventIdSpec::Json(_) => false,
        }
    }
}

impl std::ops::Deref for Verify {
    type Target = dyn VerifierRules;
    fn deref(&self) -> &Self::Target {
        self.0
    }
}

impl PartialEq for Verify {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl std::fmt::Debug for Verify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a delivery's event ID is read: `header:NAME` or `json:/pointer`, parsed when the
/// configuration is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventIdSpec {
    /// A header (its name in lower case).
    Header(String),
    /// A JSON pointer into the verified body (a string or a number).
    Json(String),
}

impl EventIdSpec {
    pub fn parse(spec: &str) -> Option<EventIdSpec> {
        if let Some(name) = spec.strip_prefix("header:").filter(|n| !n.trim().is_empty()) {
            return Some(EventIdSpec::Header(name.trim().to_ascii_lowercase()));
        }
        spec.strip_prefix("json:").filter(|p| p.starts_with('/')).map(|p| EventIdSpec::Json(p.to_string()))
    }
}

impl std::fmt::Display for EventIdSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EventIdSpec::Header(name) => write!(f, "header:{name}"),
            EventIdSpec::Json(pointer) => write!(f, "json:{pointer}"),
        }
    }
}

impl<'de> Deserialize<'de> for EventIdSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let spec = String::deserialize(d)?;
        EventIdSpec::parse(&spec)
            .ok_or_else(|| serde::de::Error::custom(format!("`{spec}`: `header:NAME` or `json:/pointer`")))
    }
}

/// What the configuration knows of a handler kind: its name in `kind = "…"` and the settings
/// of a handler it needs. Running it is the rest of the kind, in `hooks::handlers` (which
/// lists them and implements `Deserialize` for `HandlerKind`).
pub trait HandlerRules: Sync {
    fn name(&self) -> &'static str;

    /// check-config: what `handler` (called `at`, i.e. `hooks.S.handlers.NAME`) lacks.
    fn problems(&self, _at: &str, _handler: &HandlerConfig) -> Vec<String> {
        Vec::new()
    }

    /// check-config: what is wrong with the secrets `handler` names, read from `env`; a
    /// message names the variable, never its value.
    fn secret_problems(
        &self,
        _at: &str,
        _handler: &HandlerConfig,
        _env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        Vec::new()
    }
}

/// A handler's kind (`kind = "…"`), one of `hooks::handlers`' list.
#[derive(Clone, Copy)]
pub struct HandlerKind(pub &'static dyn HandlerRules);

impl HandlerKind {
    pub fn as_str(self) -> &'static str {
        self.0.name()
    }
}

impl PartialEq for HandlerKind {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl std::fmt::Debug for HandlerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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
    pub verify: Verify,
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
    /// `header:NAME` or `json:/pointer`; unset: the provider's own (`default_event_id`).
    #[serde(default)]
    pub event_id: Option<EventIdSpec>,
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
    /// forward, webhook: allow a target at a private or reserved address, written in the URL
    /// or resolved from its host name (`effects::http::reach`).
    #[serde(default)]
    pub allow_private: bool,
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
        let Some(spec) = &self.event_id else { return out };
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
        out.extend(self.verify.problems(&at, self));
        let mut seen = std::collections::HashSet::new();
        for h in &self.handlers {
            let hat = format!("{at}.handlers.{}", h.name);
            if h.name.is_empty() || h.name.contains(':') || !seen.insert(h.name.as_str()) {
                out.push(format!("{hat}: names must be unique, non-empty and without `:`"));
            }
            out.extend(h.kind.0.problems(&hat, h));
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
            "verify = \"github\"\nsecret_env = \"S\"\n[[handlers]]\nname = \"a\"\nkind = \"forward\"\nurl = \"https://x\"",
        );
        assert!(ok.problems("gh").is_empty());
        let e = toml::from_str::<HookConfig>("verify = \"none\"\nevent_id = \"body:/id\"").unwrap_err();
        assert!(e.to_string().contains("`header:NAME` or `json:/pointer`"), "{e}");
        let bad = parse(
            "verify = \"wecom\"\n\
             [[handlers]]\nname = \"a\"\nkind = \"forward\"\nlookup_url = \"http://x/\"\n\
             [[handlers]]\nname = \"a\"\nkind = \"owner_notification\"",
        );
        let p = bad.problems("we com").join("\n");
        for needle in [
            "hooks.we com: a source name",
            "wecom needs token_env, aes_key_env and corp_id",
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
