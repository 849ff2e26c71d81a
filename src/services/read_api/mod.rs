//! The read API's use cases (`/api/v1`): tokens (`tokens`), the pages of submissions, effect
//! records and duplicate pairs (`submissions`, `effects`, `duplicates`) as their JSON, and
//! the cursor that pages them (`cursor`). Every read goes through the admin's stores
//! (`db::admin`) and is held to the caller's scopes and form here, not in the handlers.
//! Erased or purged submissions are tombstones: their fields and files are never served.

pub mod cursor;
pub mod decisions;
pub mod duplicates;
pub mod effects;
pub mod submissions;
pub mod tokens;
mod views;

use crate::config::Forms;
use crate::db::{DbError, Pool};
use crate::domain::ApiScope;
use crate::services::files::FileLinks;
pub use cursor::{Cursor, Page};
pub use tokens::Caller;

/// The most rows one page holds, and how many when the client does not say.
pub const MAX_LIMIT: usize = 500;
pub const DEFAULT_LIMIT: usize = 50;

/// Why a read (or a decision) is refused.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("this token lacks the scope {0}")]
    MissingScope(ApiScope),
    #[error("this token is limited to another form")]
    OtherForm,
    #[error("no such record")]
    NotFound,
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for ReadError {
    fn from(e: diesel::result::Error) -> Self {
        ReadError::Db(e.into())
    }
}

/// What a read needs: the database, the forms in force (which fields are files) and the
/// signed links that serve files.
pub struct Reader<'a> {
    pub pool: &'a Pool,
    pub forms: &'a Forms,
    pub links: &'a FileLinks,
    /// Unix seconds the links are made at.
    pub now: i64,
}

impl Caller {
    /// `Ok` when the token has `scope`.
    pub fn require(&self, scope: ApiScope) -> Result<(), ReadError> {
        if self.may(scope) {
            Ok(())
        } else {
            Err(ReadError::MissingScope(scope))
        }
    }

    /// The form a list is narrowed to: the one asked for, held to the token's form (a
    /// form-limited token asking for none gets its own).
    pub fn narrow(&self, asked: Option<String>) -> Result<Option<String>, ReadError> {
        match (&self.form, asked) {
            (Some(own), Some(asked)) if *own != asked => Err(ReadError::OtherForm),
            (Some(own), _) => Ok(Some(own.clone())),
            (None, asked) => Ok(asked),
        }
    }

    /// `Ok` when the token may read `form`'s records.
    pub fn check_form(&self, form: &str) -> Result<(), ReadError> {
        if self.may_read(form) {
            Ok(())
        } else {
            Err(ReadError::OtherForm)
        }
    }
}

/// The limit asked for (1 to `MAX_LIMIT`), as a store's `LIMIT` one past it.
fn fetch(limit: usize) -> i64 {
    i64::try_from(limit.clamp(1, MAX_LIMIT)).unwrap_or(50) + 1
}
