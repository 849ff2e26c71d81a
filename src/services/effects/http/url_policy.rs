//! Which URLs onceform calls, and how values go into them. A URL is read by the `url` crate,
//! the parser the HTTP client (reqwest) itself uses, so the host checked here is the host the
//! request goes to: `https://`, and `http://` only to loopback unless the operator allows it
//! (`[crm] allow_http = true`, a handler's `allow_http = true`). A lead or an event carries
//! personal data and the request the API token; neither should cross a network in clear text
//! by accident. The CRM adapters' URLs, Slack's and the outbound webhooks' URLs and the
//! inbound `forward` handlers' URLs all go through `check`. Which addresses they may reach
//! is `reach`'s rule.
//!
//! A value put into a URL (an external reference, a handler key) goes through
//! `encode_segment`: everything but RFC 3986 unreserved characters is percent-encoded, so it
//! stays one path segment (or one query value) and cannot add segments, a query or a fragment.

use std::net::IpAddr;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use url::{Host, Url};

/// Everything but `A–Z a–z 0–9 - . _ ~` is encoded.
const NOT_UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// One path segment or query value. A segment of dots only (`.`, `..`) would still be read as
/// a step up the path, encoded or not: it is `None`, and the caller makes no request.
pub fn encode_segment(s: &str) -> Option<String> {
    if s.is_empty() || s.bytes().all(|b| b == b'.') {
        return None;
    }
    Some(utf8_percent_encode(s, NOT_UNRESERVED).to_string())
}

/// `template` with `placeholder` replaced by the encoded `value` (`None` as `encode_segment`).
pub fn fill(template: &str, placeholder: &str, value: &str) -> Option<String> {
    Some(template.replace(placeholder, &encode_segment(value)?))
}

/// Checks one configured URL; the message names the setting.
pub fn check(setting: &str, url: &str, allow_http: bool) -> Result<(), String> {
    let parsed =
        Url::parse(url.trim()).map_err(|e| format!("{setting}: not a URL the HTTP client can use ({e})"))?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if allow_http || is_loopback(parsed.host()) => Ok(()),
        "http" => Err(format!(
            "{setting}: http:// is only allowed to loopback (this URL goes to {}); use https:// or set allow_http = true",
            parsed.host_str().unwrap_or("no host")
        )),
        _ => Err(format!("{setting}: must start with https:// (or http:// to loopback)")),
    }
}

/// A URL with a placeholder: checked as `check` does, and the placeholder must sit where a
/// value cannot change where the request goes (the path or the query, never the authority).
pub fn check_template(
    setting: &str,
    template: &str,
    placeholder: &str,
    allow_http: bool,
) -> Result<(), String> {
    let with = |v: &str| template.trim().replace(placeholder, v);
    check(setting, &with("a"), allow_http)?;
    let origin = |v: &str| Url::parse(&with(v)).map(|u| u.origin());
    match (origin("a"), origin("b")) {
        (Ok(a), Ok(b)) if a == b => Ok(()),
        _ => Err(format!("{setting}: {placeholder} may stand in the path or query only")),
    }
}

fn is_loopback(host: Option<Host<&str>>) -> bool {
    match host {
        Some(Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{check, check_template, encode_segment, fill};

    #[test]
    fn https_anywhere_http_only_to_loopback_unless_allowed() {
        for ok in [
            "https://crm.example.com/leads",
            "http://127.0.0.1:9000/x",
            "http://[::1]:80/",
            "http://localhost/x",
            "HTTP://LOCALHOST/x",
        ] {
            assert_eq!(check("crm.url", ok, false), Ok(()), "{ok}");
        }
        for bad in [
            "http://crm.example.com/leads",
            "http://127.0.0.1.evil.example/",
            "http://user@10.0.0.1/",
            "ftp://x",
            "not a url",
        ] {
            assert!(check("crm.url", bad, false).is_err(), "{bad}");
        }
        assert_eq!(check("crm.url", "http://crm.internal/leads", true), Ok(()));
    }

    /// Issue 21: the policy read `127.0.0.1` after the last `@`; the client reads `\` as `/`
    /// and sent the lead to `crm.evil.example`.
    #[test]
    fn a_backslash_before_userinfo_cannot_pass_a_remote_host_off_as_loopback() {
        for bad in [
            r"http://crm.evil.example\@127.0.0.1/leads",
            r"http://crm.evil.example\\@localhost/leads",
            "http://crm.evil.example#@127.0.0.1/",
            "http://crm.evil.example?@127.0.0.1/",
            "http://0x7f000001.evil.example/",
        ] {
            let err = check("crm.url", bad, false).expect_err(bad);
            assert!(err.contains("crm.url"), "{err}");
        }
        // What the client reads as the host is loopback, whatever the userinfo says.
        assert_eq!(check("crm.url", "http://evil.example@127.0.0.1/leads", false), Ok(()));
        assert_eq!(
            check("crm.url", "http://0x7f000001/leads", false),
            Ok(()),
            "127.0.0.1, as the client reads it"
        );
    }

    #[test]
    fn a_placeholder_may_not_choose_the_host() {
        let ok = "https://crm.example.com/leads/{external_ref}?x={external_ref}";
        assert_eq!(check_template("crm.lookup_url", ok, "{external_ref}", false), Ok(()));
        for bad in ["https://{external_ref}.example.com/", "https://crm.example.com:{external_ref}/"] {
            assert!(check_template("crm.lookup_url", bad, "{external_ref}", false).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_value_stays_one_segment() {
        assert_eq!(encode_segment("a-Z_0.~:/ é").as_deref(), Some("a-Z_0.~%3A%2F%20%C3%A9"));
        assert_eq!(
            fill("http://h/leads/{r}", "{r}", "x/../../../admin/delete-all?confirm=yes#").as_deref(),
            Some("http://h/leads/x%2F..%2F..%2F..%2Fadmin%2Fdelete-all%3Fconfirm%3Dyes%23")
        );
        for dots in ["", ".", "..", "..."] {
            assert_eq!(encode_segment(dots), None, "{dots:?}");
        }
    }
}
