//! onceform: a self-hosted form-submission backend in which each logical submission
//! takes effect exactly once.

pub mod config;
pub mod db;
pub mod domain;
pub mod accept;
pub mod deliveries;
pub mod cli;
pub mod status;
pub mod http;
