//! The query parameters of the read API's lists, parsed once: a value that is not what the
//! description says is a 400 `invalid-parameter` naming the parameter.

use chrono::{DateTime, NaiveDateTime};

use crate::domain::states::TextEnum;
use crate::services::read_api::{Cursor, DEFAULT_LIMIT, MAX_LIMIT};
use crate::web::http::problem::{Problem, ProblemKind};

/// The decoded pairs of a query string.
pub struct Params(Vec<(String, String)>);

fn invalid(name: &str, what: &str) -> Problem {
    Problem::new(ProblemKind::InvalidParameter, format!("`{name}`: {what}")).with("parameter", name)
}

impl Params {
    pub fn parse(query: &str) -> Result<Params, Problem> {
        serde_urlencoded::from_str(query)
            .map(Params)
            .map_err(|_| Problem::new(ProblemKind::InvalidParameter, "the query string could not be decoded"))
    }

    /// The first value of `name`, as sent, if given.
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.get(name)
    }

    /// The first value of `name`, if given (`name=` gives an empty one, which no parameter
    /// takes).
    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// A text of 1 to 255 characters.
    pub fn text(&self, name: &str) -> Result<Option<String>, Problem> {
        self.get(name)
            .map(|v| match v.chars().count() {
                1..=255 => Ok(v.to_string()),
                _ => Err(invalid(name, "1 to 255 characters")),
            })
            .transpose()
    }

    /// An RFC 3339 time, as UTC.
    pub fn time(&self, name: &str) -> Result<Option<NaiveDateTime>, Problem> {
        self.get(name)
            .map(|v| {
                DateTime::parse_from_rfc3339(v)
                    .map(|t| t.naive_utc())
                    .map_err(|_| invalid(name, "an RFC 3339 time, e.g. 2026-12-01T00:00:00Z"))
            })
            .transpose()
    }

    /// One of `choices`' text forms.
    pub fn choice<S: TextEnum>(&self, name: &str, choices: &[S]) -> Result<Option<S>, Problem> {
        self.get(name)
            .map(|v| {
                choices.iter().copied().find(|c| c.as_str() == v).ok_or_else(|| {
                    let all: Vec<&str> = choices.iter().map(|c| c.as_str()).collect();
                    invalid(name, &format!("one of {}", all.join(", ")))
                })
            })
            .transpose()
    }

    pub fn cursor(&self) -> Result<Option<Cursor>, Problem> {
        self.get("cursor")
            .map(|v| Cursor::decode(v).ok_or_else(|| invalid("cursor", "not a cursor this API gave")))
            .transpose()
    }

    /// 1 to `MAX_LIMIT`, `DEFAULT_LIMIT` when not given.
    pub fn limit(&self) -> Result<usize, Problem> {
        match self.get("limit") {
            None => Ok(DEFAULT_LIMIT),
            Some(v) => v
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| invalid("limit", &format!("a whole number from 1 to {MAX_LIMIT}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::EffectState;

    #[test]
    fn each_parameter_is_checked() {
        let p =
            Params::parse("limit=2&since=2026-12-01T08:00:00%2B08:00&state=UNKNOWN&form=contact").unwrap();
        assert_eq!(p.limit().unwrap(), 2);
        assert_eq!(p.time("since").unwrap().unwrap().to_string(), "2026-12-01 00:00:00");
        assert_eq!(p.choice("state", &EffectState::ALL).unwrap(), Some(EffectState::Unknown));
        assert_eq!(p.text("form").unwrap().as_deref(), Some("contact"));
        for empty in ["form=", "limit=", "state=", "since=", "cursor="] {
            let p = Params::parse(empty).unwrap();
            let refused = p.text("form").is_err()
                || p.limit().is_err()
                || p.choice("state", &EffectState::ALL).is_err()
                || p.time("since").is_err()
                || p.cursor().is_err();
            assert!(refused, "{empty}");
        }
        assert_eq!(Params::parse("").unwrap().limit().unwrap(), DEFAULT_LIMIT);
        for bad in ["limit=0", "limit=501", "limit=x", "limit=-1"] {
            assert!(Params::parse(bad).unwrap().limit().is_err(), "{bad}");
        }
        assert!(Params::parse("state=unknown").unwrap().choice("state", &EffectState::ALL).is_err());
        assert!(Params::parse("until=yesterday").unwrap().time("until").is_err());
        assert!(Params::parse("cursor=nope").unwrap().cursor().is_err());
    }
}
