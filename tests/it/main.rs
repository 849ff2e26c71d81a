//! Integration tests: the real server over real SQLite and PostgreSQL databases.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod admin_effects;
mod admin_pages;
mod admin_review;
mod browser;
mod cli;
mod concurrency;
mod delivery;
mod duplicates;
mod html;
mod limits;
mod malformed;
mod one_statement;
mod process_exit;
mod submit;
mod unavailable;
mod workers;
