//! `Debug` for the settings that hold URLs: a password in a URL never reaches a log line.

use std::fmt;

use super::{CrmConfig, DatabaseConfig, SmtpConfig};

/// `scheme://user:***@host/…`: the password of the user-info part and the values of
/// `password`/`pass`/`secret`/`token` query parameters replaced by `***`.
pub fn redact_url(url: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (url, None),
    };
    let mut out = match head.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = match rest.split_once('/') {
                Some((a, p)) => (a, Some(p)),
                None => (rest, None),
            };
            let authority = match authority.rsplit_once('@') {
                Some((userinfo, host)) => match userinfo.split_once(':') {
                    Some((user, _)) => format!("{user}:***@{host}"),
                    None => format!("{userinfo}@{host}"),
                },
                None => authority.to_string(),
            };
            match path {
                Some(p) => format!("{scheme}://{authority}/{p}"),
                None => format!("{scheme}://{authority}"),
            }
        }
        None => head.to_string(),
    };
    if let Some(q) = query {
        let pairs: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if secret_param(k) => format!("{k}=***"),
                _ => pair.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    out
}

fn secret_param(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["password", "pass", "secret", "token", "sslpassword"].contains(&n.as_str())
}

struct Redacted<'a>(Option<&'a str>);

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(url) => write!(f, "Some({:?})", redact_url(url)),
            None => f.write_str("None"),
        }
    }
}

impl fmt::Debug for DatabaseConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatabaseConfig")
            .field("url", &redact_url(&self.url.to_string()))
            .field("pool_size", &self.pool_size)
            .field("acquire_timeout_ms", &self.acquire_timeout_ms)
            .field("busy_timeout_ms", &self.busy_timeout_ms)
            .field("group_commit", &self.group_commit)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for SmtpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmtpConfig")
            .field("url", &Redacted(self.url.as_deref()))
            .field("from", &self.from)
            .field("mail_dir", &self.mail_dir)
            .field("attach_max_bytes", &self.attach_max_bytes)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for CrmConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CrmConfig")
            .field("adapter", &self.adapter)
            .field("url", &Redacted(self.url.as_deref()))
            .field("token_env", &self.token_env)
            .field("allow_http", &self.allow_http)
            .field("allow_private", &self.allow_private)
            // Each adapter's table prints by its own `Debug` (generic's redacts its lookup URL).
            .field("tables", &self.tables.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn passwords_in_urls_never_reach_debug_output() {
        assert_eq!(
            redact_url("postgres://app:s3cret@db:5432/of?sslmode=require&password=p2"),
            "postgres://app:***@db:5432/of?sslmode=require&password=***"
        );
        assert_eq!(
            redact_url("smtp://mailer:hunter2@mail:587?tls=required"),
            "smtp://mailer:***@mail:587?tls=required"
        );
        assert_eq!(redact_url("https://crm.example.com/api"), "https://crm.example.com/api");
        assert_eq!(redact_url("sqlite://./data/x.db"), "sqlite://./data/x.db");
        let mut c = Config::builtin().unwrap();
        c.database.url = super::super::DatabaseUrl::parse("postgres://app:s3cret@db/of").unwrap();
        c.smtp.url = Some("smtps://u:hunter2@mail".into());
        c.crm.url = Some("https://u:tok3n@crm.example.com/leads".into());
        let printed = format!("{c:?}");
        for secret in ["s3cret", "hunter2", "tok3n"] {
            assert!(!printed.contains(secret), "{secret} printed in {printed}");
        }
        assert!(printed.contains("postgres://app:***@db/of"));
    }
}
