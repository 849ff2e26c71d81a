//! The submissions list: filters that carry no personal data, and a portable search over the
//! stored content (a LIKE on the lower-cased JSON, confirmed on the values in Rust).

use std::collections::BTreeMap;

use chrono::{Duration, NaiveDate, NaiveDateTime, NaiveTime};
use serde::Deserialize;

use crate::domain::EffectState;

/// What the list is narrowed to; `None` means any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubmissionFilter {
    pub form: Option<String>,
    /// Received at or after.
    pub from: Option<NaiveDateTime>,
    /// Received before.
    pub until: Option<NaiveDateTime>,
    /// Has an effect record in this state.
    pub state: Option<EffectState>,
    pub spam: Option<bool>,
    pub keyless: Option<bool>,
    /// All inquiries of one journey (an opaque ID, no personal data).
    pub journey: Option<String>,
}

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

#[diesel::declare_sql_function]
extern "SQL" {
    fn lower(
        x: diesel::sql_types::Nullable<diesel::sql_types::Text>,
    ) -> diesel::sql_types::Nullable<diesel::sql_types::Text>;
}

/// Makes SQLite's `lower()` fold every letter, as PostgreSQL's does, not only A–Z: the
/// search's SQL pre-filter must not drop "Ångström" for "ångström". Called for every
/// SQLite connection.
pub fn register_unicode_lower(conn: &mut diesel::SqliteConnection) -> diesel::QueryResult<()> {
    lower_utils::register_impl(conn, |text: Option<String>| text.map(|t| t.to_lowercase()))
}

/// A LIKE pattern (escape character `\`) finding `term` inside the stored JSON text: the
/// term lower-cased and encoded as a JSON string would be, with `%`, `_` and `\` escaped.
pub fn like_pattern(term: &str) -> String {
    let json = serde_json::to_string(&term.to_lowercase()).unwrap_or_default();
    let inner = json.get(1..json.len().saturating_sub(1)).unwrap_or_default();
    let mut pattern = String::with_capacity(inner.len() + 2);
    pattern.push('%');
    for ch in inner.chars() {
        if matches!(ch, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(ch);
    }
    pattern.push('%');
    pattern
}

/// True when one of the stored values (not a field name) contains `term`, ignoring case.
pub fn content_matches(fields_json: Option<&str>, term: &str) -> bool {
    let term = term.to_lowercase();
    let fields: BTreeMap<String, String> =
        fields_json.and_then(|j| serde_json::from_str(j).ok()).unwrap_or_default();
    fields.values().any(|v| v.to_lowercase().contains(&term))
}

/// `submissions` narrowed by a `SubmissionFilter`, boxed for the backend at hand.
macro_rules! filtered {
    ($filter:expr) => {{
        let f: &SubmissionFilter = $filter;
        // Inbound webhook events' anchor rows (channel `hook`) are listed under Inbound.
        let mut q = submissions::table.filter(submissions::channel.ne(Channel::Hook)).into_boxed();
        if let Some(form) = &f.form {
            q = q.filter(submissions::form.eq(form.as_str()));
        }
        if let Some(t) = f.from {
            q = q.filter(submissions::received_at.ge(t));
        }
        if let Some(t) = f.until {
            q = q.filter(submissions::received_at.lt(t));
        }
        if let Some(spam) = f.spam {
            q = q.filter(submissions::spam.eq(spam));
        }
        if let Some(journey) = &f.journey {
            q = q.filter(submissions::journey_id.eq(journey.clone()));
        }
        if let Some(keyless) = f.keyless {
            q = q.filter(submissions::keyless.eq(keyless));
        }
        if let Some(state) = &f.state {
            let with_state = side_effects::table
                .filter(side_effects::state.eq(*state))
                .select(side_effects::submission_id);
            q = q.filter(submissions::id.eq_any(with_state));
        }
        q
    }};
}

/// The list and search methods of `BrowseStore`, expanded inside its impl for each backend.
macro_rules! list_queries {
    () => {
        fn list_submissions(
            &mut self,
            filter: &SubmissionFilter,
            limit: i64,
            offset: i64,
        ) -> QueryResult<(Vec<SubmissionRow>, i64)> {
            let total = filtered!(filter).count().get_result(self)?;
            let rows = filtered!(filter)
                .order((submissions::received_at.desc(), submissions::id.desc()))
                .limit(limit)
                .offset(offset)
                .select(submission_cols!())
                .load(self)?;
            Ok((rows, total))
        }

        fn search_submissions(&mut self, term: &str, limit: i64) -> QueryResult<Vec<SubmissionRow>> {
            let candidates: Vec<SubmissionRow> = submissions::table
                .filter(list::lower(submissions::fields_json).like(like_pattern(term)).escape('\\'))
                .order((submissions::received_at.desc(), submissions::id.desc()))
                .limit(limit.saturating_mul(5))
                .select(submission_cols!())
                .load(self)?;
            let limit = usize::try_from(limit).unwrap_or(0);
            Ok(candidates
                .into_iter()
                .filter(|s| list::content_matches(s.fields_json.as_deref(), term))
                .take(limit)
                .collect())
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_escape_wildcards_and_follow_the_json_encoding() {
        assert_eq!(like_pattern("Ada"), "%ada%");
        assert_eq!(like_pattern("50%_off"), "%50\\%\\_off%");
        assert_eq!(like_pattern(r#"say "hi""#), r#"%say \\"hi\\"%"#);
        assert_eq!(like_pattern(r"a\b"), r"%a\\\\b%");
    }

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

    #[test]
    fn only_values_match() {
        let json = Some(r#"{"email":"ada@example.com","message":"Hello"}"#);
        assert!(content_matches(json, "ADA@"));
        assert!(content_matches(json, "hello"));
        assert!(!content_matches(json, "message"));
        assert!(!content_matches(None, "ada"));
    }
}
