//! `[hooks.NAME]`: one inbound webhook source, how it is verified and what runs per event.

use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::kind_settings::parse_table;

/// What the configuration knows of a verifier: its name in `verify = "…"`, the settings of
/// `[hooks.NAME]` it needs, what its signature covers and how late its provider redelivers.
/// Verifying itself is the rest of the verifier, in `hooks::verify` (which lists them and
/// implements `Deserialize` for `Verify`).
pub trait VerifierRules: Sync {
    fn name(&self) -> &'static str;

    /// Checks its own keys of `[hooks.NAME]` (all but the shared ones, see `HookConfig::own`)
    /// when the configuration is read; the error says what is wrong.
    fn check_settings(&self, own: &toml::Value) -> Result<(), String>;

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
/// of a handler it needs. Running it is the rest of the kind, in `services::effects`
/// (which lists them and implements `Deserialize` for `HandlerKind`).
pub trait HandlerRules: Sync {
    fn name(&self) -> &'static str;

    /// Checks its own keys of a handler (all but `name` and `kind`, see `HandlerConfig::own`)
    /// when the configuration is read; the error says what is wrong.
    fn check_settings(&self, own: &toml::Value) -> Result<(), String>;

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

/// A handler's kind (`kind = "…"`), one of `services::effects::HANDLERS`.
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
#[serde(try_from = "RawHook")]
pub struct HookConfig {
    pub verify: Verify,
    /// The verifier's own keys, as written (`secret_env`; WeCom: `token_env`, `aes_key_env`,
    /// `corp_id`): it checked them when the config was read, and reads them as its own type
    /// (`own`).
    pub settings: toml::Value,
    /// `header:NAME` or `json:/pointer`; unset: the provider's own (`default_event_id`).
    pub event_id: Option<EventIdSpec>,
    pub when_store_down: StoreDown,
    /// How far a signed timestamp may be from now.
    pub tolerance_seconds: u64,
    pub max_body_bytes: usize,
    pub handlers: Vec<HandlerConfig>,
    /// How long events' bodies and then their tombstones are kept (`[hooks.NAME.retention]`,
    /// the same windows as a form's).
    pub retention: super::RetentionConfig,
}

/// `[hooks.NAME]` as written: the keys every source has, and the verifier's own.
#[derive(Deserialize)]
struct RawHook {
    verify: Verify,
    #[serde(default)]
    event_id: Option<EventIdSpec>,
    #[serde(default)]
    when_store_down: StoreDown,
    #[serde(default = "default_tolerance")]
    tolerance_seconds: u64,
    #[serde(default = "default_max_body")]
    max_body_bytes: usize,
    #[serde(default)]
    handlers: Vec<HandlerConfig>,
    #[serde(default)]
    retention: super::RetentionConfig,
    #[serde(flatten)]
    settings: toml::Table,
}

impl HookConfig {
    /// The keys every source's table takes (the verifier takes its own besides).
    pub const KEYS: &'static [&'static str] = &[
        "verify",
        "event_id",
        "when_store_down",
        "tolerance_seconds",
        "max_body_bytes",
        "handlers",
        "retention",
    ];
}

impl TryFrom<RawHook> for HookConfig {
    type Error = String;

    fn try_from(raw: RawHook) -> Result<Self, String> {
        let settings = toml::Value::Table(raw.settings);
        raw.verify.check_settings(&settings)?;
        Ok(HookConfig {
            verify: raw.verify,
            settings,
            event_id: raw.event_id,
            when_store_down: raw.when_store_down,
            tolerance_seconds: raw.tolerance_seconds,
            max_body_bytes: raw.max_body_bytes,
            handlers: raw.handlers,
            retention: raw.retention,
        })
    }
}

/// One `[[hooks.NAME.handlers]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "RawHandler")]
pub struct HandlerConfig {
    /// Part of every key; never rename a handler that has run.
    pub name: String,
    pub kind: HandlerKind,
    /// The kind's own keys, as written (`url`, `notify`, …): the kind checked them when the
    /// config was read, and reads them as its own type (`own`).
    pub settings: toml::Value,
}

#[derive(Deserialize)]
struct RawHandler {
    name: String,
    kind: HandlerKind,
    #[serde(flatten)]
    settings: toml::Table,
}

impl TryFrom<RawHandler> for HandlerConfig {
    type Error = String;

    fn try_from(raw: RawHandler) -> Result<Self, String> {
        let settings = toml::Value::Table(raw.settings);
        raw.kind.0.check_settings(&settings).map_err(|e| format!("handler `{}`: {e}", raw.name))?;
        Ok(HandlerConfig { name: raw.name, kind: raw.kind, settings })
    }
}

impl HandlerConfig {
    /// The keys every handler's table takes (its kind takes its own besides).
    pub const KEYS: &'static [&'static str] = &["name", "kind"];

    /// Its own keys as its kind's type `T`.
    pub fn own<T: DeserializeOwned>(&self) -> Result<T, String> {
        parse_table(self.settings.clone())
    }
}

fn default_tolerance() -> u64 {
    300
}

fn default_max_body() -> usize {
    256 * 1024
}

impl HookConfig {
    /// The verifier's own keys as its type `T`.
    pub fn own<T: DeserializeOwned>(&self) -> Result<T, String> {
        parse_table(self.settings.clone())
    }

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

    /// Each verifier and handler kind takes its own keys, and refuses another's.
    #[test]
    fn a_key_of_another_verifier_or_handler_kind_is_refused() {
        let refusal = |t: &str| toml::from_str::<HookConfig>(t).unwrap_err().message().to_string();
        let e = refusal("verify = 'github'\nsecret_env = 'S'\ncorp_id = 'wx1'");
        assert!(e.contains("unknown field `corp_id`, expected `secret_env`"), "{e}");
        let e = refusal("verify = 'wecom'\nsecret_env = 'S'");
        assert!(e.contains("unknown field `secret_env`"), "{e}");
        let e = refusal("verify = 'none'\n[[handlers]]\nname = 'a'\nkind = 'forward'\nurl = 'https://x/'\nnotify = ['a@example.com']");
        assert!(e.contains("handler `a`: unknown field `notify`"), "{e}");
        let webhook = toml::from_str::<HookConfig>(
            "verify = 'none'\n[[handlers]]\nname = 'w'\nkind = 'webhook'\nurl = 'https://hooks.example.com/'\n\
             secret_env = 'W'\nheaders = { x-tenant = 't1' }",
        )
        .unwrap();
        assert!(webhook.problems("h").is_empty(), "{:?}", webhook.problems("h"));
    }
}
