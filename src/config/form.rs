//! `[forms.NAME]`: one form, its own settings and its per-client rate limit (the larger
//! sub-tables have files of their own: duplicates, email, retention, locale, spam).

use std::collections::BTreeMap;

use serde::Deserialize;
use validator::Validate;

use super::{
    spam, CaptchaConfig, Definition, DuplicateConfig, EmailTexts, FormTexts, KindSettings, LocaleChoice,
    RetentionConfig,
};
use crate::domain::{EffectKind, FieldConfig, FieldType, FileRef, FormSchema, Undeclared};

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
    /// What a field the form does not declare gets: `reject` (422) or `keep` (stored as text).
    #[serde(default)]
    pub undeclared_fields: Undeclared,
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
    /// `[forms.F.crm]`: what a duplicate decision does in the CRM.
    #[serde(default)]
    pub crm: super::FormCrmConfig,
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
    pub locales: Vec<crate::base::i18n::Locale>,
    /// Dates in emails are shown in this IANA time zone (`Asia/Taipei`); default UTC.
    #[serde(default)]
    pub time_zone: crate::base::i18n::TimeZone,
    /// The form's own texts per locale (`[forms.F.texts.zh-TW]`).
    #[serde(default)]
    pub texts: BTreeMap<crate::base::i18n::Locale, FormTexts>,
    /// How long content and then keys are kept (`[forms.F.retention]`).
    #[serde(default)]
    pub retention: RetentionConfig,
    /// The attached files of one submission together, in bytes, at most (checked while
    /// they stream in).
    #[serde(default = "default_max_files_bytes")]
    #[validate(range(min = 1024, max = 1073741824))]
    pub max_files_bytes: u64,
    /// Whether attached files are scanned for malware (`clamd`: by `ONCEFORM_CLAMD`).
    #[serde(default)]
    pub scan: ScanMode,
    /// What a submission gets while clamd cannot be reached: `hold` (its effects wait for a
    /// scan) or `deliver` (delivered, marked unscanned). A file clamd was reached for but
    /// could not scan is held either way.
    #[serde(default)]
    pub when_scanner_down: ScannerDown,
    /// Who gets a submission, by what it says (`[[forms.F.routes]]`): the first route whose
    /// `when` holds replaces `effects` and `notify`.
    #[serde(default)]
    pub routes: Vec<super::RouteConfig>,
    /// The effect kinds' own tables (`[forms.F.slack]`), each parsed by its kind.
    #[serde(flatten)]
    pub settings: KindSettings,
    /// The form's table as read, and its version (set by `Config::parse`).
    #[serde(skip)]
    pub definition: Definition,
    /// Where the form was defined: the configuration file, or the admin.
    #[serde(skip)]
    pub origin: super::FormOrigin,
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
        "undeclared_fields",
        "max_body_bytes",
        "rate_limit",
        "notify",
        "crm_fields",
        "crm_defaults",
        "crm",
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
        "max_files_bytes",
        "scan",
        "when_scanner_down",
        "routes",
    ];

    /// The settings a stored definition (`Definition::text`) describes: a form as it was
    /// when one of its versions was in force.
    pub fn from_definition(text: &str) -> Result<FormConfig, String> {
        let mut form: FormConfig = serde_json::from_str(text).map_err(|e| e.to_string())?;
        form.definition =
            Definition { text: text.into(), version: super::definition::version_of(text).into() };
        Ok(form)
    }

    pub fn field(&self, name: &str) -> Option<&FieldConfig> {
        FormSchema::from(self).field(name)
    }

    /// Whether the form, or one of its routes, lists the effect kind `kind`: a worker
    /// delivering it needs the form's settings even when only a route sends to it.
    pub fn lists(&self, kind: &EffectKind) -> bool {
        self.effects.contains(kind)
            || self.routes.iter().any(|r| r.effects.as_ref().is_some_and(|e| e.contains(kind)))
    }

    pub fn has_file_field(&self) -> bool {
        self.fields.iter().any(FieldConfig::is_file)
    }

    /// The files the form's file fields name, each with its field, in the form's order
    /// (`value`: a field's stored value).
    pub fn files<'v>(&self, value: impl Fn(&str) -> Option<&'v str>) -> Vec<(&FieldConfig, FileRef)> {
        self.fields
            .iter()
            .filter(|f| f.is_file())
            .flat_map(|f| {
                value(&f.name).map(FileRef::stored_in).unwrap_or_default().into_iter().map(move |r| (f, r))
            })
            .collect()
    }

    pub fn has_email_field(&self) -> bool {
        self.fields.iter().any(|f| f.kind == FieldType::Email)
    }
}

/// The part of a form that says what a valid submission is.
impl<'a> From<&'a FormConfig> for FormSchema<'a> {
    fn from(form: &'a FormConfig) -> FormSchema<'a> {
        FormSchema {
            fields: &form.fields,
            honeypot: &form.honeypot,
            ignore_fields: &form.ignore_fields,
            undeclared: form.undeclared_fields,
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

/// `scan`: whether a form's attached files are scanned for malware.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScanMode {
    #[default]
    Off,
    Clamd,
}

/// `when_scanner_down`: what a submission with files gets while clamd cannot be reached (not
/// when clamd answers that it could not scan a file: that file's submission is held).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScannerDown {
    /// Stored with its effects held until a scan releases them (or finds malware).
    #[default]
    Hold,
    /// Delivered as usual, marked unscanned.
    Deliver,
}

fn default_max_files_bytes() -> u64 {
    25 * 1024 * 1024
}
