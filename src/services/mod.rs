//! The use cases: the request log, spam screening, duplicates, accepting a submission, its
//! status, side effects and their workers, the data lifecycle (backup and restore too), alert
//! rules, check-config, the health check a container runs.

pub mod accept;
pub mod accounts;
pub mod admin_forms;
pub mod alert_rules;
pub mod audit;
pub mod browse;
pub mod changes;
pub mod check_config;
pub mod conflicts;
pub mod duplicates;
pub mod effect_actions;
pub mod effects;
pub mod figures;
pub mod files;
pub mod form_versions;
pub mod healthcheck;
pub mod inbound;
pub mod lifecycle;
pub mod oidc;
pub mod read_api;
pub mod reload;
pub mod request_log;
pub mod scan;
pub mod spam;
pub mod spam_release;
pub mod status;
pub mod storage;
pub mod worker;
