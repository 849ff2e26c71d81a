//! Domain values: parsed once at the edge, valid everywhere after.

mod effect;
mod fields;
#[cfg(test)]
mod fields_proptest;
mod fingerprint;
mod invisible;
mod operation_id;

pub use effect::{EffectKind, EffectState};
pub use fields::{normalise, FieldErrors, NormalisedFields, RawFields};
pub use fingerprint::{digest, fingerprint};
pub use operation_id::{OperationId, OperationIdError};
