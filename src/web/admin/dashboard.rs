//! The dashboard: deliveries against submissions, the effects by state, what waits for an
//! admin, and a small server-rendered chart of the last 7 days.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use askama::Template;
use chrono::NaiveDateTime;

use super::guard::SessionUser;
use super::{db_failure_in, Chrome, FlashQuery};
use crate::base::clock::now;
use crate::domain::EffectState;
use crate::services::browse::{self, Dashboard, DayCount};
use crate::services::storage::DbError;
use crate::web::render::html;
use crate::web::state::AppState;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/admin", web::get().to(dashboard)).route("/admin/", web::get().to(dashboard));
}

/// The chart's drawing area, in SVG user units (the bars' area; labels go around it).
const CHART_HEIGHT: i64 = 150;
const TOP: i64 = 18;
const SLOT_WIDTH: i64 = 120;
const BAR_WIDTH: i64 = 36;

/// One bar of the chart, placed in Rust so the template only prints numbers.
pub struct Bar {
    pub x: i64,
    pub y: i64,
    pub height: i64,
    pub n: i64,
    pub title: String,
}

pub struct ChartDay {
    pub label: String,
    pub label_x: i64,
    pub submissions: Bar,
    pub deliveries: Bar,
}

#[derive(Template)]
#[template(path = "admin/dashboard.html")]
struct DashboardPage {
    chrome: Chrome,
    d: Dashboard,
    effects: Vec<(&'static str, i64)>,
    oldest_pending_age: Option<String>,
    unknown: i64,
    failed_final: i64,
    chart: Vec<ChartDay>,
    chart_width: i64,
    chart_height: i64,
    bar_width: i64,
    /// Per form: (name, redelivery spread p99, content window, keys window).
    spread: Vec<(String, String, String, String)>,
    /// Why the last configuration reload failed, while no good one has loaded since.
    reload_error: Option<String>,
}

async fn dashboard(state: web::Data<AppState>, user: SessionUser, q: web::Query<FlashQuery>) -> HttpResponse {
    state.acceptor.deliveries().flush().await;
    let pool = state.pool.clone();
    let at = now();
    let d = match web::block(move || browse::dashboard(&pool, at)).await {
        Ok(Ok(d)) => d,
        Ok(Err(e)) => return db_failure_in(user.locale, e),
        Err(_) => return db_failure_in(user.locale, DbError::Unavailable("blocking pool".into())),
    };
    let pool = state.pool.clone();
    let lifecycle = super::blocking(move || crate::services::lifecycle::metrics::read(&pool, at))
        .await
        .unwrap_or_default();
    let window = |w: Option<crate::config::Window>| w.map(|w| w.to_string()).unwrap_or_else(|| "–".into());
    let spread = state
        .forms()
        .config
        .forms
        .iter()
        .map(|(name, f)| {
            let p99 = lifecycle.spread_p99(name).map(|s| format!("{s:.1} s")).unwrap_or_else(|| "–".into());
            (name.clone(), p99, window(f.retention.content), window(f.retention.keys))
        })
        .collect();
    let count = |s: EffectState| d.effects.iter().filter(|(st, _)| *st == s).map(|(_, n)| n).sum();
    let page = DashboardPage {
        chrome: Chrome::new(&user, "dashboard", q.flash.as_deref()),
        effects: EffectState::ALL.iter().map(|s| (s.as_str(), count(*s))).collect(),
        oldest_pending_age: d.oldest_pending.map(|t| age(at, t)),
        unknown: count(EffectState::Unknown),
        failed_final: count(EffectState::FailedFinal),
        chart: chart(&d.days),
        chart_width: SLOT_WIDTH * i64::try_from(d.days.len()).unwrap_or(7),
        chart_height: TOP + CHART_HEIGHT + 24,
        bar_width: BAR_WIDTH,
        spread,
        reload_error: state.forms.last_error(),
        d,
    };
    html(StatusCode::OK, &page)
}

/// How long ago `then` was, roughly: "45 s", "12 min", "3 h 20 min", "2 d 4 h".
fn age(now: NaiveDateTime, then: NaiveDateTime) -> String {
    let s = (now - then).num_seconds().max(0);
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..86400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86400, s % 86400 / 3600),
    }
}

/// Two bars per day (submissions, deliveries), scaled to the busiest day.
fn chart(days: &[DayCount]) -> Vec<ChartDay> {
    let max = days.iter().map(|d| d.submissions.max(d.deliveries)).max().unwrap_or(0).max(1);
    let bar = |x: i64, n: i64, what: &str, day: &str| {
        let height = if n == 0 { 0 } else { (n * CHART_HEIGHT / max).max(2) };
        Bar { x, y: TOP + CHART_HEIGHT - height, height, n, title: format!("{day}: {n} {what}") }
    };
    days.iter()
        .zip(0i64..)
        .map(|(d, i)| {
            let (left, day) = (i * SLOT_WIDTH + (SLOT_WIDTH - 2 * BAR_WIDTH) / 2, d.day.format("%Y-%m-%d"));
            let day = day.to_string();
            ChartDay {
                label: d.day.format("%a %d").to_string(),
                label_x: i * SLOT_WIDTH + SLOT_WIDTH / 2,
                submissions: bar(left, d.submissions, "submissions", &day),
                deliveries: bar(left + BAR_WIDTH, d.deliveries, "deliveries", &day),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, NaiveDate};

    #[test]
    fn bars_scale_to_the_busiest_day() {
        let day = NaiveDate::from_ymd_opt(2024, 5, 1).unwrap_or_default();
        let days = [
            DayCount { day, submissions: 2, deliveries: 4 },
            DayCount { day, submissions: 0, deliveries: 0 },
        ];
        let c = chart(&days);
        assert_eq!((c[0].deliveries.height, c[0].submissions.height), (CHART_HEIGHT, CHART_HEIGHT / 2));
        assert_eq!(c[1].submissions.height, 0);
        assert_eq!(c[0].deliveries.y, TOP);
    }

    #[test]
    fn ages_read_naturally() {
        let t =
            NaiveDate::from_ymd_opt(2024, 5, 1).unwrap_or_default().and_hms_opt(0, 0, 0).unwrap_or_default();
        assert_eq!(age(t + Duration::seconds(42), t), "42 s");
        assert_eq!(age(t + Duration::minutes(200), t), "3 h 20 min");
        assert_eq!(age(t + Duration::hours(52), t), "2 d 4 h");
    }
}
