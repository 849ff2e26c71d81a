//! The opaque cursor of a list page: where the last row of the page stood in the list's
//! order (its time and ID), so the next page starts strictly after it. Rows that arrive
//! while a client pages sort before the cursor (newest first) and never shift the pages
//! after it: each row present when the walk began is served exactly once.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, NaiveDateTime};

/// (time, id) of the last row served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub at: NaiveDateTime,
    pub id: String,
}

/// The longest ID a cursor carries (a UUID is 36).
const MAX_ID: usize = 64;

impl Cursor {
    pub fn new(at: NaiveDateTime, id: &str) -> Cursor {
        Cursor { at, id: id.to_string() }
    }

    /// base64url of `NANOSECONDS.ID`: opaque to clients, not a secret.
    pub fn encode(&self) -> String {
        let nanos = self.at.and_utc().timestamp_nanos_opt().unwrap_or(0);
        URL_SAFE_NO_PAD.encode(format!("{nanos}.{}", self.id))
    }

    /// `None` for anything [`encode`](Cursor::encode) did not make.
    pub fn decode(text: &str) -> Option<Cursor> {
        if text.len() > 200 {
            return None;
        }
        let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let (nanos, id) = text.split_once('.')?;
        let valid_id = !id.is_empty()
            && id.len() <= MAX_ID
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid_id {
            return None;
        }
        let at = DateTime::from_timestamp_nanos(nanos.parse().ok()?).naive_utc();
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
    fn cursors_round_trip_to_the_nanosecond_and_refuse_anything_else() {
        let at = DateTime::from_timestamp(1_764_000_000, 123_456_789).unwrap().naive_utc();
        let c = Cursor::new(at, "0190b3c2-7f00-7abc-8def-0123456789ab");
        assert_eq!(Cursor::decode(&c.encode()), Some(c.clone()));
        assert!(!c.encode().contains(['+', '/', '=']));
        for bad in [
            "",
            "x",
            "%%%",
            &URL_SAFE_NO_PAD.encode("12.a b"),
            &URL_SAFE_NO_PAD.encode("x.abc"),
            &URL_SAFE_NO_PAD.encode("12."),
            &"A".repeat(300),
        ] {
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
