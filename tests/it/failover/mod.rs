//! Database failover: a replicated PostgreSQL, cut commits, attached files, configuration.

pub mod changes;
pub mod cluster;
pub mod config;
pub mod cut;
pub mod files;
