//! Domain values: parsed once at the edge, valid everywhere after.

mod effect;
mod fields;
#[cfg(test)]
mod fields_proptest;
mod fingerprint;
mod ids;
mod invisible;
pub mod keyring;
mod operation_id;
pub mod states;

pub use effect::EffectKind;
pub use fields::{
    normalise, normalise_value, parse_journey_id, FieldErrors, NormalisedFields, RawFields, JOURNEY_FIELD,
};
pub use fingerprint::{digest, fingerprint};
pub use ids::{EffectId, SubmissionId};
pub use operation_id::{OperationId, OperationIdError};
pub use states::{
    AttemptOutcome, Channel, ConflictStatus, DeliveryOutcome, EffectState, PairStatus, QuarantineStatus, Role,
};
