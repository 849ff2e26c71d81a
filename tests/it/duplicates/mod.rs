//! Duplicate detection: screening and matching.

pub mod matching;
pub mod screening;
