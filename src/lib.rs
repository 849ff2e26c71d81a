//! onceform: a self-hosted form-submission backend in which each logical submission
//! takes effect exactly once.

pub mod app;
pub mod base;
pub mod cli;
pub mod config;
pub mod db;
pub mod domain;
pub mod services;
pub mod web;
