//! The dashboard's figures: deliveries against submissions (24 h, 7 days, per UTC day), the
//! effects by state, the oldest PENDING record, open conflicts and duplicate pairs. Counts
//! over time ranges only, so both backends run the same SQL.

use chrono::{Duration, NaiveDate, NaiveDateTime, NaiveTime};
use diesel::dsl::{count_star, min};
use diesel::prelude::*;

use crate::db::schema::{conflicts, deliveries, duplicate_pairs, side_effects, submissions};
use crate::db::DbConnection;
use crate::domain::{ConflictStatus, EffectState, PairStatus};

/// Submissions and deliveries (HTTP requests) received on one UTC day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayCount {
    pub day: NaiveDate,
    pub submissions: i64,
    pub deliveries: i64,
}

#[derive(Debug, Clone, Default)]
pub struct Dashboard {
    pub submissions_24h: i64,
    pub submissions_7d: i64,
    pub deliveries_24h: i64,
    pub deliveries_7d: i64,
    /// The last 7 UTC days, oldest first, today last.
    pub days: Vec<DayCount>,
    /// (state, count)
    pub effects: Vec<(EffectState, i64)>,
    pub oldest_pending: Option<NaiveDateTime>,
    pub open_conflicts: i64,
    pub open_pairs: i64,
}

/// `BrowseStore::dashboard`.
pub(super) fn dashboard(c: &mut DbConnection, now: NaiveDateTime) -> QueryResult<Dashboard> {
    let subs = |c: &mut DbConnection, from: NaiveDateTime, to: NaiveDateTime| -> QueryResult<i64> {
        submissions::table
            .filter(submissions::received_at.ge(from).and(submissions::received_at.lt(to)))
            .count()
            .get_result(c)
    };
    let dels = |c: &mut DbConnection, from: NaiveDateTime, to: NaiveDateTime| -> QueryResult<i64> {
        deliveries::table
            .filter(deliveries::received_at.ge(from).and(deliveries::received_at.lt(to)))
            .count()
            .get_result(c)
    };
    let (day_ago, week_ago, end) =
        (now - Duration::hours(24), now - Duration::days(7), now + Duration::days(1));
    let mut days = Vec::with_capacity(7);
    for back in (0..7).rev() {
        let start = (now.date() - Duration::days(back)).and_time(NaiveTime::MIN);
        let next = start + Duration::days(1);
        let (submissions, deliveries) = (subs(c, start, next)?, dels(c, start, next)?);
        days.push(DayCount { day: start.date(), submissions, deliveries });
    }
    Ok(Dashboard {
        submissions_24h: subs(c, day_ago, end)?,
        submissions_7d: subs(c, week_ago, end)?,
        deliveries_24h: dels(c, day_ago, end)?,
        deliveries_7d: dels(c, week_ago, end)?,
        days,
        effects: side_effects::table
            .group_by(side_effects::state)
            .select((side_effects::state, count_star()))
            .load(c)?,
        oldest_pending: side_effects::table
            .filter(side_effects::state.eq(EffectState::Pending))
            .select(min(side_effects::created_at))
            .get_result(c)?,
        open_conflicts: conflicts::table
            .filter(conflicts::status.eq(ConflictStatus::Open))
            .count()
            .get_result(c)?,
        open_pairs: duplicate_pairs::table
            .filter(duplicate_pairs::status.eq(PairStatus::Open))
            .count()
            .get_result(c)?,
    })
}
