//! Delivering side effects: workers, CRM adapters, email, Slack, outbound webhooks.

pub mod attachments;
pub mod file_adapters;
pub mod hubspot;
pub mod mail_hardening;
pub mod outcomes;
pub mod pacing;
pub mod providers;
pub mod routing;
pub mod salesforce;
pub mod slack;
pub mod webhook_out;
pub mod workers;
