//! The CSV export of submissions: UTF-8 (with a BOM by default, so Excel does not read it in
//! the machine's code page), written by the `csv` crate (RFC 4180 quoting, CRLF line ends),
//! and cells a spreadsheet would run as a formula (starting with = + - @, a tab or a carriage
//! return) prefixed with a single quote.

use diesel::QueryResult;

use super::view::SubmissionView;
use crate::base::format::{reference, rfc3339};
use crate::db::admin::browse::{BrowseStore, SubmissionFilter, SubmissionRow};
use crate::domain::{EffectState, FileRef};
use crate::services::lifecycle::csv::document as csv_document;

const BATCH: i64 = 500;

/// What an export holds besides its fixed columns, and how it is encoded.
pub struct Columns {
    /// Declared field names, one column each after the fixed ones.
    pub fields: Vec<String>,
    /// Those of them that hold files (shown as their files' names, types and sizes).
    pub file_fields: Vec<String>,
    /// A UTF-8 BOM first.
    pub bom: bool,
}

/// The whole export of the submissions `filter` selects, newest first: the header, then one
/// line per submission with the values of the `columns`' fields at the end.
pub fn document<C: BrowseStore>(
    c: &mut C,
    filter: &SubmissionFilter,
    columns: &Columns,
) -> QueryResult<String> {
    let Columns { fields, file_fields, bom } = columns;
    let (fields, file_fields, bom) = (fields.as_slice(), file_fields.as_slice(), *bom);
    let mut lines = vec![header(fields)];
    let mut offset = 0;
    loop {
        let (rows, _) = c.list_submissions(filter, BATCH, offset)?;
        let states = c.effect_states(&rows.iter().map(|r| r.id.clone()).collect::<Vec<_>>())?;
        for r in &rows {
            let states = states.get(&r.id).map(Vec::as_slice).unwrap_or_default();
            lines.push(row(r, states, fields, file_fields));
        }
        if rows.len() < BATCH as usize {
            break;
        }
        offset += BATCH;
    }
    let cells = lines.into_iter().map(|l| l.into_iter().map(|c| cell(&c)));
    csv_document(cells, bom).map_err(|e| diesel::result::Error::SerializationError(e.into()))
}

const FIXED: [&str; 8] =
    ["submission_id", "reference", "form", "received_at", "channel", "keyless", "spam", "effect_states"];

/// One cell, neutralised (the writer quotes it when needed).
pub fn cell(value: &str) -> String {
    if value.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{value}")
    } else {
        value.to_string()
    }
}

/// The header row: the fixed columns, then one per declared field name.
fn header(fields: &[String]) -> Vec<String> {
    FIXED.iter().map(|s| s.to_string()).chain(fields.iter().cloned()).collect()
}

/// One submission; `states` are its effects' (kind, state).
fn row(
    s: &SubmissionRow,
    states: &[(String, EffectState)],
    fields: &[String],
    files: &[String],
) -> Vec<String> {
    let values = s.fields();
    let yn = |b: bool| if b { "yes" } else { "no" }.to_string();
    let effects: Vec<String> = states.iter().map(|(k, st)| format!("{k}={st}")).collect();
    let fixed = [
        s.id.to_string(),
        reference(&s.id),
        s.form.clone(),
        rfc3339(s.received_at),
        s.channel.to_string(),
        yn(s.keyless),
        yn(s.spam),
        effects.join(" "),
    ];
    let value = |f: &String| match values.get(f) {
        Some(v) if files.contains(f) => FileRef::shown_all(v, "; "),
        v => v.cloned().unwrap_or_default(),
    };
    fixed.into_iter().chain(fields.iter().map(value)).collect()
}

#[cfg(test)]
mod tests {
    use super::cell;
    use crate::services::lifecycle::csv::document;

    fn line(value: &str) -> String {
        document([[cell(value)]], false).unwrap().trim_end_matches("\r\n").to_string()
    }

    #[test]
    fn cells_are_quoted_and_formulas_neutralised() {
        assert_eq!(line("plain"), "plain");
        assert_eq!(line("a,b"), "\"a,b\"");
        assert_eq!(line("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(line("two\nlines"), "\"two\nlines\"");
        assert_eq!(line("=cmd|' /C calc'!A0"), "'=cmd|' /C calc'!A0");
        assert_eq!(line("+1"), "'+1");
        assert_eq!(line("-1"), "'-1");
        assert_eq!(line("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(line("=1,2"), "\"'=1,2\"");
    }
}
