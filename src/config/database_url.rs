//! `database.url` / `ONCEFORM_DATABASE_URL`: `sqlite://PATH`, a plain path, or `postgres://…`.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    Sqlite(PathBuf),
    Postgres(String),
}

impl DatabaseUrl {
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("empty database URL".into());
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(DatabaseUrl::Postgres(with_connect_timeout(s)));
        }
        if let Some(path) = s.strip_prefix("sqlite://").or_else(|| s.strip_prefix("sqlite:")) {
            return match path {
                "" => Err("sqlite:// needs a file path".into()),
                p => Ok(DatabaseUrl::Sqlite(PathBuf::from(p))),
            };
        }
        match s.split_once("://") {
            Some((scheme, _)) => Err(format!(
                "unsupported database scheme `{scheme}` (use sqlite://PATH, a file path, or postgres://…)"
            )),
            None => Ok(DatabaseUrl::Sqlite(PathBuf::from(s))),
        }
    }

    pub fn backend(&self) -> &'static str {
        match self {
            DatabaseUrl::Sqlite(_) => "sqlite",
            DatabaseUrl::Postgres(_) => "postgres",
        }
    }
}

impl std::str::FromStr for DatabaseUrl {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        DatabaseUrl::parse(s)
    }
}

/// The URL again (`sqlite://PATH`), e.g. for a child process; it may hold a password.
impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatabaseUrl::Sqlite(path) => write!(f, "sqlite://{}", path.display()),
            DatabaseUrl::Postgres(url) => f.write_str(url),
        }
    }
}

/// libpq waits forever for an unreachable host by default; give up after 5 s instead.
fn with_connect_timeout(url: &str) -> String {
    if url.contains("connect_timeout=") {
        url.to_string()
    } else if url.contains('?') {
        format!("{url}&connect_timeout=5")
    } else {
        format!("{url}?connect_timeout=5")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_backend_from_the_scheme() {
        assert_eq!(DatabaseUrl::parse("sqlite://./data/x.db"), Ok(DatabaseUrl::Sqlite("./data/x.db".into())));
        assert_eq!(DatabaseUrl::parse("sqlite:///tmp/x.db"), Ok(DatabaseUrl::Sqlite("/tmp/x.db".into())));
        assert_eq!(DatabaseUrl::parse("data/x.db"), Ok(DatabaseUrl::Sqlite("data/x.db".into())));
        assert_eq!(
            DatabaseUrl::parse("postgres://u@h/db"),
            Ok(DatabaseUrl::Postgres("postgres://u@h/db?connect_timeout=5".into()))
        );
        assert!(DatabaseUrl::parse("mysql://h/db").unwrap_err().contains("mysql"));
    }
}
