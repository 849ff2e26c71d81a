//! A moment as a visitor reads it: in the form's time zone and the locale's style.

use std::fmt;
use std::str::FromStr;

use chrono::{Datelike, NaiveDateTime, Offset, Timelike};
use chrono_tz::Tz;
use serde::{Deserialize, Deserializer};

use super::{Arg, Locale};

/// An IANA time zone (`Asia/Taipei`), parsed from the configuration; default UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeZone(pub Tz);

impl Default for TimeZone {
    fn default() -> Self {
        TimeZone(Tz::UTC)
    }
}

impl fmt::Display for TimeZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name())
    }
}

impl FromStr for TimeZone {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        s.parse::<Tz>()
            .map(TimeZone)
            .map_err(|_| format!("`{s}` is not an IANA time zone (e.g. Asia/Taipei, Europe/Zurich, UTC)"))
    }
}

impl<'de> Deserialize<'de> for TimeZone {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// `utc` (a stored UTC time) in `zone`, written as `locale` writes dates:
/// `Tuesday, 1 December 2026, 21:05 (UTC+8)`, `2026年12月1日（週二）21:05（UTC+8）`.
pub fn local_date_time(locale: Locale, utc: NaiveDateTime, zone: TimeZone) -> String {
    let local = utc.and_utc().with_timezone(&zone.0);
    let weekday =
        locale.format("weekday", &[("n", Arg::Num(i64::from(local.weekday().num_days_from_sunday())))]);
    let month_name = locale.format("month-name", &[("n", Arg::Num(i64::from(local.month())))]);
    let time = format!("{:02}:{:02}", local.hour(), local.minute());
    let zone = utc_offset(local.offset().fix().local_minus_utc());
    locale.format(
        "date-time",
        &[
            ("weekday", Arg::Str(&weekday)),
            ("day", Arg::Num(i64::from(local.day()))),
            ("month", Arg::Num(i64::from(local.month()))),
            ("month-name", Arg::Str(&month_name)),
            ("year", Arg::Num(i64::from(local.year()))),
            ("time", Arg::Str(&time)),
            ("zone", Arg::Str(&zone)),
        ],
    )
}

/// `UTC`, `UTC+8`, `UTC-3:30`.
fn utc_offset(seconds: i32) -> String {
    let (sign, s) = if seconds < 0 { ('-', -seconds) } else { ('+', seconds) };
    match (s / 3600, (s % 3600) / 60) {
        (0, 0) => "UTC".into(),
        (h, 0) => format!("UTC{sign}{h}"),
        (h, m) => format!("UTC{sign}{h}:{m:02}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_local_and_in_the_locales_style() {
        let utc = NaiveDateTime::parse_from_str("2026-12-01 13:05:00", "%Y-%m-%d %H:%M:%S").unwrap();
        let taipei: TimeZone = "Asia/Taipei".parse().unwrap();
        assert_eq!(local_date_time(Locale::ZhTw, utc, taipei), "2026年12月1日（週二）21:05（UTC+8）");
        assert_eq!(
            local_date_time(Locale::Ja, utc, "Asia/Tokyo".parse().unwrap()),
            "2026年12月1日（火）22:05（UTC+9）"
        );
        assert_eq!(
            local_date_time(Locale::ZhCn, utc, "Asia/Shanghai".parse().unwrap()),
            "2026年12月1日（周二）21:05（UTC+8）"
        );
        assert_eq!(
            local_date_time(Locale::En, utc, TimeZone::default()),
            "Tuesday, 1 December 2026, 13:05 (UTC)"
        );
        let late = NaiveDateTime::parse_from_str("2026-12-31 20:00:00", "%Y-%m-%d %H:%M:%S").unwrap();
        assert_eq!(local_date_time(Locale::ZhTw, late, taipei), "2027年1月1日（週五）04:00（UTC+8）");
        assert_eq!(utc_offset(-(3 * 3600 + 1800)), "UTC-3:30");
        assert!("Mars/Olympus".parse::<TimeZone>().is_err());
    }
}
