//! The public web surface: HTML pages, static sites, languages, browsers, OpenAPI, connections.

pub mod api_docs;
pub mod browser;
pub mod changes_consumer;
pub mod connections;
pub mod embed_browser;
pub mod embed_files_browser;
pub mod html;
pub mod i18n;
pub mod i18n_browser;
pub mod openapi;
pub mod read_api;
pub mod static_sites;
