//! Issue 25's default-`serve` rows: what `cargo run` users get, `serve` with its workers
//! inside (file CRM, mail as files, every other setting at its default), delivering while it
//! accepts, beside the web tier's rows (`[worker] enabled = false`) of the same run. wrk
//! sends new operations (unique emails at 16 clients, then one email at 16, each starting with
//! no effect due; then unique emails at 64) and replays; then the effects still due when the
//! traffic stopped, and how long they took to be SENT.

use std::time::{Duration, Instant};

use onceform::db::{DbError, Pool, Store};
use onceform::domain::EffectState;
use onceform::with_conn;

use crate::common::Db;
use crate::targets::Row;
use crate::traffic::Tally;
use crate::wrk::{self, Email};

/// How long the effects left at the end may take before the run gives up on them.
const DRAIN_LIMIT: Duration = Duration::from_secs(300);

/// The rows of `backend`'s default `serve` on a fresh database; `ceiling` is the
/// one-statement pgbench rate at 16 and 64 clients (PostgreSQL) and `web_tier` the web tier's
/// accept rate at 16 and 64, both measured earlier in the run. Empty without wrk.
pub fn measure(
    rt: &tokio::runtime::Runtime,
    backend: &str,
    seconds: u64,
    ceiling: &[(usize, f64)],
    web_tier: &[(usize, f64)],
) -> Vec<Row> {
    let db = Db::new(backend);
    let (path, config, crm) = db.default_config();
    let pool = Pool::connect(&config.database).unwrap();
    let server = crate::serve(&path);
    let addr = server.address();
    let accept = |clients, email| rt.block_on(wrk::accept(&addr, &db.dir, clients, seconds, email));
    let stats = || with_conn!(&pool, |c| c.stats().map_err(DbError::from)).unwrap();
    let count = |s: &onceform::db::Stats, states: &[EffectState]| {
        s.effects.iter().filter(|e| states.contains(&e.1)).map(|e| e.2).sum::<i64>()
    };
    // Still to deliver; the rest is SENT, or CANCELLED (the confirmation cap: one bot address).
    let due = |s: &onceform::db::Stats| {
        count(s, &[EffectState::Pending, EffectState::Sending, EffectState::Unknown])
    };
    // Waits until no effect is due: the effects due at the start, the seconds it took, and the
    // last statistics.
    let drain = || {
        let started = Instant::now();
        let mut s = stats();
        let at_start = due(&s);
        while due(&s) > 0 && started.elapsed() < DRAIN_LIMIT {
            std::thread::sleep(Duration::from_millis(100));
            s = stats();
        }
        (at_start, started.elapsed().as_secs_f64(), s)
    };
    // The two rows compared (unique emails and one email at 16 clients) each start with no
    // effect due, so neither is charged for delivering the other's.
    let Some(unique16) = accept(16, Email::Unique) else { return Vec::new() };
    drain();
    let Some(same16) = accept(16, Email::Same) else { return Vec::new() };
    drain();
    let Some(unique64) = accept(64, Email::Unique) else { return Vec::new() };
    let replay = rt.block_on(wrk::replay(&addr, &db.dir, 32, seconds, wrk::WARM_KEYS)).unwrap();
    let (due_at_end, drained, s) = drain();
    drop(server);

    let mut rows = Vec::new();
    let what = |w: &str| format!("default serve (workers inside): {w} (wrk)");
    for (clients, t) in [(16, &unique16), (64, &unique64)] {
        let mut text = Vec::new();
        let mut met = None;
        if let Some((_, c)) = ceiling.iter().find(|(n, _)| *n == clients) {
            let r = t.rate / c;
            text.push(format!("{r:.2} × one statement (target ≥ 0.5)"));
            met = Some(r >= 0.5);
        }
        if let Some((_, w)) = web_tier.iter().find(|(n, _)| *n == clients) {
            text.push(format!("{:.2} × the web tier's accept", t.rate / w));
        }
        rows.push(Row::new(&what("accept"), clients, t, text.join("; "), met));
    }
    let r = same16.rate / unique16.rate;
    let text = format!("{r:.2} × unique emails (target ≥ 0.7)");
    rows.push(Row::new(&what("same email on every request"), 16, &same16, text, Some(r >= 0.7)));
    let text = format!("p99 {:.2} ms", replay.p99_ms);
    rows.push(Row::new(&what("replay"), 32, &replay, text, None));
    let sent = |s: &onceform::db::Stats| count(s, &[EffectState::Sent]);
    let all = sent(&s) + count(&s, &[EffectState::Cancelled]) == s.effects_total();
    let text = format!(
        "{due_at_end} of {} effects due when the traffic stopped; none due {drained:.1} s after it",
        s.effects_total()
    );
    rows.push(Row::new(&what("effects still due at the end"), 0, &Tally::default(), text, Some(all)));

    // Every operation wrk saw accepted is stored, with at most one per connection more (a
    // request in flight when wrk stopped), three records each, all SENT (but capped
    // confirmations), one lead file each.
    let seen: usize = [&unique16, &unique64, &same16, &replay].iter().map(|t| t.created).sum();
    let in_flight = 16 + 64 + 16;
    let stored = usize::try_from(s.submissions).unwrap();
    let leads = std::fs::read_dir(crm.join("leads")).map_or(0, |d| d.count());
    let unexpected: usize = [&unique16, &unique64, &same16, &replay].iter().map(|t| t.unexpected).sum();
    let ok = (seen..=seen + in_flight).contains(&stored)
        && s.effects_total() == 3 * s.submissions
        && all
        && leads == stored
        && unexpected == 0;
    println!(
        "\ndefault serve consistency ({backend}): {stored} submissions for {seen} accepts seen, {} effect records, \
         {} SENT, {leads} lead files, {unexpected} unexpected answers: {}\n",
        s.effects_total(),
        sent(&s),
        if ok { "OK" } else { "FAILED" }
    );
    assert!(ok, "the default serve's consistency check failed on {backend}");
    rows
}
