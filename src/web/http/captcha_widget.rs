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

/// The form page's own policy where the default one does not fit: the provider's script
/// and frame may run (Turnstile, hCaptcha), and the post may be redirected (303) to the
/// form's configured `redirect` (browsers apply `form-action` to that redirect too).
pub fn allow(resp: &mut HttpResponse, form: &FormConfig) {
    let hosts = match form.captcha.as_ref().map(|c| c.provider) {
        Some(CaptchaProvider::Turnstile) => Some("https://challenges.cloudflare.com"),
        Some(CaptchaProvider::Hcaptcha) => Some("https://hcaptcha.com https://*.hcaptcha.com"),
        _ => None,
    };
    let redirect = form.redirect.as_deref().and_then(origin_of);
    if hosts.is_none() && redirect.is_none() {
        return;
    }
    let mut policy = format!(
        "default-src 'self'; img-src 'self' data:; object-src 'none'; form-action 'self'{}; \
         frame-ancestors 'none'; base-uri 'none'",
        redirect.map(|o| format!(" {o}")).unwrap_or_default()
    );
    if let Some(hosts) = hosts {
        policy.push_str(&format!(
            "; script-src 'self' {hosts}; frame-src {hosts}; connect-src 'self' {hosts}; \
             style-src 'self' 'unsafe-inline' {hosts}"
        ));
    }
    if let Ok(v) = HeaderValue::from_str(&policy) {
        resp.headers_mut().insert(CONTENT_SECURITY_POLICY, v);
    }
}

/// `https://host[:port]` of an absolute URL; `None` for anything else.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split(['/', '?', '#']).next()?;
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']');
    (matches!(scheme, "http" | "https") && !host.is_empty() && host.chars().all(plain))
        .then(|| format!("{scheme}://{host}"))
}

#[cfg(test)]
mod tests {
    use super::origin_of;

    #[test]
    fn the_redirect_origin_is_scheme_and_host_only() {
        assert_eq!(
            origin_of("https://www.example.com/thanks?x=1").as_deref(),
            Some("https://www.example.com")
        );
        assert_eq!(origin_of("http://127.0.0.1:8081/t").as_deref(), Some("http://127.0.0.1:8081"));
        assert_eq!(origin_of("https://a.example;script-src *"), None);
        assert_eq!(origin_of("javascript:alert(1)"), None);
    }
}
