//! onceform: a self-hosted form-submission backend in which each logical submission
//! takes effect exactly once.

pub mod accept;
pub mod admin;
pub mod alert_rules;
pub mod app;
pub mod check_config;
pub mod cli;
pub mod clock;
pub mod config;
pub mod db;
pub mod domain;
pub mod duplicates;
pub mod effects;
pub mod format;
pub mod hooks;
pub mod http;
pub mod i18n;
pub mod lifecycle;
pub mod logging;
pub mod render;
pub mod request_log;
pub mod secret;
pub mod spam;
pub mod status;
pub mod worker;
