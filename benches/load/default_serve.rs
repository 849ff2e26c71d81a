//! Issue 25's and issue 44's default-`serve` rows: what `cargo run` users get, `serve` with
//! its workers inside (file CRM, mail as files, every other setting at its default),
//! delivering while it accepts, beside the web tier's rows (`[worker] enabled = false`) of
//! the same run. wrk sends new operations at 16 and then 64 clients: a new person each
//! (their own email, name and company), then one email flooding, then one name and company
//! flooding (issue 44), each cell starting with no effect due; then replays; then the
//! effects still due when the traffic stopped, and how long they took to be SENT. New-person
//! accept is compared with the same run's ceiling (`Ceiling`), each flood with new-person
//! accept at its concurrency.

use std::time::{Duration, Instant};

use onceform::db::{DbError, Pool, Store};
use onceform::domain::EffectState;
use onceform::with_conn;

use crate::common::Db;
use crate::targets::Row;
use crate::traffic::Tally;
use crate::wrk::{self, Visitor};

/// How long the effects left at the end may take before the run gives up on them.
const DRAIN_LIMIT: Duration = Duration::from_secs(300);

/// The same run's ceiling for new-person accept: what it is, the target ratio, and its rate
/// at each concurrency measured.
pub struct Ceiling {
    pub name: &'static str,
    pub target: f64,
    pub rates: Vec<(usize, f64)>,
}

impl Ceiling {
    /// None measured (`--only-serve`): the rows without a ratio to it.
    pub fn none() -> Ceiling {
        Ceiling { name: "", target: 0.0, rates: Vec::new() }
    }
}

/// The rows of `backend`'s default `serve` on a fresh database; `ceiling` names what
/// new-person accept is compared with and its target (SQLite: the accept transaction
/// in-process, measured earlier in the run; PostgreSQL: the one statement, measured here by
/// `pg_ceiling` just before), and `web_tier` is the web tier's accept rate at 16 and 64.
/// Empty without wrk.
pub fn measure(
    rt: &tokio::runtime::Runtime,
    backend: &str,
    seconds: u64,
    ceiling: &Ceiling,
    web_tier: &[(usize, f64)],
) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut ceiling = Ceiling { name: ceiling.name, target: ceiling.target, rates: ceiling.rates.clone() };
    if backend == "postgres" && !ceiling.name.is_empty() {
        ceiling.rates = pg_ceiling(seconds);
        for (clients, rate) in &ceiling.rates {
            let what = "pgbench: one statement, on a database of its own just before";
            rows.push(Row::new(
                what,
                *clients,
                &crate::traffic::Tally::rate_only(*rate),
                String::new(),
                None,
            ));
        }
    }
    let db = Db::new(backend);
    let (path, config, crm) = db.default_config();
    let pool = Pool::connect(&config.database).unwrap();
    let server = crate::serve(&path);
    let addr = server.address();
    let accept = |clients, visitor| rt.block_on(wrk::accept(&addr, &db.dir, clients, seconds, visitor));
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
    // Each cell starts with no effect due, so that none is charged for delivering another's.
    let mut cells = Vec::new();
    for clients in [16, 64] {
        for visitor in [Visitor::New, Visitor::SameEmail, Visitor::SameName] {
            drain();
            let Some(t) = accept(clients, visitor) else { return Vec::new() };
            cells.push((clients, visitor, t));
        }
    }
    let replay = rt.block_on(wrk::replay(&addr, &db.dir, 32, seconds, wrk::WARM_KEYS)).unwrap();
    let (due_at_end, drained, s) = drain();
    drop(server);

    let what = |w: &str| format!("default serve (workers inside): {w} (wrk)");
    let new_person = |clients| cells.iter().find(|c| c.0 == clients && c.1 == Visitor::New).map(|c| c.2.rate);
    for (clients, visitor, t) in &cells {
        let mut text = Vec::new();
        let mut met = None;
        if *visitor == Visitor::New {
            if let Some((_, c)) = ceiling.rates.iter().find(|(n, _)| n == clients) {
                let r = t.rate / c;
                text.push(format!("{r:.2} × {} (target ≥ {})", ceiling.name, ceiling.target));
                met = Some(r >= ceiling.target);
            }
            if let Some((_, w)) = web_tier.iter().find(|(n, _)| n == clients) {
                text.push(format!("{:.2} × the web tier's accept", t.rate / w));
            }
        } else if let Some(new) = new_person(*clients) {
            // Issue 44: one identity flooding costs others nothing (≥ 0.7 × new persons,
            // p99 < 50 ms at 16 clients).
            let r = t.rate / new;
            let p99 = *clients > 16 || t.p99_ms < 50.0;
            let limit = if *clients == 16 { " (target < 50)" } else { "" };
            text.push(format!("{r:.2} × new persons (target ≥ 0.7), p99 {:.2} ms{limit}", t.p99_ms));
            met = Some(r >= 0.7 && p99);
        }
        rows.push(Row::new(&what(visitor.name()), *clients, t, text.join("; "), met));
    }
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
    let all_cells = || cells.iter().map(|c| &c.2).chain([&replay]);
    let seen: usize = all_cells().map(|t| t.created).sum();
    let in_flight: usize = cells.iter().map(|c| c.0).sum();
    let stored = usize::try_from(s.submissions).unwrap();
    let leads = std::fs::read_dir(crm.join("leads")).map_or(0, |d| d.count());
    let unexpected: usize = all_cells().map(|t| t.unexpected).sum();
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

/// PostgreSQL: the one statement (`pgbench::ONE_STATEMENT`) at 16 and 64 clients on a fresh
/// database of its own, dropped before the default `serve`'s rows start.
fn pg_ceiling(seconds: u64) -> Vec<(usize, f64)> {
    let db = Db::new("postgres");
    let (_, config) = db.config("");
    drop(Pool::connect(&config.database).unwrap()); // migrated
    let one = |clients| {
        crate::pgbench::run_script(&db.url, &db.dir, clients, seconds, crate::pgbench::ONE_STATEMENT)
    };
    [16, 64].into_iter().filter_map(|clients| Some((clients, one(clients)?.1))).collect()
}
