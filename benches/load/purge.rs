//! Accepts during a retention pass (issue 12: "accepts during a purge of 100k rows keep p99
//! under 50 ms"). On a fresh database per backend, `--purge N` delivered submissions received
//! two hours ago are bulk-inserted under a one-hour `content` window; then HTTP accepts run at
//! 16 clients, first alone and then while the real retention pass (`purge::run_pass`, as
//! `onceform purge` and `serve`'s schedule run it, with its own connections) purges them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use diesel::prelude::*;
use onceform::db::schema::submissions;
use onceform::db::{DbError, Pool};
use onceform::lifecycle::purge::{run_pass, PurgeReport};
use onceform::with_conn;

use crate::common::Db;
use crate::traffic::{self, Scenario, Stop, Tally};
use crate::Options;

/// The target for the accepts' p99 while a pass runs.
const TARGET_P99_MS: f64 = 50.0;
pub const CLIENTS: usize = 16;

/// The pass runs with `[purge] enabled = false` (only when this bench calls it) and the
/// contact form's content kept one hour.
const SETTINGS: &str =
    "[worker]\nenabled = false\n\n[purge]\nenabled = false\n\n[forms.contact.retention]\ncontent = \"1h\"";

pub fn header() {
    println!(
        "| backend | rows purged | pass s | accepts during the pass | accept p50 ms | accept p99 ms | \
         without a pass p50 / p99 ms | unexpected | met (p99 ≤ {TARGET_P99_MS:.0} ms) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
}

/// Measures and prints `backend`'s row.
pub fn measure(rt: &tokio::runtime::Runtime, backend: &str, opts: &Options) {
    let db = Db::new(backend);
    let (path, config) = db.config(SETTINGS);
    let pool = Pool::connect(&config.database).unwrap();
    let server = crate::serve(&path);
    crate::grow::fill(&db, &pool, opts.purge, 2);
    let addrs = [server.address()];
    let alone = rt.block_on(traffic::run(&addrs, Scenario::Accept, CLIENTS, opts.seconds.min(3)));
    let done = Arc::new(AtomicBool::new(false));
    let pass = {
        let (done, config) = (done.clone(), config.clone());
        std::thread::spawn(move || {
            // Its own pool, as a separate `onceform purge` or `serve`'s schedule has.
            let pool = Pool::connect(&config.database).unwrap();
            std::thread::sleep(Duration::from_millis(200)); // the accepts are under way
            let report = run_pass(&pool, &config, onceform::clock::now());
            done.store(true, Ordering::Relaxed);
            report.unwrap()
        })
    };
    let during = rt.block_on(traffic::run_until(&addrs, Scenario::Accept, CLIENTS, Stop::When(done)));
    let report = pass.join().unwrap();
    print(backend, &report, &during, &alone);
    assert_eq!(report.total(), opts.purge as i64, "{backend}: every seeded row purged, once");
    assert_eq!(
        content_kept(&pool),
        during.created + alone.created,
        "{backend}: only the new accepts keep content"
    );
}

fn print(backend: &str, report: &PurgeReport, during: &Tally, alone: &Tally) {
    let met = if during.p99_ms <= TARGET_P99_MS { "yes" } else { "**no**" };
    println!(
        "| {backend} | {} | {:.1} | {} | {:.2} | {:.2} | {:.2} / {:.2} | {} | {met} |",
        report.total(),
        report.duration_ms as f64 / 1000.0,
        during.created,
        during.p50_ms,
        during.p99_ms,
        alone.p50_ms,
        alone.p99_ms,
        during.unexpected + alone.unexpected,
    );
}

/// Submissions whose content is still stored.
fn content_kept(pool: &Pool) -> usize {
    let n: i64 = with_conn!(pool, |c| submissions::table
        .filter(submissions::content_purged_at.is_null())
        .count()
        .get_result(c)
        .map_err(DbError::from))
    .unwrap();
    n as usize
}
