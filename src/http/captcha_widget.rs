//! The captcha widget on onceform's own form page: the provider's script (Turnstile,
//! hCaptcha, with the page's Content-Security-Policy widened for it alone) or the
//! self-hosted ALTCHA solver.

use actix_web::http::header::{HeaderValue, CONTENT_SECURITY_POLICY};
use actix_web::HttpResponse;

use crate::config::{CaptchaProvider, FormConfig};

/// What the form template shows for the form's captcha.
pub struct CaptchaView {
    /// `altcha`, `cf-turnstile` or `h-captcha`.
    pub class: &'static str,
    pub site_key: String,
    pub script: &'static str,
    /// The field the answer is posted in.
    pub field: String,
}

pub fn view(form: &FormConfig) -> Option<CaptchaView> {
    let c = form.captcha.as_ref()?;
    let (class, script) = match c.provider {
        CaptchaProvider::Altcha => ("altcha", "/static/altcha.js"),
        CaptchaProvider::Turnstile => {
            ("cf-turnstile", "https://challenges.cloudflare.com/turnstile/v0/api.js")
        }
        CaptchaProvider::Hcaptcha => ("h-captcha", "https://js.hcaptcha.com/1/api.js"),
    };
    Some(CaptchaView {
        class,
        site_key: c.site_key.clone().unwrap_or_default(),
        script,
        field: c.field().into(),
    })
}

/// Lets the provider's script and frame run on this page (Turnstile, hCaptcha only).
pub fn allow(resp: &mut HttpResponse, form: &FormConfig) {
    let hosts = match form.captcha.as_ref().map(|c| c.provider) {
        Some(CaptchaProvider::Turnstile) => "https://challenges.cloudflare.com",
        Some(CaptchaProvider::Hcaptcha) => "https://hcaptcha.com https://*.hcaptcha.com",
        _ => return,
    };
    let policy = format!(
        "default-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; \
         script-src 'self' {hosts}; frame-src {hosts}; connect-src 'self' {hosts}; style-src 'self' 'unsafe-inline' {hosts}"
    );
    if let Ok(v) = HeaderValue::from_str(&policy) {
        resp.headers_mut().insert(CONTENT_SECURITY_POLICY, v);
    }
}
