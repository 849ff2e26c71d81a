//! onceform: a self-hosted form-submission backend in which each logical submission
//! takes effect exactly once.

pub mod accept;
pub mod admin;
pub mod cli;
pub mod config;
pub mod db;
pub mod deliveries;
pub mod domain;
pub mod duplicates;
pub mod effects;
pub mod http;
pub mod lifecycle;
pub mod secret;
pub mod status;
pub mod worker;
