//! Handler kinds for inbound events, registered with the workers under their
//! `RecordKind::Hook` (a source and a handler).
//!
//! Adding a kind: a file here with a unit struct implementing `HandlerRules` (its name and
//! the handler settings it needs, see `config::hooks`) and `Handler` (the `Effect` that runs
//! it), then one line in `HANDLERS`. `owner_notification.rs` is a small example.

mod crm_lead;
mod forward;
mod owner_notification;
mod webhook;

use std::sync::Arc;

use serde::de::{self, Deserializer};
use serde::Deserialize;

use super::config::{HandlerConfig, HandlerKind, HandlerRules};
use crate::domain::RecordKind;
use crate::services::effects::{Deps, Effect, Registry};

/// Every handler kind, one line each: a new kind is a file beside this one and its line here.
static HANDLERS: &[&dyn Handler] = &[
    &forward::ForwardKind,
    &crm_lead::HookLeadKind,
    &owner_notification::NotifyKind,
    &webhook::HookWebhookKind,
];

/// A kind of handler: what the configuration knows of it (`HandlerRules`) and how it runs.
pub trait Handler: HandlerRules {
    /// The effect that runs handler `h`'s records, with what the form kinds get.
    fn effect(&self, h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>>;
}

/// The registered kind named `name`.
pub fn find(name: &str) -> Option<&'static dyn Handler> {
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

/// check-config: a kind that POSTs somewhere needs `url`.
fn needs_url(at: &str, h: &HandlerConfig) -> Vec<String> {
    match h.url {
        None => vec![format!("{at}.url: a {} handler needs a URL", h.kind.as_str())],
        Some(_) => Vec::new(),
    }
}

/// Registers every configured handler of every source, with what the form effect kinds
/// get (`effects::Deps`: the same CRM adapter, mailer and call timeout).
pub fn register(registry: &mut Registry, deps: &Deps<'_>) -> anyhow::Result<()> {
    for (source, hook) in &deps.config.hooks {
        for h in &hook.handlers {
            let kind = find(h.kind.as_str()).ok_or_else(|| anyhow::anyhow!("unknown handler kind"))?;
            let effect = kind
                .effect(h, deps)
                .map_err(|e| anyhow::anyhow!("hooks.{source}.handlers.{}: {e}", h.name))?;
            registry.register_as(RecordKind::hook(source, &h.name), effect);
        }
    }
    Ok(())
}
