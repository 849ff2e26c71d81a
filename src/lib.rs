//! onceform: a self-hosted form-submission backend in which each logical submission
//! takes effect exactly once.

pub mod config;
pub mod db;
pub mod domain;
