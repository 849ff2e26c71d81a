//! The IDs that travel between layers: a submission's and a side-effect record's. Stored
//! as TEXT (a UUIDv7), serialised as a plain string; one cannot be passed for the other.

use std::fmt;
use std::ops::Deref;

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql};
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::Text;
use serde::{Deserialize, Serialize};

/// A string newtype stored as `Text`; derefs to `str` for queries and formatting.
macro_rules! text_id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[derive(diesel::expression::AsExpression, diesel::deserialize::FromSqlRow)]
        #[serde(transparent)]
        #[diesel(sql_type = Text)]
        pub struct $name(String);
        impl $name {
            /// A new, time-ordered ID.
            pub fn generate() -> Self { $name(uuid::Uuid::now_v7().to_string()) }
            pub fn as_str(&self) -> &str { &self.0 }
            fn from_text(s: String) -> deserialize::Result<Self> { Ok($name(s)) }
        }
        impl From<String> for $name { fn from(s: String) -> Self { $name(s) } }
        impl From<&str> for $name { fn from(s: &str) -> Self { $name(s.to_string()) } }
        impl From<$name> for String { fn from(id: $name) -> String { id.0 } }
        impl Deref for $name { type Target = str; fn deref(&self) -> &str { &self.0 } }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(&self.0) }
        }
        text_sql!($name);
    };
}

text_id! {
    /// A stored submission's ID (`submissions.id`).
    SubmissionId
}

text_id! {
    /// A side-effect record's ID (`side_effects.id`).
    EffectId
}
