//! Domain values: parsed once at the edge, valid everywhere after.

mod effect;
mod fields;
#[cfg(test)]
mod fields_proptest;
mod fingerprint;
mod form;
mod invisible;
pub mod keyring;
mod operation_id;

pub use effect::{EffectKind, EffectState};
pub use fields::{
    normalise, normalise_value, parse_journey_id, FieldErrors, NormalisedFields, RawFields, JOURNEY_FIELD,
};
pub use fingerprint::{digest, fingerprint};
pub use form::{FieldConfig, FieldType, FormSchema};
pub use operation_id::{OperationId, OperationIdError};
