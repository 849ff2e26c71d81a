//! Which side-effect records an owner has: a submission's or an inbound event's (their IDs
//! are UUIDs of one space, so a list may mix both).

use diesel::prelude::*;

use super::schema::side_effects;

/// The records owned by any of `ids` (submissions or inbound events).
#[diesel::dsl::auto_type(no_type_alias)]
pub fn owned_by<'a>(ids: &'a [String]) -> _ {
    side_effects::submission_id.eq_any(ids).or(side_effects::inbound_event_id.eq_any(ids))
}

/// The records owned by `id` (a submission or an inbound event).
#[diesel::dsl::auto_type(no_type_alias)]
pub fn owned_by_one<'a>(id: &'a str) -> _ {
    side_effects::submission_id.eq(id).or(side_effects::inbound_event_id.eq(id))
}
