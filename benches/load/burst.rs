//! A burst with the default configuration (issue 11, item 5: "a 20-second burst at full
//! accept rate is fully delivered within 60 s after it ends"): one `serve` on SQLite with the
//! embedded file CRM, mail as files and its workers inside, every other setting at its default.
//! 16 clients accept as fast as it answers for `--burst N` seconds; then the time until every
//! effect is SENT. Also the `serve` process's CPU time per effect while it only drains. Then
//! the screening burst (`screening`).

use std::time::{Duration, Instant};

use diesel::prelude::*;
use onceform::db::schema::duplicate_pairs;
use onceform::db::{DbError, Pool, Store};
use onceform::domain::{EffectState, PairStatus};
use onceform::with_conn;

use crate::common::Db;
use crate::traffic::{self, Scenario};
use crate::Options;

/// The target: delivered within this long after the burst ends.
const TARGET_SECONDS: f64 = 60.0;
const CLIENTS: usize = 16;

pub fn run(rt: &tokio::runtime::Runtime, opts: &Options) {
    let db = Db::new("sqlite");
    let (path, config, crm) = db.default_config();
    let pool = Pool::connect(&config.database).unwrap();
    let server = crate::serve(&path);
    let tally = rt.block_on(traffic::run(&[server.address()], Scenario::Accept, CLIENTS, opts.burst));
    let burst_end = Instant::now();
    let cpu_at_end = server.cpu_seconds();
    let stats = || with_conn!(&pool, |c| c.stats().map_err(DbError::from)).unwrap();
    let sent = |s: &onceform::db::Stats| {
        s.effects.iter().filter(|e| e.1 == EffectState::Sent).map(|e| e.2).sum::<i64>()
    };
    let mut s = stats();
    let sent_at_end = sent(&s);
    let limit = Duration::from_secs_f64(TARGET_SECONDS * 5.0);
    while sent(&s) < s.effects_total() && burst_end.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(100));
        s = stats();
    }
    let drained = burst_end.elapsed().as_secs_f64();
    let cpu_per_effect = (server.cpu_seconds() - cpu_at_end) / (sent(&s) - sent_at_end).max(1) as f64;
    drop(server);
    let all = sent(&s) == s.effects_total();
    let met = if all && drained <= TARGET_SECONDS { "yes" } else { "**no**" };
    println!(
        "| sqlite | burst: accept for {} s, default configuration (file CRM, file mail, workers in serve) | \
         {CLIENTS} | {:.0} | {:.2} | {:.2} | {} effects ({} SENT during the burst), every effect SENT {drained:.1} s \
         after it (target ≤ {TARGET_SECONDS:.0} s); serve CPU {:.2} ms per effect drained after it | {met} |",
        opts.burst,
        tally.rate,
        tally.p50_ms,
        tally.p99_ms,
        s.effects_total(),
        sent_at_end,
        cpu_per_effect * 1000.0
    );
    let leads = std::fs::read_dir(crm.join("leads")).map_or(0, |d| d.count());
    let ok = s.submissions == tally.created as i64
        && s.effects_total() == 3 * s.submissions
        && all
        && leads == tally.created
        && tally.unexpected == 0;
    println!(
        "\nburst consistency: {} submissions for {} operations accepted, {} effect records, {} SENT, {leads} \
         lead files, {} unexpected answers: {}\n",
        s.submissions,
        tally.created,
        s.effects_total(),
        sent(&s),
        tally.unexpected,
        if ok { "OK" } else { "FAILED" }
    );
    assert!(ok, "the burst run's consistency check failed");
}

/// The duplicate screener through a burst (issue 22: "every pair is scored within 60 s of the
/// burst's end"): the default configuration as above, `--burst N` seconds of accepts of which
/// every fourth repeats the visitor of 401 requests before; then the time until no pair is
/// left unscored (`screening`). On each backend.
pub fn screening(rt: &tokio::runtime::Runtime, opts: &Options, backend: &str) {
    let db = Db::new(backend);
    let (path, config, _) = db.default_config();
    let pool = Pool::connect(&config.database).unwrap();
    let server = crate::serve(&path);
    let tally = rt.block_on(traffic::run(&[server.address()], Scenario::Repeats, CLIENTS, opts.burst));
    let burst_end = Instant::now();
    let count = |screening: bool| -> i64 {
        with_conn!(&pool, |c| {
            let q = duplicate_pairs::table.into_boxed();
            let q = if screening {
                q.filter(duplicate_pairs::status.eq(PairStatus::Screening.as_str()))
            } else {
                q
            };
            q.count().get_result::<i64>(c).map_err(DbError::from)
        })
        .unwrap()
    };
    let unscored_at_end = count(true);
    let limit = Duration::from_secs_f64(TARGET_SECONDS * 5.0);
    while count(true) > 0 && burst_end.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(100));
    }
    let scored_after = burst_end.elapsed().as_secs_f64();
    let (pairs, left) = (count(false), count(true));
    let statuses: Vec<(String, i64)> = with_conn!(&pool, |c| {
        duplicate_pairs::table
            .group_by(duplicate_pairs::status)
            .select((duplicate_pairs::status, diesel::dsl::count_star()))
            .load(c)
            .map_err(DbError::from)
    })
    .unwrap();
    drop(server);
    let statuses: Vec<String> = statuses.iter().map(|(s, n)| format!("{n} {s}")).collect();
    // The screener keeps the pairs it opens or lists apart and drops the rest.
    let met = if left == 0 && scored_after <= TARGET_SECONDS && pairs > 0 { "yes" } else { "**no**" };
    println!(
        "| {backend} | burst: accept for {} s, a repeat in every four, default configuration | {CLIENTS} | {:.0} | \
         {:.2} | {:.2} | {unscored_at_end} pairs unscored at its end; every pair scored {scored_after:.1} s after it \
         (target ≤ {TARGET_SECONDS:.0} s); {} accepts left {} | {met} |",
        opts.burst,
        tally.rate,
        tally.p50_ms,
        tally.p99_ms,
        tally.created,
        statuses.join(", ")
    );
    assert_eq!(tally.unexpected, 0, "the screening burst had unexpected answers");
}
