//! The queries behind the lifecycle's metrics (`lifecycle::metrics`).

use chrono::NaiveDateTime;
use diesel::dsl::{count_star, max, min};
use diesel::prelude::*;

use super::schema::{deliveries, inbound_events, purge_passes, purge_totals, submissions};
use super::DbConnection;
use crate::domain::RecordKind;

/// What the lifecycle's metrics are computed from.
#[derive(Debug, Clone, Default)]
pub struct LifecycleRows {
    /// (form, kind, rows purged)
    pub purged: Vec<(String, String, i64)>,
    /// (started_at, duration_ms) of the last pass.
    pub last_pass: Option<(NaiveDateTime, i64)>,
    /// (form, received_at of its oldest submission whose content is kept), then (a webhook
    /// source's scope, first_received_at of its oldest event whose body is kept)
    pub oldest: Vec<(String, Option<NaiveDateTime>)>,
    /// (form, first, last delivery) of each operation ID delivered more than once since then.
    pub redelivered: Vec<(Option<String>, Option<NaiveDateTime>, Option<NaiveDateTime>)>,
}

pub trait LifecycleStatsStore {
    /// The rows, with the redeliveries of deliveries received since `since`.
    fn lifecycle_rows(&mut self, since: NaiveDateTime) -> QueryResult<LifecycleRows>;
}

impl LifecycleStatsStore for DbConnection {
    fn lifecycle_rows(&mut self, since: NaiveDateTime) -> QueryResult<LifecycleRows> {
        let purged = purge_totals::table
            .order((purge_totals::form, purge_totals::kind))
            .select((purge_totals::form, purge_totals::kind, purge_totals::purged_rows))
            .load(self)?;
        let last_pass = purge_passes::table
            .order(purge_passes::started_at.desc())
            .select((purge_passes::started_at, purge_passes::duration_ms))
            .first(self)
            .optional()?;
        let mut oldest: Vec<(String, Option<NaiveDateTime>)> = submissions::table
            .filter(submissions::content_purged_at.is_null())
            .group_by(submissions::form)
            .select((submissions::form, min(submissions::received_at)))
            .load(self)?;
        let events: Vec<(String, Option<NaiveDateTime>)> = inbound_events::table
            .filter(inbound_events::body.is_not_null())
            .group_by(inbound_events::source)
            .select((inbound_events::source, min(inbound_events::first_received_at)))
            .load(self)?;
        oldest.extend(events.into_iter().map(|(source, t)| (RecordKind::source_scope(&source), t)));
        let redelivered = deliveries::table
            .filter(deliveries::received_at.ge(since))
            .filter(deliveries::operation_id.is_not_null())
            .group_by((deliveries::form, deliveries::operation_id))
            .having(count_star().gt(1))
            .select((deliveries::form, min(deliveries::received_at), max(deliveries::received_at)))
            .load(self)?;
        Ok(LifecycleRows { purged, last_pass, oldest, redelivered })
    }
}
