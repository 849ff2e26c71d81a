//! Operating onceform: the command line, configuration, schema, layers, metrics, processes.

pub mod alert_rules;
pub mod backup;
pub mod cli;
pub mod config_reference;
pub mod deploy;
pub mod docs_paths;
pub mod healthcheck;
pub mod layers;
pub mod migration_record_owner;
pub mod observability;
pub mod priority;
pub mod process_exit;
pub mod reload;
pub mod schema;
