//! Integration tests: the real server over real SQLite and PostgreSQL databases.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod admin_effects;
mod admin_pages;
mod admin_review;
mod alert_rules;
mod api_docs;
mod browser;
mod cli;
mod concurrency;
mod connections;
mod crm_hubspot;
mod crm_salesforce;
mod delivery;
mod duplicates;
mod embed_browser;
mod file_adapters;
mod headers;
mod html;
mod limits;
mod login_throttle;
mod mail_hardening;
mod malformed;
mod observability;
mod openapi;
mod process_exit;
mod public_hardening;
mod sessions;
mod spam;
mod static_sites;
mod submit;
mod unavailable;
mod workers;
