//! Per-form settings for static sites and spam defence: allowed origins, redirect, fill
//! time, captcha.

use serde::Deserialize;

/// `[forms.F.captcha]`: a server-side check before any side effect is created.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptchaConfig {
    pub provider: CaptchaProvider,
    /// turnstile / hcaptcha: the environment variable holding the secret key (never logged).
    #[serde(default)]
    pub secret_env: Option<String>,
    /// turnstile / hcaptcha: the public site key, shown to the widget.
    #[serde(default)]
    pub site_key: Option<String>,
    /// turnstile / hcaptcha: the `siteverify` endpoint (default: the provider's).
    #[serde(default)]
    pub verify_url: Option<String>,
    /// The field that carries the widget's answer (default: the provider's own name).
    #[serde(default)]
    pub field: Option<String>,
    /// The deadline for one verification call; past it the submission is stored unverified.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// altcha: the largest number a challenge may hide (the work a client does on average
    /// is half of it).
    #[serde(default = "default_max_number")]
    pub max_number: u64,
    /// altcha: how long a challenge may be solved and used.
    #[serde(default = "default_expires_seconds")]
    pub expires_seconds: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaptchaProvider {
    Turnstile,
    Hcaptcha,
    Altcha,
}

impl CaptchaConfig {
    /// The form field holding the widget's answer.
    pub fn field(&self) -> &str {
        self.field.as_deref().unwrap_or(match self.provider {
            CaptchaProvider::Turnstile => "cf-turnstile-response",
            CaptchaProvider::Hcaptcha => "h-captcha-response",
            CaptchaProvider::Altcha => "altcha",
        })
    }

    /// The `siteverify` endpoint (turnstile / hcaptcha).
    pub fn verify_url(&self) -> &str {
        self.verify_url.as_deref().unwrap_or(match self.provider {
            CaptchaProvider::Turnstile => "https://challenges.cloudflare.com/turnstile/v0/siteverify",
            CaptchaProvider::Hcaptcha => "https://api.hcaptcha.com/siteverify",
            CaptchaProvider::Altcha => "",
        })
    }
}

/// Is `s` an origin as browsers send it: `scheme://host[:port]`, nothing after?
pub fn is_origin(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once("://") else { return false };
    matches!(scheme, "http" | "https")
        && !rest.is_empty()
        && !rest.contains(['/', '?', '#', '@', ' '])
        && rest == rest.to_ascii_lowercase()
}

/// Problems in a form's static-site and spam settings (`at` is `forms.NAME`).
pub(super) fn form_problems(out: &mut Vec<String>, at: &str, form: &super::FormConfig) {
    for origin in &form.allowed_origins {
        if !is_origin(origin) {
            out.push(format!(
                "{at}.allowed_origins: `{origin}` is not an origin like https://www.example.com \
                 (lower case, no path, no trailing slash)"
            ));
        }
    }
    if let Some(r) = &form.redirect {
        if !(r.starts_with("https://") || r.starts_with("http://")) || r.contains(char::is_whitespace) {
            out.push(format!("{at}.redirect: `{r}` is not an absolute http(s) URL"));
        }
    }
    let Some(c) = &form.captcha else { return };
    if !(100..=60_000).contains(&c.timeout_ms) {
        out.push(format!("{at}.captcha.timeout_ms: out of range (min 100, max 60000)"));
    }
    match c.provider {
        CaptchaProvider::Turnstile | CaptchaProvider::Hcaptcha if c.secret_env.is_none() => {
            out.push(format!("{at}.captcha.secret_env: name the variable that holds the secret key"))
        }
        CaptchaProvider::Altcha if !(1_000..=10_000_000).contains(&c.max_number) => {
            out.push(format!("{at}.captcha.max_number: out of range (min 1000, max 10000000)"))
        }
        CaptchaProvider::Altcha if !(10..=86_400).contains(&c.expires_seconds) => {
            out.push(format!("{at}.captcha.expires_seconds: out of range (min 10, max 86400)"))
        }
        _ => {}
    }
    if form.field(c.field()).is_some() {
        out.push(format!("{at}.captcha.field: `{}` is also a field of the form", c.field()));
    }
}

pub(super) fn default_min_fill_seconds() -> u32 {
    3
}
fn default_timeout_ms() -> u64 {
    5_000
}
fn default_max_number() -> u64 {
    100_000
}
fn default_expires_seconds() -> u64 {
    600
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_bad_settings() {
        let c = super::super::Config::parse(
            r#"
            [forms.contact]
            title = "x"
            allowed_origins = ["https://ok.example", "https://bad.example/"]
            redirect = "/thanks"
            captcha = { provider = "turnstile" }
            [[forms.contact.fields]]
            name = "email"
            "#,
        )
        .unwrap();
        let p = super::super::problems(&c).join("\n");
        for needle in ["`https://bad.example/` is not an origin", "redirect: `/thanks`", "captcha.secret_env"]
        {
            assert!(p.contains(needle), "missing {needle:?} in:\n{p}");
        }
        assert!(!p.contains("`https://ok.example`"), "{p}");
    }

    #[test]
    fn origins_are_scheme_host_port_only() {
        assert!(is_origin("https://www.example.com"));
        assert!(is_origin("http://127.0.0.1:8081"));
        for bad in ["https://www.example.com/", "www.example.com", "ftp://x", "https://A.com", "https://"] {
            assert!(!is_origin(bad), "{bad}");
        }
    }
}
