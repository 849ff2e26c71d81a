//! What a side-effect record is (`side_effects.kind`), parsed once when rows are read: a
//! form's effect kind, or an inbound webhook source's handler (stored as
//! `hook:SOURCE:HANDLER`). The only place that text is written or read; a webhook source's
//! rows are counted beside the forms' under `hook:SOURCE` (`RecordKind::source_scope`).

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql};
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::Text;

use super::EffectKind;

const HOOK: &str = "hook:";

/// The kind of one side-effect record.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    diesel::expression::AsExpression,
    diesel::deserialize::FromSqlRow,
)]
#[diesel(sql_type = Text)]
pub enum RecordKind {
    /// A form's side effect (`crm_lead`, `slack`, …).
    Form(EffectKind),
    /// An inbound webhook handler's record.
    Hook(HookHandler),
}

/// A webhook source and one of its handlers (kept with its stored text).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HookHandler {
    /// `hook:SOURCE:HANDLER`
    text: String,
    /// Where `:HANDLER` starts.
    split: usize,
}

impl HookHandler {
    pub fn source(&self) -> &str {
        &self.text[HOOK.len()..self.split]
    }

    pub fn handler(&self) -> &str {
        &self.text[self.split + 1..]
    }
}

impl RecordKind {
    /// The record kind of `source`'s handler `handler`.
    pub fn hook(source: &str, handler: &str) -> RecordKind {
        RecordKind::Hook(HookHandler {
            text: format!("{HOOK}{source}:{handler}"),
            split: HOOK.len() + source.len(),
        })
    }

    /// The stored text: `crm_lead`, `hook:SOURCE:HANDLER`.
    pub fn parse(s: &str) -> Result<RecordKind, String> {
        match s.strip_prefix(HOOK) {
            Some(rest) => match rest.split_once(':') {
                Some((source, handler)) if !source.is_empty() && !handler.is_empty() => {
                    Ok(RecordKind::hook(source, handler))
                }
                _ => Err(format!("a hook record kind names no source and handler: `{s}`")),
            },
            None if s.is_empty() => Err("an empty record kind".into()),
            None => Ok(RecordKind::Form(EffectKind::stored(s))),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            RecordKind::Form(k) => k.as_str(),
            RecordKind::Hook(h) => &h.text,
        }
    }

    /// The form effect kind, or for a handler `None`.
    pub fn form_kind(&self) -> Option<EffectKind> {
        match self {
            RecordKind::Form(k) => Some(k.clone()),
            RecordKind::Hook(_) => None,
        }
    }

    /// The handler's name (a handler's record) or the kind's (a form's).
    pub fn short_name(&self) -> &str {
        match self {
            RecordKind::Form(k) => k.as_str(),
            RecordKind::Hook(h) => h.handler(),
        }
    }

    /// The name a webhook source's rows are counted under beside the forms' (retention
    /// scopes, purge totals, `/metrics`): `hook:SOURCE`.
    pub fn source_scope(source: &str) -> String {
        format!("{HOOK}{source}")
    }

    /// The source a scope name of `source_scope` names; `None` for a form's.
    pub fn scope_source(scope: &str) -> Option<&str> {
        scope.strip_prefix(HOOK)
    }
}

impl From<EffectKind> for RecordKind {
    fn from(k: EffectKind) -> Self {
        RecordKind::Form(k)
    }
}

impl PartialEq<EffectKind> for RecordKind {
    fn eq(&self, other: &EffectKind) -> bool {
        matches!(self, RecordKind::Form(k) if k == other)
    }
}

impl std::fmt::Display for RecordKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<DB: Backend> ToSql<Text, DB> for RecordKind
where
    str: ToSql<Text, DB>,
{
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, DB>) -> serialize::Result {
        <str as ToSql<Text, DB>>::to_sql(self.as_str(), out)
    }
}

impl<DB: Backend> FromSql<Text, DB> for RecordKind
where
    String: FromSql<Text, DB>,
{
    fn from_sql(raw: DB::RawValue<'_>) -> deserialize::Result<Self> {
        Ok(RecordKind::parse(&String::from_sql(raw)?)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_text() {
        let hook = RecordKind::hook("helpdesk", "fwd");
        assert_eq!(hook.as_str(), "hook:helpdesk:fwd");
        assert_eq!(RecordKind::parse("hook:helpdesk:fwd"), Ok(hook.clone()));
        let RecordKind::Hook(h) = &hook else { panic!("{hook:?}") };
        assert_eq!((h.source(), h.handler()), ("helpdesk", "fwd"));
        assert_eq!(hook.short_name(), "fwd");
        let form = RecordKind::parse("crm_lead").unwrap();
        assert_eq!(form, EffectKind::CRM_LEAD);
        assert_eq!(form.form_kind(), Some(EffectKind::CRM_LEAD));
        assert!(RecordKind::parse("hook:helpdesk").is_err());
        assert!(RecordKind::parse("hook::fwd").is_err());
        assert!(RecordKind::parse("").is_err());
    }

    #[test]
    fn a_source_scope_names_its_source() {
        let scope = RecordKind::source_scope("helpdesk");
        assert_eq!(scope, "hook:helpdesk");
        assert_eq!(RecordKind::scope_source(&scope), Some("helpdesk"));
        assert_eq!(RecordKind::scope_source("contact"), None);
    }
}
