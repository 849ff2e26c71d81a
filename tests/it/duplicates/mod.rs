//! Duplicate detection: screening and matching.

pub mod flood;
pub mod matching;
pub mod screening;
