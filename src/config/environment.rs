//! The environment the process reads: each variable and what it means, in the order
//! `onceform --help` lists them. docs/CONFIGURATION.md's environment table names the same
//! variables (tests/it/ops/config_reference.rs holds both to this list).

/// Every environment variable onceform reads (name, meaning), as `--help` prints them.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    ("ONCEFORM_CONFIG", "the configuration file (as --config)"),
    ("ONCEFORM_DATABASE_URL", "database.url: sqlite://PATH, a plain path, or postgres://…"),
    ("ONCEFORM_BIND", "server.bind (:0 picks a free port)"),
    (
        "ONCEFORM_SECRET",
        "the server secret: signs fill-time stamps and captcha challenges and keys the stored \
         digests (else generated once into ./data/secret)",
    ),
    (
        "ONCEFORM_SECRET_PREVIOUS",
        "the secret before a rotation: older digests are still compared and re-keyed",
    ),
    ("ONCEFORM_METRICS_TOKEN", "/metrics then needs `Authorization: Bearer TOKEN`"),
    ("ONCEFORM_SMTP_URL", "smtp.url (unset: .eml files)"),
    ("ONCEFORM_CRM_URL", "crm.url (unset: the file adapter)"),
    ("ONCEFORM_CRM_TOKEN", "the CRM API token (the variable crm.token_env names)"),
    ("ONCEFORM_CLAMD", "server.clamd: the clamd that scans uploads, unix:/path/clamd.sock or tcp:host:port"),
    ("ONCEFORM_RATE_LIMIT", "off turns the per-client rate limits off (load tests)"),
    ("ONCEFORM_TRUSTED_PROXIES", "comma-separated proxies whose X-Forwarded-For names the client"),
    ("ONCEFORM_LOG_FORMAT", "json: one JSON object per log line"),
    ("RUST_LOG", "log filter (default info,actix_server=warn)"),
];
