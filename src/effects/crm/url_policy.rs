//! Which CRM URLs onceform calls: `https://`, and `http://` only to loopback unless the
//! operator allows it (`[crm] allow_http = true`). A lead carries personal data and the
//! request the API token; neither should cross a network in clear text by accident.

use std::net::IpAddr;

use crate::config::CrmConfig;

/// Checks `crm.url` and `crm.lookup_url` (when set).
pub fn check_config(crm: &CrmConfig) -> Result<(), String> {
    if let Some(url) = &crm.url {
        check("crm.url", url, crm.allow_http)?;
    }
    if let Some(url) = &crm.lookup_url {
        check("crm.lookup_url", url, crm.allow_http)?;
    }
    Ok(())
}

/// Checks one configured URL; the message names the setting.
pub fn check(setting: &str, url: &str, allow_http: bool) -> Result<(), String> {
    let lower = url.trim().to_ascii_lowercase();
    if lower.starts_with("https://") {
        return Ok(());
    }
    let Some(rest) = lower.strip_prefix("http://") else {
        return Err(format!("{setting}: must start with https:// (or http:// to loopback)"));
    };
    if allow_http || is_loopback(host_of(rest)) {
        return Ok(());
    }
    Err(format!("{setting}: http:// is only allowed to loopback; use https:// or set crm.allow_http = true"))
}

/// The host of `host[:port]/…` (IPv6 literals in brackets), without user info.
fn host_of(rest: &str) -> &str {
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host_port.split(':').next().unwrap_or(""),
    }
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn https_anywhere_http_only_to_loopback_unless_allowed() {
        for ok in [
            "https://crm.example.com/leads",
            "http://127.0.0.1:9000/x",
            "http://[::1]:80/",
            "http://localhost/x",
        ] {
            assert_eq!(check("crm.url", ok, false), Ok(()), "{ok}");
        }
        for bad in [
            "http://crm.example.com/leads",
            "http://127.0.0.1.evil.example/",
            "http://user@10.0.0.1/",
            "ftp://x",
        ] {
            assert!(check("crm.url", bad, false).is_err(), "{bad}");
        }
        assert_eq!(check("crm.url", "http://crm.internal/leads", true), Ok(()));
    }
}
