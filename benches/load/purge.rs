//! Accepts during a retention pass (issue 12: "accepts during a purge of 100k rows keep p99
//! under 50 ms"). On a fresh database per backend, `--purge N` delivered submissions received
//! two hours ago are bulk-inserted under a one-hour `content` window; then HTTP accepts run at
//! 16 clients, first alone and then while the real retention pass purges them: once run by a
//! process of its own (`purge::run_pass` on its own pool, as `onceform purge` runs it), once by
//! the schedule inside `serve` (a `serve` started with `[purge] enabled`, whose first pass
//! starts as it starts).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use diesel::prelude::*;
use onceform::db::schema::{purge_passes, submissions};
use onceform::db::{DbError, Pool, Writes};
use onceform::services::lifecycle::purge::run_pass;
use onceform::with_conn;

use crate::common::Db;
use crate::traffic::{self, Scenario, Stop, Tally};
use crate::Options;

/// The target for the accepts' p99 while a pass runs.
const TARGET_P99_MS: f64 = 50.0;
pub const CLIENTS: usize = 16;

/// The contact form's content is kept one hour.
const RETENTION: &str = "[worker]\nenabled = false\n\n[forms.contact.retention]\ncontent = \"1h\"";

/// Where the pass runs: its own process (`onceform purge`, from cron) or `serve`'s schedule
/// (on SQLite, each batch queued on the accepts' group-commit writer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    OwnProcess,
    Serve,
}

pub fn header() {
    println!(
        "| backend | pass run by | rows purged | pass s | accepts during the pass | accept p50 ms | accept p99 ms | \
         without a pass p50 / p99 ms | unexpected | met (p99 ≤ {TARGET_P99_MS:.0} ms) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
}

/// Measures and prints `backend`'s rows, one per place.
pub fn measure(rt: &tokio::runtime::Runtime, backend: &str, opts: &Options) {
    for place in [Place::OwnProcess, Place::Serve] {
        let db = Db::new(backend);
        let (path, config) = db.config(&format!("[purge]\nenabled = false\n\n{RETENTION}"));
        let pool = Pool::connect(&config.database).unwrap();
        let server = crate::serve(&path);
        crate::grow::fill(&db, &pool, opts.purge, 2);
        let alone =
            rt.block_on(traffic::run(&[server.address()], Scenario::Accept, CLIENTS, opts.seconds.min(3)));
        let done = Arc::new(AtomicBool::new(false));
        let (server, pass) = match place {
            Place::OwnProcess => {
                let (done, config) = (done.clone(), config.clone());
                let pass = std::thread::spawn(move || {
                    // Its own pool, as `onceform purge` has (in this process: `onceform purge`
                    // would first key the seeded rows' digests, which look like an old release's).
                    let pool = Pool::connect(&config.database).unwrap();
                    std::thread::sleep(Duration::from_millis(200)); // the accepts are under way
                    let report =
                        run_pass(&Writes::pooled(pool), &config, onceform::base::clock::now()).unwrap();
                    done.store(true, Ordering::Relaxed);
                    (report.total(), report.duration_ms)
                });
                (server, pass)
            }
            Place::Serve => {
                // A `serve` whose schedule starts a pass as it starts; done once it is recorded.
                drop(server);
                let (path, _) = db.config(RETENTION);
                let server = crate::serve(&path);
                let (done, pool) = (done.clone(), pool.clone());
                let pass = std::thread::spawn(move || loop {
                    if let Some(pass) = recorded_pass(&pool) {
                        done.store(true, Ordering::Relaxed);
                        return pass;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                });
                (server, pass)
            }
        };
        let addrs = [server.address()];
        let during = rt.block_on(traffic::run_until(&addrs, Scenario::Accept, CLIENTS, Stop::When(done)));
        let (rows, ms) = pass.join().unwrap();
        print(backend, place, rows, ms, &during, &alone);
        assert_eq!(rows, opts.purge as i64, "{backend}: every seeded row purged, once");
        assert_eq!(
            content_kept(&pool),
            during.created + alone.created,
            "{backend}: only the new accepts keep content"
        );
    }
}

fn print(backend: &str, place: Place, rows: i64, ms: i64, during: &Tally, alone: &Tally) {
    let met = if during.p99_ms <= TARGET_P99_MS { "yes" } else { "**no**" };
    let by = match place {
        Place::OwnProcess => "its own process",
        Place::Serve => "`serve`'s schedule",
    };
    println!(
        "| {backend} | {by} | {rows} | {:.1} | {} | {:.2} | {:.2} | {:.2} / {:.2} | {} | {met} |",
        ms as f64 / 1000.0,
        during.created,
        during.p50_ms,
        during.p99_ms,
        alone.p50_ms,
        alone.p99_ms,
        during.unexpected + alone.unexpected,
    );
}

/// The first pass recorded: (rows purged, milliseconds).
fn recorded_pass(pool: &Pool) -> Option<(i64, i64)> {
    with_conn!(pool, |c| purge_passes::table
        .select((purge_passes::purged_rows, purge_passes::duration_ms))
        .first(c)
        .optional()
        .map_err(DbError::from))
    .unwrap()
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
