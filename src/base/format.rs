//! How values are written for people and for the wire: timestamps and submission references.

use chrono::NaiveDateTime;

/// UTC, seconds precision, `Z` suffix: the timestamps of the API and of CSV exports.
pub fn rfc3339(t: NaiveDateTime) -> String {
    t.and_utc().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// UTC to the second, as the admin pages show times.
pub fn shown(t: NaiveDateTime) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

/// A short reference for people: the random tail of a submission ID.
pub fn reference(submission_id: &str) -> String {
    let hex: String = submission_id.chars().filter(char::is_ascii_hexdigit).collect();
    let tail = &hex[hex.len().saturating_sub(10)..];
    format!("OF-{}-{}", &tail[..tail.len() / 2], &tail[tail.len() / 2..]).to_uppercase()
}

#[cfg(test)]
mod tests {
    #[test]
    fn references_are_short_and_upper_case() {
        assert_eq!(super::reference("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"), "OF-1D2E3-F4A5B");
    }

    #[test]
    fn timestamps_are_utc_to_the_second() {
        let t = chrono::NaiveDate::from_ymd_opt(2026, 3, 4)
            .and_then(|d| d.and_hms_micro_opt(5, 6, 7, 890))
            .unwrap_or_default();
        assert_eq!(super::rfc3339(t), "2026-03-04T05:06:07Z");
        assert_eq!(super::shown(t), "2026-03-04 05:06:07");
    }
}
