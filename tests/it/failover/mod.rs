//! Database failover: a replicated PostgreSQL, cut commits, configuration.

pub mod changes;
pub mod cluster;
pub mod config;
pub mod cut;
