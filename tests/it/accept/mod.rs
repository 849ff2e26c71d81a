//! Accepting submissions: replays, conflicts, validation, concurrency, the accept transaction.

pub mod cold_replays;
pub mod concurrency;
pub mod field_types;
pub mod limits;
pub mod malformed;
pub mod one_statement;
pub mod submit;
pub mod typed_states;
pub mod unavailable;
pub mod versions;
pub mod young_plans;
