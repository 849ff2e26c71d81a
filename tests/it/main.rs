//! Integration tests: the real server over real SQLite and PostgreSQL databases.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod submit;
mod malformed;
mod concurrency;
mod unavailable;
mod html;
mod cli;
mod limits;
