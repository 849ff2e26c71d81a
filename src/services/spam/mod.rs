//! Spam defence before the accept transaction: the fill-time stamp and the captcha check.
//! A failed check never loses a submission: it is stored as spam with its reason and gets
//! no side-effect records, like a honeypot hit.

pub mod altcha;
mod siteverify;
pub mod stamp;
mod used;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use used::{Claim, UsedAnswers};

use crate::base::secret::Secret;
use crate::config::proxies::client_bucket;
use crate::config::{CaptchaProvider, Form, FormConfig, Secrets};
use crate::domain::{OperationId, RawFields, SpamReason};

/// What a request carries for screening, taken out of its fields before validation.
#[derive(Debug, Clone, Default)]
pub struct Screening {
    /// The fill-time stamp of a form rendered by onceform (`None`: not one of ours).
    pub stamp: Option<String>,
    /// The captcha widget's answer.
    pub captcha: Option<String>,
    pub client_ip: Option<IpAddr>,
    /// Not screened, but carried with the request's other extras to the accept: the
    /// visitor's negotiated locale on a `locale = "auto"` form (stored for their confirmation).
    pub locale: Option<crate::base::i18n::Locale>,
}

impl Screening {
    /// Removes the stamp (HTML posts only) and the captcha answer from `raw`.
    pub fn take(form: &FormConfig, raw: &mut RawFields, html: bool, client_ip: Option<IpAddr>) -> Screening {
        let mut s = Screening { client_ip, ..Screening::default() };
        let captcha_field = form.captcha.as_ref().map(|c| c.field().to_string());
        raw.retain(|(name, value)| {
            if html && name == stamp::FIELD {
                s.stamp = Some(value.clone());
                false
            } else if captcha_field.as_deref() == Some(name.as_str()) {
                s.captcha = Some(value.clone()).filter(|v| !v.trim().is_empty());
                false
            } else {
                true
            }
        });
        s
    }
}

/// Captcha answers remembered at most (each is 32 bytes of key plus an expiry and an
/// operation ID).
const CAPACITY: usize = 100_000;
/// How long a Turnstile or hCaptcha token is remembered once accepted: Turnstile's tokens
/// are valid for 300 s, hCaptcha's for less.
const TOKEN_LIFETIME: Duration = Duration::from_secs(300);

/// The checks and what they remember (used captcha answers); one per server.
pub struct SpamGuard {
    secret: Secret,
    /// The environment at start: the captcha providers' secret keys (`secret_env`).
    secrets: Arc<Secrets>,
    used: UsedAnswers,
    http: reqwest::Client,
}

impl SpamGuard {
    /// Stamps and challenges signed with `secret`; the captcha keys read from `secrets`.
    pub fn new(secret: Secret, secrets: Arc<Secrets>) -> anyhow::Result<SpamGuard> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(SpamGuard { secret, secrets, used: UsedAnswers::new(CAPACITY), http })
    }

    /// Says at start which captcha secrets are missing: those forms' posts would all be held
    /// as unverified.
    pub fn warn_missing_secrets(&self, config: &crate::config::Config) {
        for (name, form) in &config.forms {
            let Some(env) = form.captcha.as_ref().and_then(|c| c.secret_env.as_deref()) else { continue };
            if self.secrets.non_empty(env).is_none() {
                tracing::warn!(form = %name, variable = env, "captcha secret variable is not set");
            }
        }
    }

    pub fn secret(&self) -> &Secret {
        &self.secret
    }

    /// A fresh fill-time stamp for a rendering of `form_name`.
    pub fn stamp(&self, form_name: &str) -> String {
        stamp::issue(&self.secret, form_name, crate::base::clock::unix_seconds())
    }

    /// The reason to store this submission as spam, if any. Runs outside any transaction;
    /// a captcha call is bounded by the form's `captcha.timeout_ms`.
    pub async fn screen(
        &self,
        form: &Form,
        s: &Screening,
        operation_id: Option<&OperationId>,
    ) -> Option<SpamReason> {
        if let (Some(st), true) = (&s.stamp, form.min_fill_seconds > 0) {
            let min = u64::from(form.min_fill_seconds);
            if let Err(reason) =
                stamp::check(&self.secret, form.name(), st, min, crate::base::clock::unix_seconds())
            {
                return Some(reason);
            }
        }
        let captcha = form.captcha.as_ref()?;
        let Some(answer) = s.captcha.as_deref() else { return Some(SpamReason::CaptchaMissing) };
        let op = operation_id.map(|o| o.as_str());
        let (key, keep_for) = match captcha.provider {
            CaptchaProvider::Altcha => {
                match altcha::verify(&self.secret, answer, crate::base::clock::unix_seconds()) {
                    Ok(solved) => (solved.key, solved.keep_for),
                    Err(reason) => return Some(reason),
                }
            }
            CaptchaProvider::Turnstile | CaptchaProvider::Hcaptcha => {
                let key: [u8; 32] = Sha256::digest(answer.trim().as_bytes()).into();
                match self.used.seen(&key, op) {
                    Claim::Same => return None,
                    Claim::Taken => return Some(SpamReason::CaptchaReplayed),
                    Claim::New | Claim::ClientFull | Claim::Full => {}
                }
                let timeout = Duration::from_millis(captcha.timeout_ms);
                let verify = siteverify::verify(&self.http, captcha, &self.secrets, answer, s.client_ip);
                // Refused or unverified: nothing is remembered (a refused answer costs no
                // memory; an unverified one may be checked again).
                if let Some(reason) =
                    tokio::time::timeout(timeout, verify).await.unwrap_or(Some(SpamReason::CaptchaUnverified))
                {
                    return Some(reason);
                }
                (key, TOKEN_LIFETIME)
            }
        };
        match self.used.claim(key, op, s.client_ip.map(client_bucket), keep_for) {
            Claim::New | Claim::Same => None,
            Claim::Taken => Some(SpamReason::CaptchaReplayed),
            // Held for review rather than lost; a client that floods waits for its own answers.
            Claim::ClientFull | Claim::Full => Some(SpamReason::CaptchaUnverified),
        }
    }

    /// How long `client` must wait for a new ALTCHA challenge: `Some` while it holds as many
    /// live answers as one client may.
    pub fn challenge_wait(&self, client: Option<IpAddr>) -> Option<Duration> {
        self.used.client_waits(client.map(client_bucket))
    }
}

/// Lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
