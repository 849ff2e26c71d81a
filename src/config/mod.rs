//! Configuration: the TOML file (or the built-in default) plus environment overrides.

mod check;
pub mod crm;
mod database_url;
mod email;
mod file_errors;
pub mod hooks;
pub mod kind_settings;
pub mod locale;
mod metrics_token;
pub mod parsed;
pub mod proxies;
mod redact;
pub mod retention;
mod spam;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

use serde::Deserialize;
use validator::Validate;

use crate::domain::{EffectKind, FieldConfig, FieldType, FormSchema};

pub use check::{problems, warnings};
pub use crm::CrmConfig;
pub use database_url::DatabaseUrl;
pub use email::EmailTexts;
pub use hooks::HookConfig;
pub use kind_settings::KindSettings;
pub use locale::{FormTexts, LocaleChoice};
pub use metrics_token::MetricsToken;
pub use proxies::TrustedProxies;
pub use redact::redact_url;
pub use retention::{PurgeConfig, RetentionConfig, Window};
pub use spam::{is_origin, CaptchaConfig, CaptchaProvider};

/// The built-in configuration: a demo `contact` form on SQLite.
pub const DEFAULT_CONFIG: &str = include_str!("default.toml");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub server: ServerConfig,
    #[serde(default)]
    pub database: DatabaseConfig,
    #[serde(default)]
    pub smtp: SmtpConfig,
    #[serde(default)]
    pub crm: CrmConfig,
    #[serde(default)]
    pub worker: WorkerConfig,
    #[serde(default)]
    pub forms: BTreeMap<String, FormConfig>,
    /// Inbound webhook sources (`[hooks.NAME]`).
    #[serde(default)]
    pub hooks: BTreeMap<String, HookConfig>,
    #[serde(default)]
    pub alerts: AlertsConfig,
    #[serde(default)]
    pub purge: PurgeConfig,
}

/// What `onceform alert-rules` writes into the Prometheus rules.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlertsConfig {
    /// The `owner` label of every alert: the team that answers for this integration.
    pub owner: String,
    /// Where docs/RUNBOOK.md is published; each alert links a section of it (`#alertname`).
    pub runbook_url: String,
}

impl Default for AlertsConfig {
    fn default() -> Self {
        Self { owner: "onceform".into(), runbook_url: "docs/RUNBOOK.md".into() }
    }
}

#[derive(Debug, Clone, Deserialize, Validate)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    #[serde(deserialize_with = "parsed::de_bind")]
    pub bind: SocketAddr,
    /// Per-client rate limits on the public submit endpoints.
    pub rate_limit: bool,
    /// HTTP worker threads; 0 means one per core but one, at least one (`http::server`).
    #[validate(range(max = 256))]
    pub http_workers: usize,
    /// Committed results kept in memory to answer retries without the database (entries,
    /// about 1 KiB each); 0 turns the cache off.
    #[validate(range(max = 10_000_000))]
    pub replay_cache: usize,
    /// Reverse proxies (addresses or CIDR ranges) whose `X-Forwarded-For` names the client
    /// for rate limits and sign-in throttling. Empty: the header is ignored.
    #[serde(deserialize_with = "parsed::de_trusted_proxies")]
    pub trusted_proxies: TrustedProxies,
    /// Connection deadlines and caps (applied in `src/http/connections.rs`).
    #[validate(range(min = 100, max = 600000))]
    pub body_timeout_ms: u64,
    #[validate(range(min = 100, max = 600000))]
    pub request_head_timeout_ms: u64,
    #[validate(range(max = 3600))]
    pub keep_alive_seconds: u64,
    #[validate(range(min = 1, max = 1000000))]
    pub max_connections_per_worker: usize,
    /// `Secure` cookies with the `__Host-` prefix, and HSTS; unset: on unless bound to loopback.
    pub secure_cookies: Option<bool>,
    /// `ONCEFORM_METRICS_TOKEN`: `/metrics` then needs `Authorization: Bearer TOKEN`.
    pub metrics_token: Option<MetricsToken>,
    /// How old `/metrics`' database figures may be (they are counted at most this often).
    #[validate(range(max = 300000))]
    pub metrics_cache_ms: u64,
    /// Where the first start writes the generated admin password (mode 0600).
    pub initial_password_file: String,
    /// Where the server secret is generated once when `ONCEFORM_SECRET` is not set.
    pub secret_file: String,
    /// Where webhook sources with `when_store_down = "spool"` keep the deliveries the
    /// database could not take (one file per process).
    pub spool_dir: String,
    /// The spool's size at most, in bytes; a delivery that does not fit is answered 503.
    #[validate(range(min = 4096))]
    pub spool_max_bytes: u64,
}

/// `Debug` is written by hand in `redact.rs`: the URL may hold a password.
#[derive(Clone, Deserialize, Validate)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseConfig {
    #[serde(deserialize_with = "parsed::de_database_url")]
    pub url: DatabaseUrl,
    /// Connections in the pool; 0 picks a default for the backend.
    #[validate(range(max = 512))]
    pub pool_size: u32,
    /// How long a request waits for a connection before answering 503.
    #[validate(range(min = 50, max = 60000))]
    pub acquire_timeout_ms: u64,
    /// SQLite: how long a writer waits for the lock before giving up (then 503).
    #[validate(range(min = 0, max = 60000))]
    pub busy_timeout_ms: u64,
    /// SQLite: commit concurrent accepts together (one fsync per batch, a savepoint each).
    pub group_commit: bool,
    /// PostgreSQL: keep prepared statements per connection; `false` behind a pooler in
    /// transaction mode (pgbouncer), where a statement prepared on one server connection
    /// may be executed on another.
    pub prepared_statements: bool,
}

/// Mail delivery: SMTP when `url` is set, else `.eml` files under `mail_dir`.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SmtpConfig {
    /// `smtp://[user:pass@]host[:port]` (`?tls=required` for STARTTLS) or `smtps://…`.
    pub url: Option<String>,
    pub from: String,
    pub mail_dir: String,
}

/// The side-effect workers (inside `serve`, or alone as `onceform worker`).
#[derive(Debug, Clone, Deserialize, Validate)]
#[serde(deny_unknown_fields, default)]
pub struct WorkerConfig {
    /// Run the workers inside `serve`.
    pub enabled: bool,
    /// Effects in flight at once in one process.
    #[validate(range(min = 1, max = 1024))]
    pub concurrency: usize,
    /// Idle wait between polls.
    #[validate(range(min = 10, max = 60000))]
    pub poll_ms: u64,
    /// A SENDING record whose lease runs out (its worker died) becomes UNKNOWN.
    #[validate(range(min = 1, max = 86400))]
    pub lease_seconds: u64,
    /// Hard limit on one delivery call (HTTP request, SMTP send).
    #[validate(range(min = 10, max = 600000))]
    pub call_timeout_ms: u64,
    #[validate(range(min = 1, max = 100))]
    pub max_attempts: i32,
    /// First retry delay; doubled per attempt, jittered, capped by `backoff_max_seconds`.
    #[validate(range(min = 1, max = 3600000))]
    pub backoff_base_ms: u64,
    #[validate(range(min = 1, max = 604800))]
    pub backoff_max_seconds: u64,
    /// How soon an UNKNOWN outcome is looked up (and again after a failed lookup).
    #[validate(range(min = 1, max = 3600000))]
    pub reconcile_after_ms: u64,
}

/// Unknown keys are refused by `settings`, which takes only the tables of effect kinds.
#[derive(Debug, Clone, Deserialize, Validate)]
pub struct FormConfig {
    /// Required: a missing title is an empty one, refused by the check (it is read after
    /// unknown keys, so that a misspelt `title` is named as such).
    #[serde(default)]
    #[validate(length(min = 1, max = 200))]
    pub title: String,
    #[serde(default)]
    pub intro: Option<String>,
    #[serde(default)]
    pub fields: Vec<FieldConfig>,
    #[serde(default)]
    pub effects: Vec<EffectKind>,
    /// Accept plain HTML posts without an `operation_id` (screened as keyless).
    #[serde(default = "yes")]
    pub allow_keyless_html: bool,
    /// Accept JSON posts without a key.
    #[serde(default)]
    pub allow_keyless_api: bool,
    /// Name of the hidden field bots fill in; empty turns the honeypot off.
    #[serde(default = "default_honeypot")]
    pub honeypot: String,
    /// Volatile fields accepted but never stored nor fingerprinted (captcha tokens).
    #[serde(default = "default_ignore_fields")]
    pub ignore_fields: Vec<String>,
    #[serde(default = "default_max_body_bytes")]
    #[validate(range(min = 256, max = 10485760))]
    pub max_body_bytes: usize,
    #[serde(default)]
    #[validate(nested)]
    pub rate_limit: RateLimitConfig,
    /// Addresses that get the owner notification (Reply-To: the visitor).
    #[serde(default)]
    pub notify: Vec<String>,
    /// CRM field name for each form field sent with the lead (default: every field under its
    /// own name, and the journey ID as `journey_id`); with a mapping, the journey ID is sent
    /// only if `journey_id` is mapped too.
    #[serde(default)]
    pub crm_fields: BTreeMap<String, String>,
    /// A value for a CRM field that the mapping leaves blank or unmapped (e.g. Salesforce
    /// Lead's required `Company`): CRM field name → constant.
    #[serde(default)]
    pub crm_defaults: BTreeMap<String, String>,
    /// The duplicate detector: how far back it looks and what a likely duplicate does.
    #[serde(default)]
    #[validate(nested)]
    pub duplicates: DuplicateConfig,
    /// The region (ISO 3166 code, e.g. `TW`, `US`) a phone number in national format is
    /// read as, for matching (E.164); what the visitor typed is what is stored.
    #[serde(default)]
    #[validate(custom(function = "crate::domain::region::check_region"))]
    pub default_region: Option<String>,
    /// How long an operation ID keeps answering replays.
    #[serde(default = "default_operation_ttl_days")]
    #[validate(range(min = 1, max = 3650))]
    pub operation_ttl_days: u32,
    /// The confirmation email greets by name and lists what the visitor typed (else: only the
    /// reference; docs/email.md).
    #[serde(default)]
    pub confirmation_echo: bool,
    /// At most one confirmation per recipient address within this many minutes (0: no cap).
    #[serde(default = "default_confirmation_window_minutes")]
    #[validate(range(max = 525600))]
    pub confirmation_window_minutes: u32,
    /// The operator's own words in this form's emails (plain text, never a template).
    #[serde(default)]
    pub email: EmailTexts,
    /// Origins (`https://www.example.com`) whose pages may call the JSON API (CORS, exact
    /// match); when set, POSTs from other origins are refused.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Where a plain HTML post lands after acceptance (303) instead of the receipt.
    #[serde(default)]
    pub redirect: Option<String>,
    /// A form rendered by onceform and posted sooner than this is stored as spam (0: off).
    #[serde(default = "spam::default_min_fill_seconds")]
    #[validate(range(max = 3600))]
    pub min_fill_seconds: u32,
    /// A server-side captcha check before any side effect is created.
    #[serde(default)]
    pub captcha: Option<CaptchaConfig>,
    /// The visitor's language: a shipped locale (`zh-TW`) or `auto` (negotiated from
    /// `Accept-Language` among `locales`); default `en`.
    #[serde(default)]
    pub locale: LocaleChoice,
    /// The locales an `auto` form offers, the first being the one its own texts are
    /// written in (the fallback); empty: all shipped locales.
    #[serde(default)]
    pub locales: Vec<crate::i18n::Locale>,
    /// Dates in emails are shown in this IANA time zone (`Asia/Taipei`); default UTC.
    #[serde(default)]
    pub time_zone: crate::i18n::TimeZone,
    /// The form's own texts per locale (`[forms.F.texts.zh-TW]`).
    #[serde(default)]
    pub texts: BTreeMap<crate::i18n::Locale, FormTexts>,
    /// How long content and then keys are kept (`[forms.F.retention]`).
    #[serde(default)]
    pub retention: RetentionConfig,
    /// The effect kinds' own tables (`[forms.F.slack]`), each parsed by its kind.
    #[serde(flatten)]
    pub settings: KindSettings,
}

#[derive(Debug, Clone, Deserialize, Validate)]
#[serde(deny_unknown_fields, default)]
pub struct DuplicateConfig {
    /// Earlier submissions of the same form within this window are compared.
    #[validate(range(min = 1, max = 8760))]
    pub window_hours: u32,
    /// `flag`: pairs are listed for review and effects go ahead; `hold`: the effects of a
    /// submission with a pair scoring at least `hold_score` wait for a decision.
    pub policy: DuplicatePolicy,
    #[validate(range(min = 0.0, max = 1.0))]
    pub hold_score: f64,
    /// Forms of one group are screened against each other (default: the form alone).
    #[validate(length(min = 1, max = 64))]
    pub group: Option<String>,
    /// Email domains whose mailboxes ignore dots in the local part (`a.da@` = `ada@`).
    pub dotless_domains: Vec<String>,
    /// Regions tried, in order, for a national-format phone number that is not a valid
    /// number of the form's `default_region` (a bilingual site: `["US"]` beside `TW`).
    pub other_regions: Vec<String>,
    /// The fields holding the sender's name and company (matched as name plus company).
    pub name_field: String,
    pub company_field: String,
    /// The forms of `group` (this one included), filled in when the configuration is parsed.
    #[serde(skip)]
    pub group_forms: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DuplicatePolicy {
    #[default]
    Flag,
    Hold,
}

impl Default for DuplicateConfig {
    fn default() -> Self {
        Self {
            window_hours: 72,
            policy: DuplicatePolicy::Flag,
            hold_score: 0.8,
            group: None,
            dotless_domains: vec!["gmail.com".into(), "googlemail.com".into()],
            other_regions: Vec::new(),
            name_field: "name".into(),
            company_field: "company".into(),
            group_forms: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    /// Requests allowed per client within `per_seconds` (a token bucket).
    #[validate(range(min = 1, max = 1000000))]
    pub requests: u32,
    #[validate(range(min = 1, max = 86400))]
    pub per_seconds: u32,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        Self { requests: 30, per_seconds: 60 }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("config {origin}: {message}")]
    Parse { origin: String, message: String },
    #[error("config {origin} has {} problem(s): {}", .problems.len(), .problems.join("; "))]
    Invalid { origin: String, problems: Vec<String> },
}

impl Config {
    /// Reads `path` (or the built-in default), applies `env` overrides and checks the result
    /// with `check` (`crate::check::load` checks it with every rule).
    pub fn load(
        path: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
        check: impl Fn(&Config) -> Vec<String>,
    ) -> Result<Config, ConfigError> {
        let (origin, text) = match path {
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .map_err(|source| ConfigError::Read { path: p.display().to_string(), source })?;
                (p.display().to_string(), text)
            }
            None => ("(built-in default)".to_string(), DEFAULT_CONFIG.to_string()),
        };
        let mut config =
            Config::parse(&text).map_err(|message| ConfigError::Parse { origin: origin.clone(), message })?;
        let problems = match config.apply_env(env) {
            Ok(()) => check(&config),
            Err(problem) => vec![problem],
        };
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError::Invalid { origin, problems })
        }
    }

    /// Parses TOML text; the message names each problem's line (every unknown key, with
    /// the valid key it resembles, then the first other problem), `; `-separated.
    pub fn parse(text: &str) -> Result<Config, String> {
        let keys_of = |table: &str| match table.split('.').collect::<Vec<_>>()[..] {
            ["forms", _] => FormConfig::KEYS,
            _ => &[],
        };
        let mut config: Config = file_errors::from_toml(text, keys_of).map_err(|p| p.join("; "))?;
        config.link_duplicate_groups();
        Ok(config)
    }

    /// Tells each form with a `duplicates.group` the forms of its group (for the look-up).
    pub fn link_duplicate_groups(&mut self) {
        let groups: Vec<(String, Option<String>)> =
            self.forms.iter().map(|(name, f)| (name.clone(), f.duplicates.group.clone())).collect();
        for form in self.forms.values_mut() {
            form.duplicates.group_forms = match &form.duplicates.group {
                Some(g) => {
                    groups.iter().filter(|(_, fg)| fg.as_ref() == Some(g)).map(|(n, _)| n.clone()).collect()
                }
                None => Vec::new(),
            };
        }
    }

    /// The built-in default configuration (a demo `contact` form).
    pub fn builtin() -> Result<Config, String> {
        Config::parse(DEFAULT_CONFIG)
    }

    /// Deploy-time settings from the environment override the file; the error names the
    /// setting whose value does not parse.
    pub fn apply_env(&mut self, env: impl Fn(&str) -> Option<String>) -> Result<(), String> {
        if let Some(url) = env("ONCEFORM_DATABASE_URL") {
            self.database.url = parsed::database_url(&url)?;
        }
        if let Some(bind) = env("ONCEFORM_BIND") {
            self.server.bind = parsed::bind(&bind)?;
        }
        if let Some(url) = env("ONCEFORM_SMTP_URL") {
            self.smtp.url = Some(url);
        }
        if let Some(url) = env("ONCEFORM_CRM_URL") {
            self.crm.url = Some(url);
        }
        if let Some(v) = env("ONCEFORM_TRUSTED_PROXIES") {
            let entries: Vec<String> =
                v.split(',').map(str::trim).filter(|e| !e.is_empty()).map(String::from).collect();
            self.server.trusted_proxies = parsed::trusted_proxies(&entries)?;
        }
        if let Some(token) = env("ONCEFORM_METRICS_TOKEN").filter(|t| !t.is_empty()) {
            self.server.metrics_token = Some(MetricsToken::new(token));
        }
        if let Some(v) = env("ONCEFORM_RATE_LIMIT") {
            self.server.rate_limit = !matches!(v.trim(), "off" | "0" | "false" | "no");
        }
        Ok(())
    }

    /// `server.secure_cookies`, or on unless the server is bound to a loopback address.
    pub fn secure_cookies(&self) -> bool {
        self.server.secure_cookies.unwrap_or(!self.server.bind.ip().is_loopback())
    }

    pub fn form(&self, name: &str) -> Option<&FormConfig> {
        self.forms.get(name)
    }
}

impl FormConfig {
    /// The keys of a form's own table (its effect kinds' tables, `[forms.F.slack]`, come
    /// beside them): for "did you mean" on a misspelt one, and the reference's test.
    pub const KEYS: &'static [&'static str] = &[
        "title",
        "intro",
        "fields",
        "effects",
        "allow_keyless_html",
        "allow_keyless_api",
        "honeypot",
        "ignore_fields",
        "max_body_bytes",
        "rate_limit",
        "notify",
        "crm_fields",
        "crm_defaults",
        "duplicates",
        "default_region",
        "operation_ttl_days",
        "confirmation_echo",
        "confirmation_window_minutes",
        "email",
        "allowed_origins",
        "redirect",
        "min_fill_seconds",
        "captcha",
        "locale",
        "locales",
        "time_zone",
        "texts",
        "retention",
    ];

    pub fn field(&self, name: &str) -> Option<&FieldConfig> {
        FormSchema::from(self).field(name)
    }

    pub fn has_email_field(&self) -> bool {
        self.fields.iter().any(|f| f.kind == FieldType::Email)
    }
}

/// The part of a form that says what a valid submission is.
impl<'a> From<&'a FormConfig> for FormSchema<'a> {
    fn from(form: &'a FormConfig) -> FormSchema<'a> {
        FormSchema { fields: &form.fields, honeypot: &form.honeypot, ignore_fields: &form.ignore_fields }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            rate_limit: true,
            http_workers: 0,
            replay_cache: 20_000,
            trusted_proxies: Default::default(),
            body_timeout_ms: 10_000,
            request_head_timeout_ms: 5_000,
            keep_alive_seconds: 5,
            max_connections_per_worker: 10_000,
            secure_cookies: None,
            metrics_token: None,
            metrics_cache_ms: 5_000,
            initial_password_file: "./data/initial-admin-password".into(),
            secret_file: "./data/secret".into(),
            spool_dir: "./data/spool".into(),
            spool_max_bytes: 64 * 1024 * 1024,
        }
    }
}

impl Default for SmtpConfig {
    fn default() -> Self {
        Self { url: None, from: "onceform <noreply@localhost>".into(), mail_dir: "./data/mail".into() }
    }
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            concurrency: 16,
            poll_ms: 500,
            lease_seconds: 60,
            call_timeout_ms: 10_000,
            max_attempts: 8,
            backoff_base_ms: 2_000,
            backoff_max_seconds: 3_600,
            reconcile_after_ms: 30_000,
        }
    }
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self {
            url: DatabaseUrl::Sqlite("./data/onceform.db".into()),
            pool_size: 0,
            acquire_timeout_ms: 3000,
            busy_timeout_ms: 5000,
            group_commit: true,
            prepared_statements: true,
        }
    }
}

/// The form settings' defaults (a form has no `Default`: its title is required).
fn yes() -> bool {
    true
}
fn default_honeypot() -> String {
    "website".into()
}
fn default_ignore_fields() -> Vec<String> {
    ["g-recaptcha-response", "h-captcha-response", "cf-turnstile-response"].map(String::from).to_vec()
}
fn default_max_body_bytes() -> usize {
    64 * 1024
}
fn default_operation_ttl_days() -> u32 {
    395
}
fn default_confirmation_window_minutes() -> u32 {
    60
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_overrides_deploy_time_settings() {
        let mut c = Config::builtin().unwrap();
        let applied = c.apply_env(|name| {
            match name {
                "ONCEFORM_BIND" => Some("0.0.0.0:9000"),
                "ONCEFORM_RATE_LIMIT" => Some("off"),
                "ONCEFORM_TRUSTED_PROXIES" => Some(" 10.0.0.1, 10.1.0.0/16 ,"),
                _ => None,
            }
            .map(String::from)
        });
        assert_eq!(applied, Ok(()));
        assert_eq!(c.server.bind.to_string(), "0.0.0.0:9000");
        assert!(!c.server.rate_limit);
        assert_eq!(
            c.server.trusted_proxies,
            parsed::trusted_proxies(&["10.0.0.1".into(), "10.1.0.0/16".into()]).unwrap()
        );
        assert!(crate::check::problems(&c).is_empty(), "{:?}", crate::check::problems(&c));
    }
}
