//! The submissions list: filters that carry no personal data, and a portable search over the
//! stored content (a LIKE on the lower-cased JSON, confirmed on the values in Rust). The
//! filters as they travel in a query string are `crate::web::admin::filters`.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::SubmissionRow;
use crate::db::schema::{side_effects, submissions};
use crate::db::{DbConnection, MultiBackend};
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
    let fields = crate::domain::stored_fields::shown(fields_json);
    fields.values().any(|v| v.to_lowercase().contains(&term))
}

/// `submissions` narrowed by a `SubmissionFilter`.
fn filtered(f: &SubmissionFilter) -> submissions::BoxedQuery<'_, MultiBackend> {
    let mut q = submissions::table.into_boxed();
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
        q = q.filter(submissions::journey_id.eq(journey.as_str()));
    }
    if let Some(keyless) = f.keyless {
        q = q.filter(submissions::keyless.eq(keyless));
    }
    if let Some(state) = &f.state {
        let with_state = side_effects::table
            .filter(side_effects::state.eq(*state))
            .select(side_effects::submission_id.assume_not_null());
        q = q.filter(submissions::id.eq_any(with_state));
    }
    q
}

/// `BrowseStore::list_submissions`.
pub(super) fn list_submissions(
    c: &mut DbConnection,
    filter: &SubmissionFilter,
    limit: i64,
    offset: i64,
) -> QueryResult<(Vec<SubmissionRow>, i64)> {
    let total = filtered(filter).count().get_result(c)?;
    let rows = filtered(filter)
        .order((submissions::received_at.desc(), submissions::id.desc()))
        .limit(limit)
        .offset(offset)
        .select(SubmissionRow::as_select())
        .load(c)?;
    Ok((rows, total))
}

/// `BrowseStore::submissions_page`: newest first, strictly after `after` (received_at, id)
/// in that order, so a page never repeats nor skips a row of the one before.
pub(super) fn submissions_page(
    c: &mut DbConnection,
    filter: &SubmissionFilter,
    after: Option<(NaiveDateTime, &str)>,
    limit: i64,
) -> QueryResult<Vec<SubmissionRow>> {
    let mut q = filtered(filter);
    if let Some((at, id)) = after {
        // `received_at <= at` says nothing the second condition does not, but it is the one an
        // index on (received_at, id) can start from: without it the scan starts at the newest
        // row and filters out every row before the cursor, so each page costs its depth.
        q = q.filter(submissions::received_at.le(at)).filter(
            submissions::received_at.lt(at).or(submissions::received_at.eq(at).and(submissions::id.lt(id))),
        );
    }
    q.order((submissions::received_at.desc(), submissions::id.desc()))
        .limit(limit)
        .select(SubmissionRow::as_select())
        .load(c)
}

/// `BrowseStore::search_submissions`.
pub(super) fn search_submissions(
    c: &mut DbConnection,
    term: &str,
    limit: i64,
) -> QueryResult<Vec<SubmissionRow>> {
    let candidates: Vec<SubmissionRow> = submissions::table
        .filter(lower(submissions::fields_json).like(like_pattern(term)).escape('\\'))
        .order((submissions::received_at.desc(), submissions::id.desc()))
        .limit(limit.saturating_mul(5))
        .select(SubmissionRow::as_select())
        .load(c)?;
    let limit = usize::try_from(limit).unwrap_or(0);
    Ok(candidates
        .into_iter()
        .filter(|s| content_matches(s.fields_json.as_deref(), term))
        .take(limit)
        .collect())
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
    fn only_values_match() {
        let json = Some(r#"{"email":"ada@example.com","message":"Hello"}"#);
        assert!(content_matches(json, "ADA@"));
        assert!(content_matches(json, "hello"));
        assert!(!content_matches(json, "message"));
        assert!(!content_matches(None, "ada"));
    }
}
