//! A burst with the default configuration (issue 11, item 5: "a 20-second burst at full
//! accept rate is fully delivered within 60 s after it ends"): one `serve` on SQLite with the
//! embedded file CRM, mail as files and its workers inside, every other setting at its default.
//! 16 clients accept as fast as it answers for `--burst N` seconds; then the time until every
//! effect is SENT. Also the `serve` process's CPU time per effect while it only drains.

use std::time::{Duration, Instant};

use onceform::db::{DbError, Pool, Store};
use onceform::domain::EffectState;
use onceform::with_conn;

use crate::common::Db;
use crate::traffic::{self, Scenario};
use crate::Options;

/// The target: delivered within this long after the burst ends.
const TARGET_SECONDS: f64 = 60.0;
const CLIENTS: usize = 16;

pub fn run(rt: &tokio::runtime::Runtime, opts: &Options) {
    let db = Db::new("sqlite");
    let (crm, mail) = (db.dir.join("crm"), db.dir.join("mail"));
    let (path, config) = db.config(&format!(
        "[crm]\nadapter = \"file\"\ndir = {:?}\n\n[smtp]\nmail_dir = {:?}",
        crm.display().to_string(),
        mail.display().to_string()
    ));
    assert!(config.worker.enabled, "the default configuration runs the workers inside serve");
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
