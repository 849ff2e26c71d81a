//! Settings parsed into their types while the file is read (and when the environment
//! overrides them): a bad value is a config error that names its key, and nothing parses
//! them again later.

use std::net::SocketAddr;

use serde::de::{Deserializer, Error};
use serde::Deserialize;

use super::{DatabaseUrl, TrustedProxies};

/// `server.bind` (`ONCEFORM_BIND`).
pub fn bind(text: &str) -> Result<SocketAddr, String> {
    text.trim().parse().map_err(|_| format!("server.bind: `{text}` is not an address like 127.0.0.1:8080"))
}

/// `server.trusted_proxies` (`ONCEFORM_TRUSTED_PROXIES`).
pub fn trusted_proxies(entries: &[String]) -> Result<TrustedProxies, String> {
    TrustedProxies::parse(entries).map_err(|e| format!("server.trusted_proxies: {e}"))
}

/// `database.url` (`ONCEFORM_DATABASE_URL`).
pub fn database_url(text: &str) -> Result<DatabaseUrl, String> {
    DatabaseUrl::parse(text).map_err(|e| format!("database.url: {e}"))
}

pub(super) fn de_bind<'de, D: Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    bind(&String::deserialize(d)?).map_err(D::Error::custom)
}

pub(super) fn de_trusted_proxies<'de, D: Deserializer<'de>>(d: D) -> Result<TrustedProxies, D::Error> {
    trusted_proxies(&Vec::<String>::deserialize(d)?).map_err(D::Error::custom)
}

pub(super) fn de_database_url<'de, D: Deserializer<'de>>(d: D) -> Result<DatabaseUrl, D::Error> {
    database_url(&String::deserialize(d)?).map_err(D::Error::custom)
}
