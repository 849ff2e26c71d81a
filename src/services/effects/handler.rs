//! The handler kinds of inbound events (`[[hooks.S.handlers]] kind = "…"`): what the
//! configuration knows of one (`HandlerRules`) and how it runs (`Handler`). They are listed
//! in `HANDLERS` (`effects/mod.rs`) and registered with the workers under their
//! `RecordKind::Hook` (a source and a handler).
//!
//! A kind that is also a form effect kind is the same effect: its file beside the form kind
//! implements `HandlerRules` and `Handler` on a unit struct whose `effect` builds that kind's
//! `Effect`, which reads the event from `Job::event`. A kind only for events (`forward`) is a
//! file of its own. Either way, one line in `HANDLERS`.

use std::sync::Arc;

use super::{Deps, Effect};
use crate::config::hooks::{HandlerConfig, HandlerRules};

/// A kind of handler: what the configuration knows of it (`HandlerRules`) and how it runs.
pub trait Handler: HandlerRules {
    /// The effect that runs handler `h`'s records, with what the form kinds get.
    fn effect(&self, h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>>;
}
