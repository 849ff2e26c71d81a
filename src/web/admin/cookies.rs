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
