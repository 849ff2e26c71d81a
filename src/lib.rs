//! onceform: a self-hosted form-submission backend in which each logical submission
//! takes effect exactly once.

pub mod accept;
pub mod admin;
pub mod alert_rules;
pub mod cli;
pub mod config;
pub mod db;
pub mod deliveries;
pub mod domain;
pub mod duplicates;
pub mod effects;
pub mod hooks;
pub mod http;
pub mod lifecycle;
pub mod logging;
pub mod secret;
pub mod spam;
pub mod status;
pub mod worker;
