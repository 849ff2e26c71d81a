//! Inbound webhooks: ingest, verification, redelivery, spool, admin, retention.

pub mod admin;
pub mod ingest;
pub mod processes;
pub mod redelivery;
pub mod retention;
pub mod spool;
pub mod store_down;
pub mod verify;
