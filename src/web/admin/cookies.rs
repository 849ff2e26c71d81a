//! The admin's cookies: `Secure` and `__Host-`-prefixed when `server.secure_cookies` says
//! so (configuration decides, never a forwarded header a client could send).

use actix_web::cookie::{Cookie, SameSite};

use crate::config::Config;

/// Session and login-form cookie names for this configuration.
#[derive(Debug, Clone, Copy)]
pub struct CookiePolicy {
    pub secure: bool,
}

impl CookiePolicy {
    pub fn of(config: &Config) -> CookiePolicy {
        CookiePolicy { secure: config.secure_cookies() }
    }

    pub fn session_name(self) -> &'static str {
        if self.secure {
            "__Host-onceform_session"
        } else {
            "onceform_session"
        }
    }

    pub fn login_csrf_name(self) -> &'static str {
        if self.secure {
            "__Host-onceform_login_csrf"
        } else {
            "onceform_login_csrf"
        }
    }

    /// The OIDC sign-in attempt's cookie (ties the provider's return to this browser).
    pub fn oidc_name(self) -> &'static str {
        if self.secure {
            "__Host-onceform_oidc"
        } else {
            "onceform_oidc"
        }
    }

    /// The OIDC attempt's cookie: as `build`, but SameSite=Lax (the provider's redirect back
    /// is a top-level navigation from another site, which a Strict cookie would not join) and
    /// gone after `max_age_seconds`.
    pub fn oidc_attempt(self, value: String, max_age_seconds: i64) -> Cookie<'static> {
        let mut cookie = self.build(self.oidc_name(), value);
        cookie.set_same_site(SameSite::Lax);
        cookie.set_max_age(actix_web::cookie::time::Duration::seconds(max_age_seconds));
        cookie
    }

    /// HttpOnly, SameSite=Strict; `Secure` with path `/` (what `__Host-` requires) or, on
    /// plain HTTP, scoped to `/admin`.
    pub fn build(self, name: &'static str, value: String) -> Cookie<'static> {
        Cookie::build(name, value)
            .path(if self.secure { "/" } else { "/admin" })
            .http_only(true)
            .same_site(SameSite::Strict)
            .secure(self.secure)
            .finish()
    }

    /// A cookie that removes `name`.
    pub fn removal(self, name: &'static str) -> Cookie<'static> {
        let mut gone = self.build(name, String::new());
        gone.make_removal();
        gone
    }
}
