//! `[smtp]`: mail delivery.

use serde::Deserialize;

/// Mail delivery: SMTP when `url` is set, else `.eml` files under `mail_dir`.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SmtpConfig {
    /// `smtp://[user:pass@]host[:port]` (`?tls=required` for STARTTLS) or `smtps://…`.
    pub url: Option<String>,
    pub from: String,
    pub mail_dir: String,
}

impl Default for SmtpConfig {
    fn default() -> Self {
        Self { url: None, from: "onceform <noreply@localhost>".into(), mail_dir: "./data/mail".into() }
    }
}
