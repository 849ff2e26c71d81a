//! Delivering side effects: workers, CRM adapters (HubSpot, Salesforce, Pipedrive, Zoho), email, Slack, Teams, Discord, Telegram,
//! outbound webhooks.

pub mod attachments;
pub mod dingtalk;
pub mod discord;
pub mod duplicate_note;
pub mod feishu;
pub mod file_adapters;
pub mod hubspot;
pub mod line;
pub mod mail_hardening;
pub mod outcomes;
pub mod pacing;
pub mod pipedrive;
pub mod providers;
pub mod routing;
pub mod salesforce;
pub mod sheets;
pub mod slack;
pub mod teams;
pub mod telegram;
pub mod webhook_out;
pub mod wecom;
pub mod worker_kill;
pub mod worker_reload;
pub mod workers;
pub mod zoho;
