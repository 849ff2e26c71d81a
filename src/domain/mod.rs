//! Domain values: parsed once at the edge, valid everywhere after.

/// `Text` on both backends for a type of this module with `as_str` and a `from_text`
/// (`FromSql`'s check of what is read): `ids` and `states` share it.
macro_rules! text_sql {
    ($name:ident) => {
        impl<DB: Backend> ToSql<Text, DB> for $name
        where
            str: ToSql<Text, DB>,
        {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, DB>) -> serialize::Result {
                <str as ToSql<Text, DB>>::to_sql(self.as_str(), out)
            }
        }
        impl<DB: Backend> FromSql<Text, DB> for $name
        where
            String: FromSql<Text, DB>,
        {
            fn from_sql(raw: DB::RawValue<'_>) -> deserialize::Result<Self> {
                Self::from_text(String::from_sql(raw)?)
            }
        }
    };
}

mod api_scopes;
mod effect;
mod field_error;
mod fields;
#[cfg(test)]
mod fields_i18n_tests;
#[cfg(test)]
mod fields_proptest;
mod file_ref;
mod fingerprint;
mod form;
mod idna_email;
mod ids;
pub use idna_email::ascii_email;
mod invisible;
pub use invisible::is_invisible;
pub mod keyring;
mod operation_id;
mod record;
pub mod region;
pub mod states;
pub mod stored_fields;
pub mod transitions;
mod width;
pub use width::fold_width;

pub use api_scopes::Scopes;
pub use effect::{duplicate_note_key, first_lead_ref, original_of_note_key, EffectKind};
pub use field_error::{FieldError, FIELD_ERROR_CODES};
pub use fields::{
    boolean, is_email, is_phone_number, normalise, normalise_value, normalise_with, parse_journey_id,
    phone_digits, stored_content_json, FieldErrors, NormalisedFields, RawFields, JOURNEY_FIELD,
    MAX_UNDECLARED, MAX_UNDECLARED_VALUE, SEVERAL,
};
pub use file_ref::{
    accepts_type, human_size, is_sha256, safe_file_name, split_stored, Attached, FileRef, Scans,
};
pub use fingerprint::{digest, fingerprint, raw_digest};
pub use form::{day, Bound, FieldConfig, FieldType, FormSchema, Undeclared};
pub use ids::{EffectId, SubmissionId};
pub use operation_id::{OperationId, OperationIdError};
pub use record::{HookHandler, RecordKind};
pub use states::{
    ApiScope, AttemptOutcome, ChangeKind, Channel, ConflictStatus, DeliveryOutcome, EffectState,
    InboundOutcome, PairStatus, QuarantineStatus, Role, ScanState, SpamReason,
};
