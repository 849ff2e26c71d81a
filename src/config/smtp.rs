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
    /// The owner notification attaches a submission's files while their total size stays
    /// within this many bytes; the others it lists with their admin download path.
    pub attach_max_bytes: u64,
}

/// 10 MiB (about 14 MB in the message once base64-encoded); lower it for a mail server that
/// takes less.
pub const DEFAULT_ATTACH_MAX_BYTES: u64 = 10 * 1024 * 1024;

impl Default for SmtpConfig {
    fn default() -> Self {
        Self {
            url: None,
            from: "onceform <noreply@localhost>".into(),
            mail_dir: "./data/mail".into(),
            attach_max_bytes: DEFAULT_ATTACH_MAX_BYTES,
        }
    }
}
