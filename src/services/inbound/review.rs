//! What the admin's Inbound pages read: a source's recent events with their handler records,
//! its quarantine and conflicts; one event with its deliveries and each handler's attempts.

use crate::db::admin::effects::EffectAdminStore;
use crate::db::hooks::HookStore;
use crate::db::{DbError, Pool};
use crate::with_conn;

pub use crate::db::admin::effects::AttemptRow;
pub use crate::db::hooks::{Conflict, Delivery, Event, Quarantined};
pub use crate::db::models::Effect;

/// A source's page: its recent events (each with its handler records), open quarantine,
/// conflicts (each with its event), and the largest first-to-last arrival of one event ID
/// among recent redeliveries, in seconds.
pub struct SourceView {
    pub events: Vec<(Event, Vec<Effect>)>,
    pub quarantine: Vec<Quarantined>,
    pub conflicts: Vec<(Conflict, Event)>,
    pub spread_seconds: f64,
}

/// Source `name`'s page, its `recent` newest events.
pub fn source(pool: &Pool, name: &str, recent: i64) -> Result<SourceView, DbError> {
    with_conn!(pool, |c| {
        let mut events = Vec::new();
        for event in c.recent_events(name, recent)? {
            let handlers = c.effects_of_event(&event.id)?;
            events.push((event, handlers));
        }
        let spread_seconds =
            c.hook_stats()?.events.into_iter().find(|(s, _, _)| *s == name).map_or(0.0, |(_, _, x)| x);
        Ok::<_, DbError>(SourceView {
            events,
            quarantine: c.open_quarantine(name)?,
            conflicts: c.conflicts_of(name)?,
            spread_seconds,
        })
    })
}

/// One event (by its row id): its deliveries, each handler record with its attempts.
pub type EventDetail = (Event, Vec<Delivery>, Vec<(Effect, Vec<AttemptRow>)>);

pub fn event(pool: &Pool, id: &str) -> Result<Option<EventDetail>, DbError> {
    with_conn!(pool, |c| {
        let Some(event) = c.event(id)? else { return Ok::<_, DbError>(None) };
        let mut handlers = Vec::new();
        for effect in c.effects_of_event(&event.id)? {
            let attempts = c.attempts_of(effect.id.as_str())?;
            handlers.push((effect, attempts));
        }
        let deliveries = c.deliveries_of(&event.id)?;
        Ok(Some((event, deliveries, handlers)))
    })
}
