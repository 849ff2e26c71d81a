//! The data lifecycle: keyed digests (conversion of older rows), retention with tombstones
//! (`purge`), erasure of one person, historic import, the redelivery spread, and backup and
//! restore (`backup`, `restore`, their `manifest`).

pub mod backup;
pub mod commands;
pub mod csv;
pub mod erase;
pub mod import;
pub mod manifest;
pub mod metrics;
pub mod purge;
pub mod rekey;
pub mod restore;
pub mod schedule;
