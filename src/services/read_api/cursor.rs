//! The opaque cursor of a list page: where the last row of the page stood in the list's
//! order (its time and ID), so the next page starts strictly after it. Rows that arrive
//! while a client pages sort before the cursor (newest first) and never shift the pages
//! after it: each row present when the walk began is served exactly once.

use chrono::{DateTime, NaiveDateTime};

/// (time, id) of the last row served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub at: NaiveDateTime,
    pub id: String,
}

/// The latest time a cursor names: 18 digits of microseconds (past the year 30000).
const MAX_MICROS: i64 = 999_999_999_999_999_999;
/// The longest ID a cursor carries (a UUID is 36).
const MAX_ID: usize = 64;

/// What a cursor looks like (OpenAPI `pattern`): every text of this shape is a cursor,
/// so a client (or a fuzzer) that keeps to the description never gets a 400 for it.
pub const PATTERN: &str = "^[0-9]{1,18}_[0-9A-Za-z_-]{1,64}$";

impl Cursor {
    pub fn new(at: NaiveDateTime, id: &str) -> Cursor {
        Cursor { at, id: id.to_string() }
    }

    /// `MICROSECONDS_ID` (since 1970, the precision both databases keep): opaque to clients (only this API makes
    /// them, its form may change), not a secret.
    pub fn encode(&self) -> String {
        let micros = self.at.and_utc().timestamp_micros().clamp(0, MAX_MICROS);
        format!("{micros}_{}", self.id)
    }

    /// `None` for a text not of the cursor's shape ([`PATTERN`]).
    pub fn decode(text: &str) -> Option<Cursor> {
        let (micros, id) = text.split_once('_')?;
        let valid = (1..=18).contains(&micros.len())
            && micros.bytes().all(|b| b.is_ascii_digit())
            && (1..=MAX_ID).contains(&id.len())
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid {
            return None;
        }
        let at = DateTime::from_timestamp_micros(micros.parse().ok()?)?.naive_utc();
        Some(Cursor { at, id: id.to_string() })
    }

    /// As the stores take it.
    pub fn key(&self) -> (NaiveDateTime, &str) {
        (self.at, &self.id)
    }
}

/// One page of a list: its rows and the cursor of the next page, if there is one.
#[derive(Debug, Clone)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<Cursor>,
}

/// `rows` fetched with `limit + 1`: the first `limit` of them, and a cursor at the last of
/// those when there was more.
pub fn page<R, T>(
    mut rows: Vec<R>,
    limit: usize,
    key: impl Fn(&R) -> Cursor,
    view: impl FnMut(R) -> T,
) -> Page<T> {
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next = if more { rows.last().map(&key) } else { None };
    Page { items: rows.into_iter().map(view).collect(), next }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_to_the_microsecond_and_refuse_anything_else() {
        let at = DateTime::from_timestamp(1_764_000_000, 123_456_000).unwrap().naive_utc();
        let c = Cursor::new(at, "0190b3c2-7f00-7abc-8def-0123456789ab");
        assert_eq!(Cursor::decode(&c.encode()), Some(c.clone()));
        assert_eq!(c.encode(), "1764000000123456_0190b3c2-7f00-7abc-8def-0123456789ab");
        assert_eq!(Cursor::decode("0_a").map(|c| c.at.to_string()).as_deref(), Some("1970-01-01 00:00:00"));
        assert!(Cursor::decode(&format!("{}_a", "9".repeat(18))).is_some(), "the pattern's largest");
        let (long_time, long_id) = (format!("{}_a", "1".repeat(19)), format!("1_{}", "a".repeat(65)));
        for bad in ["", "x", "_a", "12_", "12.a", "12_a b", "-1_a", &long_time, &long_id] {
            assert_eq!(Cursor::decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_page_points_past_its_last_row_only_when_there_is_more() {
        let at = DateTime::from_timestamp(0, 0).unwrap().naive_utc();
        let key = |n: &i32| Cursor::new(at, &n.to_string());
        let p = page(vec![5, 4, 3], 2, key, |n| n);
        assert_eq!((p.items, p.next.map(|c| c.id)), (vec![5, 4], Some("4".to_string())));
        let p = page(vec![5, 4], 2, key, |n| n);
        assert_eq!((p.items, p.next), (vec![5, 4], None));
    }
}
