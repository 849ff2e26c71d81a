//! Queries of the admin pages, one file (and one trait) per area.

pub mod accounts;
pub mod browse;
pub mod duplicate_notes;
pub mod effects;
pub mod oidc;
pub mod review;
pub mod sessions;
pub mod spam;
