//! The CSV export of submissions: RFC 4180 quoting, CRLF line ends, and cells a spreadsheet
//! would run as a formula (starting with = + - @, a tab or a carriage return) prefixed with a
//! single quote.

use diesel::QueryResult;

use super::row_view::SubmissionView;
use crate::db::admin::browse::{BrowseStore, SubmissionFilter, SubmissionRow};
use crate::domain::EffectState;
use crate::format::{reference, rfc3339};

const BATCH: i64 = 500;

/// The whole export of the submissions `filter` selects, newest first: the header, then one
/// line per submission with the values of `fields` (declared field names) at the end.
pub fn document<C: BrowseStore>(
    c: &mut C,
    filter: &SubmissionFilter,
    fields: &[String],
) -> QueryResult<String> {
    let mut out = String::new();
    header(&mut out, fields);
    let mut offset = 0;
    loop {
        let (rows, _) = c.list_submissions(filter, BATCH, offset)?;
        let states = c.effect_states(&rows.iter().map(|r| r.id.clone()).collect::<Vec<_>>())?;
        for r in &rows {
            row(&mut out, r, states.get(&r.id).map(Vec::as_slice).unwrap_or_default(), fields);
        }
        if rows.len() < BATCH as usize {
            return Ok(out);
        }
        offset += BATCH;
    }
}

const FIXED: [&str; 8] =
    ["submission_id", "reference", "form", "received_at", "channel", "keyless", "spam", "effect_states"];

/// One cell, neutralised and quoted when needed.
pub fn cell(value: &str) -> String {
    let value = if value.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{value}")
    } else {
        value.to_string()
    };
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value
    }
}

fn line<S: AsRef<str>>(out: &mut String, cells: impl IntoIterator<Item = S>) {
    let cells: Vec<String> = cells.into_iter().map(|c| cell(c.as_ref())).collect();
    out.push_str(&cells.join(","));
    out.push_str("\r\n");
}

/// The header row: the fixed columns, then one per declared field name.
fn header(out: &mut String, fields: &[String]) {
    line(out, FIXED.iter().map(|s| s.to_string()).chain(fields.iter().cloned()));
}

/// One submission; `states` are its effects' (kind, state).
fn row(out: &mut String, s: &SubmissionRow, states: &[(String, EffectState)], fields: &[String]) {
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
    line(out, fixed.into_iter().chain(fields.iter().map(|f| values.get(f).cloned().unwrap_or_default())));
}

#[cfg(test)]
mod tests {
    use super::cell;

    #[test]
    fn cells_are_quoted_and_formulas_neutralised() {
        assert_eq!(cell("plain"), "plain");
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(cell("two\nlines"), "\"two\nlines\"");
        assert_eq!(cell("=cmd|' /C calc'!A0"), "'=cmd|' /C calc'!A0");
        assert_eq!(cell("+1"), "'+1");
        assert_eq!(cell("-1"), "'-1");
        assert_eq!(cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(cell("=1,2"), "\"'=1,2\"");
    }
}
