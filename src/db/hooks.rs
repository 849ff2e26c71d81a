//! The inbound tables: events unique per (source, event ID), deliveries, conflicts and the
//! quarantine. The caller owns the transaction.

use chrono::NaiveDateTime;
use diesel::dsl::count_star;
use diesel::prelude::*;
use diesel::upsert::excluded;

use crate::db::models::Effect;
use crate::db::schema::{
    inbound_conflicts, inbound_deliveries, inbound_events, inbound_quarantine, side_effects,
};
use crate::db::{DbConnection, Store};
use crate::domain::{
    ConflictStatus, EffectId, EffectState, HookHandler, InboundOutcome, QuarantineStatus, RecordKind,
};

/// An inbound event's side-effect record: one of its source's handlers.
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = side_effects)]
pub struct NewEventEffect {
    pub id: EffectId,
    pub inbound_event_id: String,
    pub kind: RecordKind,
    pub batch: i32,
    pub effect_key: String,
    pub state: EffectState,
    pub next_attempt_at: NaiveDateTime,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = inbound_events)]
pub struct NewEvent {
    pub id: String,
    pub source: String,
    pub event_id: String,
    pub content_hash: String,
    pub body: Option<String>,
    pub content_type: String,
    pub first_received_at: NaiveDateTime,
    pub last_received_at: NaiveDateTime,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = inbound_events)]
pub struct Event {
    pub id: String,
    pub source: String,
    pub event_id: String,
    pub content_hash: String,
    pub body: Option<String>,
    pub content_type: String,
    pub deliveries: i32,
    pub first_received_at: NaiveDateTime,
    pub last_received_at: NaiveDateTime,
}

#[derive(Debug, Clone, Insertable, Queryable, Selectable)]
#[diesel(table_name = inbound_deliveries)]
pub struct Delivery {
    pub id: String,
    pub source: String,
    pub event_row_id: Option<String>,
    pub outcome: InboundOutcome,
    pub http_status: i32,
    pub received_at: NaiveDateTime,
}

#[derive(Debug, Clone, Insertable, Queryable, Selectable)]
#[diesel(table_name = inbound_conflicts)]
pub struct Conflict {
    pub id: String,
    pub event_row_id: String,
    pub content_hash: String,
    pub body: Option<String>,
    pub status: ConflictStatus,
    pub attempts: i32,
    pub first_seen_at: NaiveDateTime,
    pub last_seen_at: NaiveDateTime,
}

#[derive(Debug, Clone, Insertable, Queryable, Selectable)]
#[diesel(table_name = inbound_quarantine)]
pub struct Quarantined {
    pub id: String,
    pub source: String,
    pub body: Option<String>,
    pub content_type: String,
    pub status: QuarantineStatus,
    pub event_row_id: Option<String>,
    pub decided_by: Option<String>,
    pub decided_at: Option<NaiveDateTime>,
    pub received_at: NaiveDateTime,
}

/// Per-source figures for `/metrics`.
#[derive(Debug, Clone, Default)]
pub struct HookStats {
    /// (source, outcome, count)
    pub deliveries: Vec<(String, InboundOutcome, i64)>,
    /// (source, events, largest first-to-last spread in seconds among recent redeliveries)
    pub events: Vec<(String, i64, f64)>,
    /// (source, open conflicts)
    pub conflicts: Vec<(String, i64)>,
    /// (source, open quarantined deliveries)
    pub quarantined: Vec<(String, i64)>,
    /// (source and handler, state, count)
    pub handlers: Vec<(HookHandler, EffectState, i64)>,
}

/// The redelivery spread is taken over this many most recently redelivered events.
const SPREAD_SAMPLE: i64 = 10_000;

pub trait HookStore: Store {
    /// True when this call stored the event (the (source, event ID) was free).
    fn insert_event(&mut self, row: &NewEvent) -> QueryResult<bool>;
    fn find_event(&mut self, source: &str, event_id: &str) -> QueryResult<Option<Event>>;
    fn event(&mut self, id: &str) -> QueryResult<Option<Event>>;
    fn insert_event_effects(&mut self, rows: &[NewEventEffect]) -> QueryResult<()>;
    /// The event's handler records.
    fn effects_of_event(&mut self, event_row: &str) -> QueryResult<Vec<Effect>>;
    /// One more delivery of a stored event.
    fn touch_event(&mut self, id: &str, now: NaiveDateTime) -> QueryResult<()>;
    /// One conflict row per (event, different content), counting repeats.
    fn record_event_conflict(&mut self, row: &Conflict) -> QueryResult<()>;
    fn insert_inbound_delivery(&mut self, row: &Delivery) -> QueryResult<()>;
    fn insert_quarantined(&mut self, row: &Quarantined) -> QueryResult<()>;
    fn quarantined(&mut self, id: &str) -> QueryResult<Option<Quarantined>>;
    /// Closes an open quarantine row; false if someone decided it already.
    fn decide_quarantined(
        &mut self,
        id: &str,
        status: QuarantineStatus,
        event_row_id: Option<&str>,
        by: &str,
        now: NaiveDateTime,
    ) -> QueryResult<bool>;
    fn recent_events(&mut self, source: &str, limit: i64) -> QueryResult<Vec<Event>>;
    fn deliveries_of(&mut self, event_row_id: &str) -> QueryResult<Vec<Delivery>>;
    fn conflicts_of(&mut self, source: &str) -> QueryResult<Vec<(Conflict, Event)>>;
    fn open_quarantine(&mut self, source: &str) -> QueryResult<Vec<Quarantined>>;
    fn hook_stats(&mut self) -> QueryResult<HookStats>;
    /// Retention's `content`: the bodies of these events and of their conflicts go; the
    /// events that still had one.
    fn forget_bodies(&mut self, event_rows: &[String]) -> QueryResult<usize>;
    /// Retention's `keys`: these events and every inbound row naming them (their records
    /// go first, `db::purge::delete_events`); the events deleted.
    fn delete_events(&mut self, event_rows: &[String]) -> QueryResult<usize>;
    fn delete_quarantined(&mut self, ids: &[String]) -> QueryResult<usize>;
}

impl HookStore for DbConnection {
    fn insert_event(&mut self, row: &NewEvent) -> QueryResult<bool> {
        let n = self.execute_native(
            diesel::insert_into(inbound_events::table)
                .values(row)
                .on_conflict((inbound_events::source, inbound_events::event_id))
                .do_nothing(),
        )?;
        Ok(n == 1)
    }

    fn find_event(&mut self, source: &str, event_id: &str) -> QueryResult<Option<Event>> {
        inbound_events::table
            .filter(inbound_events::source.eq(source))
            .filter(inbound_events::event_id.eq(event_id))
            .select(Event::as_select())
            .first(self)
            .optional()
    }

    fn event(&mut self, id: &str) -> QueryResult<Option<Event>> {
        inbound_events::table.find(id).select(Event::as_select()).first(self).optional()
    }

    fn insert_event_effects(&mut self, rows: &[NewEventEffect]) -> QueryResult<()> {
        self.insert_rows::<_, NewEventEffect>(side_effects::table, rows)
    }

    fn effects_of_event(&mut self, event_row: &str) -> QueryResult<Vec<Effect>> {
        side_effects::table
            .filter(side_effects::inbound_event_id.eq(event_row))
            .order((side_effects::kind, side_effects::batch))
            .select(Effect::as_select())
            .load(self)
    }

    fn touch_event(&mut self, id: &str, now: NaiveDateTime) -> QueryResult<()> {
        let touch = |ids: &[String]| {
            diesel::update(inbound_events::table.filter(inbound_events::id.eq_any(ids.to_vec()))).set((
                inbound_events::deliveries.eq(inbound_events::deliveries + 1),
                inbound_events::last_received_at.eq(now),
            ))
        };
        match self {
            // Redeliveries of one hot event ID never queue on its row: while another
            // transaction touches it, this one leaves the row alone (its delivery row in
            // `inbound_deliveries` still counts it; `deliveries` here is then a lower bound).
            DbConnection::Pg(pg) => {
                let free: Vec<String> = inbound_events::table
                    .filter(inbound_events::id.eq(id))
                    .select(inbound_events::id)
                    .for_update()
                    .skip_locked()
                    .load(pg)?;
                if !free.is_empty() {
                    touch(&free).execute(pg)?;
                }
            }
            DbConnection::Sqlite(c) => {
                touch(&[id.to_string()]).execute(c)?;
            }
        }
        Ok(())
    }

    fn record_event_conflict(&mut self, row: &Conflict) -> QueryResult<()> {
        self.execute_native(
            diesel::insert_into(inbound_conflicts::table)
                .values(row)
                .on_conflict((inbound_conflicts::event_row_id, inbound_conflicts::content_hash))
                .do_update()
                .set((
                    inbound_conflicts::attempts.eq(inbound_conflicts::attempts + 1),
                    inbound_conflicts::last_seen_at.eq(excluded(inbound_conflicts::last_seen_at)),
                )),
        )?;
        Ok(())
    }

    fn insert_inbound_delivery(&mut self, row: &Delivery) -> QueryResult<()> {
        diesel::insert_into(inbound_deliveries::table).values(row).execute(self)?;
        Ok(())
    }

    fn insert_quarantined(&mut self, row: &Quarantined) -> QueryResult<()> {
        diesel::insert_into(inbound_quarantine::table).values(row).execute(self)?;
        Ok(())
    }

    fn quarantined(&mut self, id: &str) -> QueryResult<Option<Quarantined>> {
        inbound_quarantine::table.find(id).select(Quarantined::as_select()).first(self).optional()
    }

    fn decide_quarantined(
        &mut self,
        id: &str,
        status: QuarantineStatus,
        event_row_id: Option<&str>,
        by: &str,
        now: NaiveDateTime,
    ) -> QueryResult<bool> {
        let n = diesel::update(
            inbound_quarantine::table
                .filter(inbound_quarantine::id.eq(id))
                .filter(inbound_quarantine::status.eq(QuarantineStatus::Open)),
        )
        .set((
            inbound_quarantine::status.eq(status),
            inbound_quarantine::event_row_id.eq(event_row_id),
            inbound_quarantine::decided_by.eq(by),
            inbound_quarantine::decided_at.eq(now),
        ))
        .execute(self)?;
        Ok(n == 1)
    }

    fn recent_events(&mut self, source: &str, limit: i64) -> QueryResult<Vec<Event>> {
        inbound_events::table
            .filter(inbound_events::source.eq(source))
            .order(inbound_events::first_received_at.desc())
            .limit(limit)
            .select(Event::as_select())
            .load(self)
    }

    fn deliveries_of(&mut self, event_row_id: &str) -> QueryResult<Vec<Delivery>> {
        inbound_deliveries::table
            .filter(inbound_deliveries::event_row_id.eq(event_row_id))
            .order(inbound_deliveries::received_at)
            .select(Delivery::as_select())
            .load(self)
    }

    fn conflicts_of(&mut self, source: &str) -> QueryResult<Vec<(Conflict, Event)>> {
        inbound_conflicts::table
            .inner_join(inbound_events::table)
            .filter(inbound_events::source.eq(source))
            .order(inbound_conflicts::first_seen_at.desc())
            .limit(100)
            .select((Conflict::as_select(), Event::as_select()))
            .load(self)
    }

    fn open_quarantine(&mut self, source: &str) -> QueryResult<Vec<Quarantined>> {
        inbound_quarantine::table
            .filter(inbound_quarantine::source.eq(source))
            .filter(inbound_quarantine::status.eq(QuarantineStatus::Open))
            .order(inbound_quarantine::received_at)
            .limit(100)
            .select(Quarantined::as_select())
            .load(self)
    }

    fn hook_stats(&mut self) -> QueryResult<HookStats> {
        let deliveries = inbound_deliveries::table
            .group_by((inbound_deliveries::source, inbound_deliveries::outcome))
            .select((inbound_deliveries::source, inbound_deliveries::outcome, count_star()))
            .order((inbound_deliveries::source, inbound_deliveries::outcome))
            .load(self)?;
        let spans: Vec<(String, NaiveDateTime, NaiveDateTime)> = inbound_events::table
            .filter(inbound_events::deliveries.gt(1))
            .order(inbound_events::last_received_at.desc())
            .limit(SPREAD_SAMPLE)
            .select((
                inbound_events::source,
                inbound_events::first_received_at,
                inbound_events::last_received_at,
            ))
            .load(self)?;
        let counts: Vec<(String, i64)> = inbound_events::table
            .group_by(inbound_events::source)
            .select((inbound_events::source, count_star()))
            .load(self)?;
        let events = counts
            .into_iter()
            .map(|(source, n)| {
                let spread = spans
                    .iter()
                    .filter(|(s, _, _)| *s == source)
                    .map(|(_, a, b)| (*b - *a).num_milliseconds() as f64 / 1000.0)
                    .fold(0.0, f64::max);
                (source, n, spread)
            })
            .collect();
        let conflicts = inbound_conflicts::table
            .inner_join(inbound_events::table)
            .filter(inbound_conflicts::status.eq(ConflictStatus::Open))
            .group_by(inbound_events::source)
            .select((inbound_events::source, count_star()))
            .load(self)?;
        let quarantined = inbound_quarantine::table
            .filter(inbound_quarantine::status.eq(QuarantineStatus::Open))
            .group_by(inbound_quarantine::source)
            .select((inbound_quarantine::source, count_star()))
            .load(self)?;
        let handlers: Vec<(RecordKind, EffectState, i64)> = side_effects::table
            .filter(side_effects::inbound_event_id.is_not_null())
            .group_by((side_effects::kind, side_effects::state))
            .select((side_effects::kind, side_effects::state, count_star()))
            .order((side_effects::kind, side_effects::state))
            .load(self)?;
        let handlers = handlers
            .into_iter()
            .filter_map(|(kind, state, n)| match kind {
                RecordKind::Hook(h) => Some((h, state, n)),
                RecordKind::Form(_) => None,
            })
            .collect();
        Ok(HookStats { deliveries, events, conflicts, quarantined, handlers })
    }

    fn forget_bodies(&mut self, event_rows: &[String]) -> QueryResult<usize> {
        let n = diesel::update(
            inbound_events::table
                .filter(inbound_events::id.eq_any(event_rows))
                .filter(inbound_events::body.is_not_null()),
        )
        .set(inbound_events::body.eq(None::<String>))
        .execute(self)?;
        diesel::update(inbound_conflicts::table.filter(inbound_conflicts::event_row_id.eq_any(event_rows)))
            .set(inbound_conflicts::body.eq(None::<String>))
            .execute(self)?;
        Ok(n)
    }

    fn delete_events(&mut self, event_rows: &[String]) -> QueryResult<usize> {
        // The events' row locks first, then their conflicts': the order a redelivery
        // takes them in (`touch_event`, then `record_event_conflict`).
        self.forget_bodies(event_rows)?;
        diesel::delete(inbound_conflicts::table.filter(inbound_conflicts::event_row_id.eq_any(event_rows)))
            .execute(self)?;
        diesel::delete(inbound_deliveries::table.filter(inbound_deliveries::event_row_id.eq_any(event_rows)))
            .execute(self)?;
        diesel::delete(inbound_quarantine::table.filter(inbound_quarantine::event_row_id.eq_any(event_rows)))
            .execute(self)?;
        diesel::delete(inbound_events::table.filter(inbound_events::id.eq_any(event_rows))).execute(self)
    }

    fn delete_quarantined(&mut self, ids: &[String]) -> QueryResult<usize> {
        diesel::delete(inbound_quarantine::table.filter(inbound_quarantine::id.eq_any(ids))).execute(self)
    }
}
