//! `[server]`: the listener, its connection deadlines and caps, and the files the server
//! keeps (secret, first admin password, webhook spool, attached files).

use std::net::SocketAddr;

use serde::Deserialize;
use validator::Validate;

use super::{parsed, MetricsToken, TrustedProxies};

/// clamd's own default `StreamMaxLength` (25 MiB): the default of `clamd_max_bytes`.
pub const CLAMD_MAX_BYTES: u64 = 25 * 1024 * 1024;

#[derive(Debug, Clone, Deserialize, Validate)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    #[serde(deserialize_with = "parsed::de_bind")]
    pub bind: SocketAddr,
    /// Per-client rate limits on the public submit endpoints.
    pub rate_limit: bool,
    /// HTTP worker threads; 0 means one per core but one, at least one (`http::server`).
    #[validate(range(max = 256))]
    pub http_workers: usize,
    /// Committed results kept in memory to answer retries without the database (entries,
    /// about 1 KiB each); 0 turns the cache off.
    #[validate(range(max = 10_000_000))]
    pub replay_cache: usize,
    /// Reverse proxies (addresses or CIDR ranges) whose `X-Forwarded-For` names the client
    /// for rate limits and sign-in throttling. Empty: the header is ignored.
    #[serde(deserialize_with = "parsed::de_trusted_proxies")]
    pub trusted_proxies: TrustedProxies,
    /// Connection deadlines and caps (applied in `src/http/connections.rs`).
    #[validate(range(min = 100, max = 600000))]
    pub body_timeout_ms: u64,
    #[validate(range(min = 100, max = 600000))]
    pub request_head_timeout_ms: u64,
    #[validate(range(max = 3600))]
    pub keep_alive_seconds: u64,
    #[validate(range(min = 1, max = 1000000))]
    pub max_connections_per_worker: usize,
    /// `Secure` cookies with the `__Host-` prefix, and HSTS; unset: on unless bound to loopback.
    pub secure_cookies: Option<bool>,
    /// `ONCEFORM_METRICS_TOKEN`: `/metrics` then needs `Authorization: Bearer TOKEN`.
    pub metrics_token: Option<MetricsToken>,
    /// How old `/metrics`' database figures may be (they are counted at most this often).
    #[validate(range(max = 300000))]
    pub metrics_cache_ms: u64,
    /// Where the first start writes the generated admin password (mode 0600).
    pub initial_password_file: String,
    /// Where `serve` writes its process ID, for `onceform reload` to signal.
    pub pid_file: String,
    /// Where the server secret is generated once when `ONCEFORM_SECRET` is not set.
    pub secret_file: String,
    /// Where webhook sources with `when_store_down = "spool"` keep the deliveries the
    /// database could not take (one file per process).
    pub spool_dir: String,
    /// The spool's size at most, in bytes; a delivery that does not fit is answered 503.
    #[validate(range(min = 4096))]
    pub spool_max_bytes: u64,
    /// Where attached files are kept: `"database"` (in its `blobs` tables, PostgreSQL only)
    /// or `"folder"` (`files_dir`); unset, the database on PostgreSQL and the folder on
    /// SQLite (`ServerConfig::file_store`).
    pub files: Option<FileStoreKind>,
    /// Where attached files are kept, one file per content digest (`services::files`).
    pub files_dir: String,
    /// Requests streaming attached files in at once; the others wait for a turn before their
    /// body is read (within the body deadline): the bodies go to disk a few at a time.
    #[validate(range(min = 1, max = 1024))]
    pub max_concurrent_uploads: usize,
    /// The address visitors and receivers reach this server at (`https://forms.example.com`):
    /// the base of the signed file links a generic CRM gets.
    pub public_url: Option<String>,
    /// `ONCEFORM_CLAMD`: the clamd that scans the files of forms with `scan = "clamd"`
    /// (`unix:/path` or `tcp:host:port`).
    pub clamd: Option<String>,
    /// The largest file clamd scans (its `StreamMaxLength`): a scanning form refuses a
    /// larger file as it arrives (422 `file_too_large`), since clamd could not scan it.
    #[validate(range(min = 1))]
    pub clamd_max_bytes: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            rate_limit: true,
            http_workers: 0,
            replay_cache: 20_000,
            trusted_proxies: Default::default(),
            body_timeout_ms: 10_000,
            request_head_timeout_ms: 5_000,
            keep_alive_seconds: 5,
            max_connections_per_worker: 10_000,
            secure_cookies: None,
            metrics_token: None,
            metrics_cache_ms: 5_000,
            initial_password_file: "./data/initial-admin-password".into(),
            pid_file: "./data/onceform.pid".into(),
            secret_file: "./data/secret".into(),
            spool_dir: "./data/spool".into(),
            spool_max_bytes: 64 * 1024 * 1024,
            files: None,
            files_dir: "./data/files".into(),
            max_concurrent_uploads: 8,
            public_url: None,
            clamd: None,
            clamd_max_bytes: CLAMD_MAX_BYTES,
        }
    }
}

/// `[server] files`: where the bytes of attached files are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStoreKind {
    /// The database's `blobs` and `blob_chunks` tables (PostgreSQL): every node reads them.
    Database,
    /// One file per digest under `files_dir`, shared by the nodes of a deployment as a mount.
    Folder,
}

impl FileStoreKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FileStoreKind::Database => "database",
            FileStoreKind::Folder => "folder",
        }
    }

    pub fn parse(s: &str) -> Option<FileStoreKind> {
        match s {
            "database" => Some(FileStoreKind::Database),
            "folder" => Some(FileStoreKind::Folder),
            _ => None,
        }
    }
}

impl ServerConfig {
    /// The file store in force with the database at `url`: `files` if set, else the database
    /// on PostgreSQL and the folder on SQLite.
    pub fn file_store(&self, url: &super::DatabaseUrl) -> FileStoreKind {
        match (self.files, url) {
            (Some(kind), _) => kind,
            (None, super::DatabaseUrl::Postgres(_)) => FileStoreKind::Database,
            (None, super::DatabaseUrl::Sqlite(_)) => FileStoreKind::Folder,
        }
    }
}
