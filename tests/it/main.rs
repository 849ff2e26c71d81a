//! Integration tests: the real server over real SQLite and PostgreSQL databases.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod accept;
mod admin;
mod delivery;
mod duplicates;
mod failover;
mod files;
mod hooks;
mod lifecycle;
mod ops;
mod security;
mod web;
