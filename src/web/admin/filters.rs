//! The submissions list's filters as they travel in a query string, read into the
//! database's `SubmissionFilter`; unreadable values mean any.

use chrono::{Duration, NaiveDate, NaiveTime};
use serde::Deserialize;

use crate::domain::EffectState;
use crate::services::browse::SubmissionFilter;

/// The filters as they travel in a query string: `form`, `from`/`to` (YYYY-MM-DD, both
/// inclusive), `state`, `spam` and `keyless` (`yes`/`no`/`any`). Unreadable values mean any.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct FilterParams {
    pub form: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub state: Option<String>,
    pub spam: Option<String>,
    pub keyless: Option<String>,
    pub journey: Option<String>,
}

fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

fn day(v: &Option<String>) -> Option<NaiveDate> {
    given(v).and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
}

fn yes_no(v: &Option<String>) -> Option<bool> {
    match given(v) {
        Some("yes") => Some(true),
        Some("no") => Some(false),
        _ => None,
    }
}

impl FilterParams {
    pub fn filter(&self) -> SubmissionFilter {
        SubmissionFilter {
            form: given(&self.form).map(String::from),
            from: day(&self.from).map(|d| d.and_time(NaiveTime::MIN)),
            until: day(&self.to).map(|d| d.and_time(NaiveTime::MIN) + Duration::days(1)),
            state: given(&self.state).and_then(EffectState::parse),
            spam: yes_no(&self.spam),
            keyless: yes_no(&self.keyless),
            journey: given(&self.journey).and_then(|j| crate::domain::parse_journey_id(j).ok().flatten()),
        }
    }

    /// The readable filters, normalised: what the form shows and links carry.
    pub fn normalised(&self) -> Vec<(&'static str, String)> {
        let f = self.filter();
        let yn = |v: Option<bool>| v.map(|b| if b { "yes" } else { "no" }.to_string());
        [
            ("form", f.form),
            ("from", day(&self.from).map(|d| d.to_string())),
            ("to", day(&self.to).map(|d| d.to_string())),
            ("state", f.state.map(|s| s.as_str().to_string())),
            ("spam", yn(f.spam)),
            ("keyless", yn(f.keyless)),
            ("journey", f.journey),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }

    /// `normalised()` as a query string (empty without filters).
    pub fn query_string(&self) -> String {
        serde_urlencoded::to_string(self.normalised()).unwrap_or_default()
    }

    pub fn get(&self, name: &str) -> Option<String> {
        self.normalised().into_iter().find(|(k, _)| *k == name).map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_read_from_the_query_string() {
        let p = FilterParams {
            form: Some("contact".into()),
            from: Some("2024-05-01".into()),
            to: Some("2024-05-02".into()),
            state: Some("bogus".into()),
            spam: Some("yes".into()),
            keyless: Some("any".into()),
            journey: None,
        };
        let f = p.filter();
        assert_eq!(f.until.map(|t| t.to_string()).as_deref(), Some("2024-05-03 00:00:00"));
        assert_eq!((f.state, f.spam, f.keyless), (None, Some(true), None));
        assert_eq!(p.query_string(), "form=contact&from=2024-05-01&to=2024-05-02&spam=yes");
    }
}
