//! Handler kinds for inbound events, registered with the workers under
//! `hook:SOURCE:HANDLER`. A new kind is one file here and one line in `build`.

mod crm_lead;
mod forward;
mod owner_notification;
mod webhook;

use std::sync::Arc;

use super::config::{HandlerConfig, HandlerKind};
use super::ingest::record_kind;
use crate::effects::{Deps, Effect, Registry};

fn build(h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
    Ok(match h.kind {
        HandlerKind::Forward => Arc::new(forward::Forward::new(h, deps)?),
        HandlerKind::CrmLead => Arc::new(crm_lead::HookLead::new(h, deps)),
        HandlerKind::OwnerNotification => Arc::new(owner_notification::Notify::new(h, deps)),
        HandlerKind::Webhook => Arc::new(webhook::HookWebhook::new(h, deps)?),
    })
}

/// Registers every configured handler of every source, with what the form effect kinds
/// get (`effects::Deps`: the same CRM adapter, mailer and call timeout).
pub fn register(registry: &mut Registry, deps: &Deps<'_>) -> anyhow::Result<()> {
    for (source, hook) in &deps.config.hooks {
        for h in &hook.handlers {
            let effect =
                build(h, deps).map_err(|e| anyhow::anyhow!("hooks.{source}.handlers.{}: {e}", h.name))?;
            registry.register_as(record_kind(source, &h.name), effect);
        }
    }
    Ok(())
}
