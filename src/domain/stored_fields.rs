//! A submission's fields as stored (`submissions.fields_json`: a JSON object of strings),
//! read in one place under one of two policies: a delivery refuses fields it cannot read
//! (`parse`), a page shows none and says so in the log (`shown`). No message holds content.

use std::collections::BTreeMap;

/// Field name → value, as stored.
pub type StoredFields = BTreeMap<String, String>;

/// The stored text is not a JSON object of strings; where, never what (serde's message may
/// quote the content).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the submission's stored fields do not parse ({category} error at line {line}, column {column})")]
pub struct Unreadable {
    category: String,
    line: usize,
    column: usize,
}

/// The fields stored as `json`.
pub fn parse(json: &str) -> Result<StoredFields, Unreadable> {
    serde_json::from_str(json).map_err(|e| Unreadable {
        category: format!("{:?}", e.classify()),
        line: e.line(),
        column: e.column(),
    })
}

/// The fields to show or search: none when there are none (purged); none, with a warning in
/// the log, when they do not parse.
pub fn shown(json: Option<&str>) -> StoredFields {
    match json.map(parse) {
        Some(Ok(fields)) => fields,
        Some(Err(unreadable)) => {
            tracing::warn!(error = %unreadable, "stored fields shown as none");
            StoredFields::new()
        }
        None => StoredFields::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_fields_name_where_never_what() {
        assert_eq!(parse(r#"{"name":"Ada"}"#).unwrap()["name"], "Ada");
        let e = parse(r#"{"name":"Grace","age":36}"#).unwrap_err().to_string();
        assert!(!e.contains("36") && !e.contains("Grace"), "{e}");
        assert!(parse(r#"["Ada"]"#).is_err(), "not a map");
        assert!(shown(Some("{")).is_empty());
        assert!(shown(None).is_empty());
    }
}
