//! The security headers every response carries, set in one place.

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};

/// What pages need today: stylesheets and images from onceform itself (the dashboard's
/// chart is inline SVG, which needs nothing more), forms posting back to it, no script
/// from anywhere else, no plugins, no framing, and no `<base>` to re-point relative links.
/// A response that sets its own policy keeps it.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; img-src 'self' data:; object-src 'none'; \
     form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Two years, the usual preload value; only sent when cookies are `Secure` (served over TLS).
const HSTS: &str = "max-age=63072000; includeSubDomains";

/// Adds the headers a response does not set itself.
pub fn apply(headers: &mut HeaderMap, secure: bool) {
    let mut set = |name: &'static str, value: &'static str| {
        let name = HeaderName::from_static(name);
        if !headers.contains_key(&name) {
            headers.insert(name, HeaderValue::from_static(value));
        }
    };
    set("x-content-type-options", "nosniff");
    set("referrer-policy", "no-referrer");
    set("x-frame-options", "DENY");
    set("content-security-policy", CONTENT_SECURITY_POLICY);
    if secure {
        set("strict-transport-security", HSTS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_in_what_is_missing_and_keeps_what_is_set() {
        let mut h = HeaderMap::new();
        h.insert(HeaderName::from_static("content-security-policy"), HeaderValue::from_static("sandbox"));
        apply(&mut h, false);
        assert_eq!(h.get("content-security-policy").unwrap(), "sandbox");
        assert_eq!(h.get("x-frame-options").unwrap(), "DENY");
        assert!(!h.contains_key("strict-transport-security"));
        apply(&mut h, true);
        assert!(h.get("strict-transport-security").unwrap().to_str().unwrap().starts_with("max-age="));
    }
}
