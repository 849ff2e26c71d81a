//! Cloudflare Turnstile and hCaptcha: `POST siteverify` with the secret key, the widget's
//! answer and the client's address; the JSON answer's `success` decides.

use std::net::IpAddr;

use serde::Deserialize;

use crate::config::{CaptchaConfig, Secrets};
use crate::domain::SpamReason;

#[derive(Deserialize)]
struct Answer {
    success: bool,
    #[serde(default, rename = "error-codes")]
    error_codes: Vec<String>,
}

/// `None` when the provider confirms the answer; else why not.
pub async fn verify(
    http: &reqwest::Client,
    config: &CaptchaConfig,
    secrets: &Secrets,
    response: &str,
    client_ip: Option<IpAddr>,
) -> Option<SpamReason> {
    let env = config.secret_env.as_deref().unwrap_or("");
    let Some(secret) = secrets.non_empty(env) else {
        tracing::warn!(variable = env, "captcha secret variable is not set; submission held as unverified");
        return Some(SpamReason::CaptchaUnverified);
    };
    let ip = client_ip.map(|ip| ip.to_string()).unwrap_or_default();
    let mut form = vec![("secret", secret), ("response", response)];
    if !ip.is_empty() {
        form.push(("remoteip", &ip));
    }
    let sent = http
        .post(config.verify_url())
        .timeout(std::time::Duration::from_millis(config.timeout_ms))
        .form(&form)
        .send()
        .await;
    let answer = match sent {
        Ok(r) if r.status().is_success() => r.json::<Answer>().await.ok(),
        Ok(r) => {
            tracing::warn!(status = r.status().as_u16(), "captcha provider refused the check");
            None
        }
        Err(error) => {
            tracing::warn!(error = %error.without_url(), "captcha provider unreachable");
            None
        }
    };
    match answer {
        None => Some(SpamReason::CaptchaUnverified),
        Some(a) if a.success => None,
        Some(a) if a.error_codes.iter().any(|c| c == "internal-error") => Some(SpamReason::CaptchaUnverified),
        Some(a)
            if a.error_codes.iter().any(|c| c == "timeout-or-duplicate" || c == "already-seen-response") =>
        {
            Some(SpamReason::CaptchaReplayed)
        }
        Some(_) => Some(SpamReason::CaptchaInvalid),
    }
}
