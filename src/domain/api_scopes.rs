//! The scopes of a read API token as one value: parsed once from the command line, the admin
//! form or the stored column (space-separated), never empty, without repeats.

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql};
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::Text;

use super::ApiScope;

/// A non-empty set of `ApiScope`s, in `ApiScope::ALL` order, with its stored text.
#[derive(Debug, Clone, PartialEq, Eq, diesel::expression::AsExpression, diesel::deserialize::FromSqlRow)]
#[diesel(sql_type = Text)]
pub struct Scopes(Vec<ApiScope>, String);

impl Scopes {
    /// `read:submissions,read:effects` (commas or spaces between); an unknown scope or none
    /// at all is an error naming the valid ones.
    pub fn parse(text: &str) -> Result<Scopes, String> {
        let mut found = Vec::new();
        for word in text.split([',', ' ']).map(str::trim).filter(|w| !w.is_empty()) {
            let scope = ApiScope::parse(word)
                .ok_or_else(|| format!("unknown scope `{word}` (the scopes are {})", Scopes::all_names()))?;
            found.push(scope);
        }
        Scopes::of(found).ok_or_else(|| format!("name at least one scope ({})", Scopes::all_names()))
    }

    /// These scopes, in their usual order; `None` when there is none.
    pub fn of(scopes: impl IntoIterator<Item = ApiScope>) -> Option<Scopes> {
        let given: Vec<ApiScope> = scopes.into_iter().collect();
        let set: Vec<ApiScope> = ApiScope::ALL.into_iter().filter(|s| given.contains(s)).collect();
        let text = set.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ");
        (!set.is_empty()).then_some(Scopes(set, text))
    }

    pub fn contains(&self, scope: ApiScope) -> bool {
        self.0.contains(&scope)
    }

    pub fn iter(&self) -> impl Iterator<Item = ApiScope> + '_ {
        self.0.iter().copied()
    }

    /// As stored: the scopes separated by one space.
    pub fn to_text(&self) -> String {
        self.1.clone()
    }

    fn all_names() -> String {
        ApiScope::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
    }
}

impl std::fmt::Display for Scopes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.1)
    }
}

impl<DB: Backend> ToSql<Text, DB> for Scopes
where
    str: ToSql<Text, DB>,
{
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, DB>) -> serialize::Result {
        <str as ToSql<Text, DB>>::to_sql(&self.1, out)
    }
}

/// A stored text that is not a set of known scopes is a read error, never "no scope".
impl<DB: Backend> FromSql<Text, DB> for Scopes
where
    String: FromSql<Text, DB>,
{
    fn from_sql(raw: DB::RawValue<'_>) -> deserialize::Result<Self> {
        Ok(Scopes::parse(&String::from_sql(raw)?)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_in_any_order_and_are_stored_in_one() {
        let s = Scopes::parse("write:decisions, read:submissions,read:submissions").unwrap();
        assert_eq!(s.to_text(), "read:submissions write:decisions");
        assert_eq!(Scopes::parse(&s.to_text()), Ok(s.clone()));
        assert!(s.contains(ApiScope::WriteDecisions) && !s.contains(ApiScope::ReadEffects));
        assert!(Scopes::parse("read:everything").unwrap_err().contains("unknown scope `read:everything`"));
        assert!(Scopes::parse(" , ").unwrap_err().contains("at least one"));
    }
}
