//! A test submission from the admin (`/admin/forms/{form}/preview`): the fields an admin
//! typed, accepted under a fresh operation ID and stored marked `test`. It gets no
//! side-effect records at all (nothing is queued for a worker, so nothing leaves the
//! server), is never screened for duplicates nor found as one, and is shown with a "test"
//! badge in the admin's lists.

use super::{Acceptor, Intake, Outcome, Receipt};
use crate::config::Form;
use crate::db::DbError;
use crate::domain::{normalise_with, Attached, Channel, OperationId, RawFields};

/// Why a test submission was not stored.
#[derive(Debug)]
pub enum TestError {
    /// The fields are not valid for the form (each problem, as the visitor would be told).
    Invalid(Vec<String>),
    Store(DbError),
}

impl Acceptor {
    /// Accepts `raw` as a test submission of `form` (blocking: run it off the async threads).
    pub fn test_submission(&self, form: &Form, raw: &RawFields) -> Result<Receipt, TestError> {
        let fields =
            normalise_with(&**form, raw, &Attached::new()).map_err(|e| TestError::Invalid(e.summary()))?;
        let intake = Intake {
            form: form.clone(),
            operation_id: Some(OperationId::generate()),
            channel: Channel::Html,
            fields,
            scans: Default::default(),
            received: None,
            test: true,
        };
        match self.accept(intake).map_err(TestError::Store)? {
            Outcome::Created(receipt) => Ok(receipt),
            // A fresh operation ID is never taken.
            other => {
                Err(TestError::Store(DbError::Unavailable(format!("test submission not created: {other:?}"))))
            }
        }
    }
}
