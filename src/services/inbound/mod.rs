//! Inbound webhooks' use cases: a verified delivery stored once per (source, event ID) with
//! one side-effect record per handler, or quarantined (`ingest`). The HTTP side (signatures,
//! bodies, the spool) is `web::hooks`.

pub mod decisions;
pub mod ingest;
pub mod review;
