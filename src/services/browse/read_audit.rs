//! Audit rows for reads that take data out of the admin: CSV exports (with their filters
//! and row count) and content searches (with the term as a digest, since a search term is
//! often a person's email or name, and the row count).

use crate::db::admin::accounts::AccountStore;
use crate::db::Store;
use crate::domain::digest;
use crate::services::audit::{self, Actor};

/// Records `actor`'s CSV export of `csv` selected by `filters` (a query string without personal data).
pub fn export<C: Store + AccountStore>(
    c: &mut C,
    actor: &Actor,
    filters: &str,
    csv: &str,
) -> diesel::QueryResult<()> {
    let filters = if filters.is_empty() { "none" } else { filters };
    let note = format!("filters: {filters}; rows: {}", csv_records(csv).saturating_sub(1));
    c.write_tx(|c| audit::record(c, actor, "submissions.export", ("submissions", "csv"), Some(&note)))
}

/// Records a content search for `term` that found `rows` submissions.
pub fn search<C: Store + AccountStore>(
    c: &mut C,
    actor: &Actor,
    term: &str,
    rows: usize,
) -> diesel::QueryResult<()> {
    let term_digest: String = digest(&term.to_lowercase()).chars().take(16).collect();
    let note = format!("term digest: {term_digest} ({} characters); rows: {rows}", term.chars().count());
    c.write_tx(|c| audit::record(c, actor, "submissions.search", ("submissions", "search"), Some(&note)))
}

/// Records (CRLF-terminated lines outside quotes) in an RFC 4180 document.
fn csv_records(csv: &str) -> usize {
    let mut quoted = false;
    let mut records = 0;
    let mut prev = '\0';
    for ch in csv.chars() {
        match ch {
            '"' => quoted = !quoted,
            '\n' if prev == '\r' && !quoted => records += 1,
            _ => {}
        }
        prev = ch;
    }
    records
}

#[cfg(test)]
mod tests {
    #[test]
    fn records_are_counted_outside_quotes() {
        assert_eq!(super::csv_records("a,b\r\n1,\"x\r\ny\"\r\n2,\"q\"\"\"\r\n"), 3);
        assert_eq!(super::csv_records(""), 0);
    }
}
