//! Handler kinds for inbound events (`[[hooks.S.handlers]] kind = "…"`), registered with the
//! workers under their `RecordKind::Hook` (a source and a handler).
//!
//! A kind that is also a form effect kind is the same effect: its file beside the form kind
//! implements `HandlerRules` and `Handler` on a unit struct whose `effect` builds that kind's
//! `Effect`, which reads the event from `Job::event`. A kind only for events (`forward`) is a
//! file of its own. Either way, one line in `HANDLERS`.

use std::sync::Arc;

use serde::de::{self, Deserializer};
use serde::Deserialize;

use super::{crm_lead, forward, owner_notification, webhook, Deps, Effect, Registry};
use crate::config::hooks::{HandlerConfig, HandlerKind, HandlerRules};
use crate::domain::RecordKind;

/// Every handler kind, one line each.
static HANDLERS: &[&dyn Handler] = &[
    &forward::ForwardHandler,
    &crm_lead::CrmLeadHandler,
    &owner_notification::OwnerNotificationHandler,
    &webhook::WebhookHandler,
];

/// A kind of handler: what the configuration knows of it (`HandlerRules`) and how it runs.
pub trait Handler: HandlerRules {
    /// The effect that runs handler `h`'s records, with what the form kinds get.
    fn effect(&self, h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>>;
}

/// The registered kind named `name`.
fn find(name: &str) -> Option<&'static dyn Handler> {
    HANDLERS.iter().copied().find(|k| k.name() == name)
}

impl<'de> Deserialize<'de> for HandlerKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        match find(&name) {
            Some(kind) => Ok(HandlerKind(kind)),
            None => {
                let names: Vec<String> = HANDLERS.iter().map(|k| format!("`{}`", k.name())).collect();
                Err(de::Error::custom(format!(
                    "unknown handler kind `{name}`, expected one of {}",
                    names.join(", ")
                )))
            }
        }
    }
}

/// Registers every configured handler of every source, with what the form effect kinds
/// get (`effects::Deps`: the same CRM adapter, mailer and call timeout).
pub fn register(registry: &mut Registry, deps: &Deps<'_>) -> anyhow::Result<()> {
    for (source, hook) in &deps.config.hooks {
        for h in &hook.handlers {
            let at = format!("hooks.{source}.handlers.{}", h.name);
            let kind = find(h.kind.as_str()).ok_or_else(|| anyhow::anyhow!("{at}: unknown handler kind"))?;
            let effect = kind.effect(h, deps).map_err(|e| anyhow::anyhow!("{at}: {e}"))?;
            registry.register_as(RecordKind::hook(source, &h.name), effect);
        }
    }
    Ok(())
}
