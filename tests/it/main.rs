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
mod lifecycle;
mod lifecycle_digests;
mod lifecycle_erase;
mod lifecycle_import;
mod lifecycle_journey;
mod lifecycle_pages;
mod lifecycle_purge_pg;
mod lifecycle_retention;
mod limits;
mod malformed;
mod process_exit;
mod submit;
mod unavailable;
mod workers;
