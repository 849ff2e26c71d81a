//! The accept use case and its types. `Acceptor::submit` (`submit.rs`) validates, screens
//! and accepts; `Plan` (`plan.rs`) computes every row before the transaction; the transaction
//! (`transaction.rs`, and `pg.rs` for PostgreSQL's one statement) claims (form, operation ID)
//! through the unique constraint and writes the submission, one record per side effect and
//! the delivery. A second request with the same key reads what the first one committed.

mod acceptor;
mod cache;
pub mod import;
mod pg;
mod pg_batch;
mod plan;
mod recipient_cap;
pub mod route;
mod submit;
pub mod test_submission;
mod transaction;
mod versions;

use crate::config::Form;
use crate::domain::{Attached, NormalisedFields, OperationId, RawFields, Scans, SubmissionId};
use crate::services::request_log::Channel;
pub use acceptor::Acceptor;
pub use submit::{SubmitError, SubmitRequest};

use plan::Plan;
pub use plan::ResultBody;

/// A validated submission, ready to be accepted. It owns what it needs, so the accept
/// transaction can run on another thread (the blocking pool, SQLite's writer).
pub struct Intake {
    pub form: Form,
    /// `None` for a keyless HTML post.
    pub operation_id: Option<OperationId>,
    pub channel: Channel,
    pub fields: NormalisedFields,
    /// What the malware scan said of each attached file, by digest (a file not named here
    /// was not scanned).
    pub scans: Scans,
    /// The request's fields and files as they came (a keyed post): a retry of a key accepted
    /// under another version of the form is judged under that version. `None`: the live
    /// version judges (imports, the admin's accept-as-new).
    pub received: Option<AsReceived>,
    /// A test submission from the admin (`test_submission`): stored marked `test`, with no
    /// side-effect records, and not screened for duplicates.
    pub test: bool,
}

/// What became of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// This request created the submission (201).
    Created(Receipt),
    /// The same content was accepted before under this key (200, the stored body).
    Replayed(Receipt),
    /// Different content under an accepted key (409); the original is untouched.
    Conflict { submission_id: SubmissionId, operation_id: String },
    /// The key is taken but its submission is not readable yet (409, retry).
    InProgress { operation_id: String },
    /// An issued operation ID past its form's `keys` window, with nothing stored (410).
    Expired { operation_id: String },
}

/// A keyed request's fields and files as they came, kept with its intake so that a retry of
/// a key accepted under another version of the form can be judged under that version.
#[derive(Debug, Clone, Default)]
pub struct AsReceived {
    pub raw: RawFields,
    pub files: Attached,
}

/// The stored result of an accepted submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub submission_id: SubmissionId,
    pub operation_id: String,
    /// The result body, byte for byte as first returned.
    pub body: String,
    pub received_at: chrono::NaiveDateTime,
    /// The version of its form the submission was accepted under (`None`: unknown).
    pub form_version: Option<String>,
}

/// The stored result of submission `s`.
fn receipt(s: crate::db::models::Submission) -> Receipt {
    Receipt {
        submission_id: s.id,
        operation_id: s.operation_id,
        body: s.response_body,
        received_at: s.received_at,
        form_version: s.form_version,
    }
}
