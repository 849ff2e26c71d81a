//! The rows issue 11 asks for, measured side by side on one fresh database per backend:
//! the one-statement pgbench ceiling, PostgreSQL accept on a fresh and then an analysed
//! database, one identity's floods (one email; one name and company) against new visitors
//! (with the pair rows they left),
//! SQLite accept against the full ceiling (the accept transaction in-process, with its group
//! commit) and a transaction per accept, and replay latency at 32 clients (Rust
//! client and wrk). Each row names its target and whether this run met it. With the hooks'
//! traffic (issue 13), inbound deliveries at 16 clients beside accept at 16. Then the
//! default `serve` (workers inside) on a database of its own (`default_serve`, issues 25 and
//! 44): new persons, one-email and one-name floods at 16 and 64 clients from wrk, new-person
//! accept as a ratio to this run's ceiling (PostgreSQL: the one-statement pgbench; SQLite:
//! the full ceiling).

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use onceform::db::schema::duplicate_pairs;
use onceform::db::{DbError, Pool, Store};
use onceform::services::accept::Acceptor;
use onceform::with_conn;

use crate::common::{form_effects, Db};
use crate::hooks;
use crate::traffic::{self, Scenario, Tally};
use crate::{default_serve, in_process, pgbench, serve, serve_bin, wrk, Options};

pub struct Row {
    what: String,
    clients: usize,
    tally: Tally,
    /// How the row compares with its reference, and the target.
    ratio: String,
    met: Option<bool>,
}

impl Row {
    pub fn new(what: &str, clients: usize, tally: &Tally, ratio: String, met: Option<bool>) -> Row {
        Row { what: what.into(), clients, tally: tally.clone(), ratio, met }
    }
}

pub fn header() {
    println!("| backend | what | clients | req/s | p50 ms | p99 ms | compared with | met |");
    println!("|---|---|---|---|---|---|---|---|");
}

pub fn print(backend: &str, r: &Row) {
    let met = match r.met {
        Some(true) => "yes",
        Some(false) => "**no**",
        None => "",
    };
    println!(
        "| {backend} | {} | {} | {:.0} | {:.2} | {:.2} | {} | {met} |",
        r.what, r.clients, r.tally.rate, r.tally.p50_ms, r.tally.p99_ms, r.ratio
    );
}

/// Cells of this build and of the baseline in the order this, baseline, baseline, this,
/// twice, so that neither build always has the first turn on the machine: (this build's
/// four, the baseline's four). One cell varied by ±10 % within a build on this host
/// (docs/benchmarks/history.md, fourteenth session).
fn alternated<T>(mut here: impl FnMut() -> T, mut there: impl FnMut() -> T) -> (Vec<T>, Vec<T>) {
    let (mut h, mut t) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        h.push(here());
        t.push(there());
        t.push(there());
        h.push(here());
    }
    (h, t)
}

/// Accepts at `clients` from this build (one cell) or, with a baseline, from both builds
/// `alternated`, each side the mean of its cells.
fn abba(
    http: &mut impl FnMut(Scenario, usize) -> Tally,
    base: Option<&impl Fn(usize) -> Tally>,
    clients: usize,
) -> (Tally, Option<Tally>) {
    let Some(base) = base else { return (http(Scenario::Accept, clients), None) };
    let (here, there) = alternated(|| http(Scenario::Accept, clients), || base(clients));
    (Tally::mean(&here), Some(Tally::mean(&there)))
}

/// Measures and prints `backend`'s rows; checks the database's consistency at the end.
pub fn measure(rt: &tokio::runtime::Runtime, backend: &str, opts: &Options) {
    let db = Db::new(backend);
    let (path, config) = db.config(&hooks::with_source("[worker]\nenabled = false"));
    let pool = Pool::connect(&config.database).unwrap();
    let server = serve(&path);
    let addrs = [server.address()];
    let secs = opts.seconds;
    let mut accepted = 0;
    let mut http = |scenario: Scenario, clients: usize| {
        let t = rt.block_on(traffic::run(&addrs, scenario, clients, secs));
        assert_eq!(t.unexpected, 0, "{backend} {}: unexpected answers", scenario.name());
        accepted += t.created;
        t
    };
    let mut rows = Vec::new();
    let row = Row::new;
    let mut ceilings = Vec::new();
    // Accept first, on the fresh database: no ANALYZE has run yet. With `--baseline`, the
    // other build's `serve` on a fresh database of its own runs the same traffic, the accept
    // cells `alternated`, so that both see the same state of the machine and neither always
    // goes first; it runs
    // only while it is measured, as PostgreSQL's 100 connections do not hold two servers'
    // pools beside pgbench's.
    let start_baseline = || {
        opts.baseline.as_deref().map(|bin| {
            let db = Db::new(backend);
            let (path, _) = db.config(&hooks::with_source("[worker]\nenabled = false"));
            // A build from before the file store, the journey mapping and the pid file (issue
            // 26's "before", 16b06cb) knows neither `files_dir`, `pid_file` nor a `journey_id`
            // CRM field; it needs none of them.
            let text = std::fs::read_to_string(&path).unwrap().replace(", journey_id = \"journey_id\"", "");
            let text: Vec<&str> =
                text.lines().filter(|l| !l.starts_with("files_dir") && !l.starts_with("pid_file")).collect();
            std::fs::write(&path, text.join("\n")).unwrap();
            let server = serve_bin(bin, &path);
            (server, db) // the server stops before its database is dropped
        })
    };
    let mut baseline = start_baseline();
    let base = baseline.as_ref().map(|(server, _)| {
        move |clients: usize| {
            let t = rt.block_on(traffic::run(&[server.address()], Scenario::Accept, clients, secs));
            assert_eq!(t.unexpected, 0, "{backend} baseline: unexpected answers");
            t
        }
    });
    let (fresh16, base16) = abba(&mut http, base.as_ref(), 16);
    let (fresh64, base64) = abba(&mut http, base.as_ref(), 64);
    // Replays (wrk, keys in the replay memory) `alternated`, each side the mean of its four
    // cells: one cell each varied by 10–20 % within a run on this host.
    let replay_pair = baseline.as_ref().map(|(server, db_base)| {
        let here = || rt.block_on(wrk::replay(&addrs[0], &db.dir, 32, secs, wrk::WARM_KEYS));
        let there = || rt.block_on(wrk::replay(&server.address(), &db_base.dir, 32, secs, wrk::WARM_KEYS));
        let mean =
            |cells: Vec<Option<Tally>>| Some(Tally::mean(&cells.into_iter().collect::<Option<Vec<_>>>()?));
        let (h, t) = alternated(here, there);
        (mean(h), mean(t))
    });
    drop(baseline);
    let (unique16, label) = if db.is_pg() {
        pool_batch(&pool, "ANALYZE");
        (http(Scenario::Accept, 16), "accept after ANALYZE")
    } else {
        (fresh16.clone(), "")
    };
    let floods16 = [Scenario::SameEmail, Scenario::SameName].map(|s| (s, http(s, 16)));
    let replay32 = http(Scenario::Replay, 32);
    let wrk32 = rt.block_on(wrk::replay(&addrs[0], &db.dir, 32, secs, wrk::WARM_KEYS));
    let cold32 = rt.block_on(wrk::replay(&addrs[0], &db.dir, 32, secs, wrk::COLD_KEYS));
    for w in [&wrk32, &cold32].into_iter().flatten() {
        // Every replay answered 200: a body other than the accepted one would time 409s.
        assert_eq!(w.unexpected, 0, "{backend} replay (wrk): unexpected answers");
    }
    let mut hooks_sent = hooks::Sent::default();
    let mut base_hooks = Vec::new();
    baseline = start_baseline().filter(|_| opts.hooks);
    let hooks16: Vec<(hooks::Mode, Tally)> = hooks::Mode::ALL
        .into_iter()
        .filter(|_| opts.hooks)
        .map(|mode| {
            let run = rt.block_on(hooks::run(&addrs[0], mode, 16, secs));
            assert_eq!(run.tally.unexpected, 0, "{backend} {}: unexpected answers", mode.name());
            hooks_sent.add(&run);
            if let Some((server, _)) = &baseline {
                let b = rt.block_on(hooks::run(&server.address(), mode, 16, secs));
                assert_eq!(b.tally.unexpected, 0, "{backend} baseline {}: unexpected answers", mode.name());
                base_hooks.push(b.tally);
            }
            (mode, run.tally)
        })
        .collect();
    drop(baseline);
    // The replays' keys were accepted first (the baseline's on its own database).
    let here = replay_pair.as_ref().and_then(|(here, _)| here.as_ref());
    for w in [&wrk32, &cold32].into_iter().flatten().chain(here) {
        accepted += w.created;
    }
    if db.is_pg() {
        let one = |clients| {
            let (n, tps) = pgbench::run_script(&db.url, &db.dir, clients, secs, pgbench::ONE_STATEMENT)?;
            Some((n, Tally::rate_only(tps)))
        };
        let (one16, one64) = (one(16), one(64));
        for (clients, fresh, ceiling) in [(16, &fresh16, &one16), (64, &fresh64, &one64)] {
            if let Some((n, c)) = ceiling {
                accepted += n;
                ceilings.push((clients, c.rate));
                rows.push(row(
                    "pgbench: one statement (submission + 3 effects)",
                    clients,
                    c,
                    String::new(),
                    None,
                ));
                let r = fresh.rate / c.rate;
                let text = format!("{r:.2} × one statement (target ≥ 0.5, goal 0.7)");
                rows.push(row("accept, fresh database", clients, fresh, text, Some(r >= 0.5)));
            }
        }
        let r = unique16.rate / fresh16.rate;
        // A fresh database must be as fast as an analysed one: analysed at most 10 % faster.
        let text = format!("{r:.2} × fresh (target within 10 %)");
        rows.push(row(label, 16, &unique16, text, Some(r <= 1.1)));
    } else {
        let keyring = crate::common::keyring(&config);
        let acceptor = Acceptor::start(config.clone().into(), pool.clone(), keyring.clone()).unwrap();
        let baseline_acceptor =
            Acceptor::one_transaction_each(config.clone().into(), pool.clone(), keyring).unwrap();
        for (clients, fresh) in [(16, &fresh16), (64, &fresh64)] {
            // The full ceiling (issue 44): the accept transaction with its group commit,
            // in-process, at the same concurrency.
            let (n, full) = in_process(&config, clients, secs, |i| acceptor.accept(i).is_ok());
            accepted += n;
            ceilings.push((clients, full.rate));
            rows.push(row("ceiling (in-process, group commit)", clients, &full, String::new(), None));
            let (n, baseline) = in_process(&config, clients, secs, |i| baseline_acceptor.accept(i).is_ok());
            accepted += n;
            rows.push(row("baseline: a transaction per accept", clients, &baseline, String::new(), None));
            let (r, b) = (fresh.rate / full.rate, fresh.rate / baseline.rate);
            let text = format!("{r:.2} × the ceiling (target ≥ 0.75); {b:.2} × a transaction per accept");
            rows.push(row("accept (group commit)", clients, fresh, text, Some(r >= 0.75)));
        }
    }
    for (clients, fresh, base) in [(16, &fresh16, &base16), (64, &fresh64, &base64)] {
        if let Some(b) = base {
            rows.push(row("accept, fresh database: the baseline build", clients, b, String::new(), None));
            let r = fresh.rate / b.rate;
            let text = format!("{r:.2} × the baseline build (target ≥ 0.9)");
            rows.push(row("accept, fresh database: this build", clients, fresh, text, Some(r >= 0.9)));
        }
    }
    if let Some((Some(here), Some(there))) = &replay_pair {
        rows.push(row("replay (wrk): the baseline build", 32, there, String::new(), None));
        let r = here.rate / there.rate;
        let text =
            format!("{r:.2} × the baseline build, p99 {:.2} ms against {:.2} ms", here.p99_ms, there.p99_ms);
        rows.push(row("replay (wrk): this build", 32, here, text, Some(r >= 0.95)));
    }
    // Issue 44: one identity flooding costs others nothing (≥ 0.7 × new visitors, p99 < 50 ms).
    for (scenario, t) in &floods16 {
        let r = t.rate / unique16.rate;
        let text = format!("{r:.2} × new visitors (target ≥ 0.7), p99 {:.2} ms (target < 50)", t.p99_ms);
        rows.push(row(scenario.name(), 16, t, text, Some(r >= 0.7 && t.p99_ms < 50.0)));
    }
    let p99 = |t: &Tally| (format!("p99 {:.2} ms (target ≤ 5)", t.p99_ms), Some(t.p99_ms <= 5.0));
    let (text, met) = p99(&replay32);
    rows.push(row("replay (Rust client)", 32, &replay32, text, met));
    if let Some(w) = &wrk32 {
        let (text, met) = p99(w);
        rows.push(row("replay (wrk)", 32, w, text, met));
    }
    if let Some(w) = &cold32 {
        let text = format!("p99 {:.2} ms (target ≤ 10)", w.p99_ms);
        rows.push(row(
            "replay out of the replay memory (wrk, 30,000 keys)",
            32,
            w,
            text,
            Some(w.p99_ms <= 10.0),
        ));
    }
    for (i, (mode, t)) in hooks16.iter().enumerate() {
        let text = format!("{:.2} × accept at 16 clients", t.rate / unique16.rate);
        rows.push(row(mode.name(), 16, t, text, None));
        if let Some(b) = base_hooks.get(i) {
            let what = format!("{}: the baseline build", mode.name());
            let text = format!("p99 {:.2} ms here, {:.2} ms in the baseline build", t.p99_ms, b.p99_ms);
            rows.push(row(&what, 16, b, text, None));
        }
    }
    for r in &rows {
        print(backend, r);
    }
    // The server screens what is left before the check (its screener scores the pairs).
    check(backend, &pool, accepted);
    drop(server);
    if opts.hooks {
        hooks::check(backend, &pool, &hooks_sent);
    }
    // The default `serve` on a database of its own, once the web tier's server has stopped
    // and its database is gone (its autovacuum would run beside the rows). On PostgreSQL it
    // measures its own one-statement ceiling, in the state of the cluster its rows see.
    let web_tier = [(16, fresh16.rate), (64, fresh64.rate)];
    let ceiling = match db.is_pg() {
        true => default_serve::Ceiling { name: "one statement", target: 0.6, rates: Vec::new() },
        false => default_serve::Ceiling { name: "the ceiling", target: 0.75, rates: ceilings },
    };
    drop(pool);
    drop(db);
    for r in default_serve::measure(rt, backend, secs, &ceiling, &web_tier) {
        print(backend, &r);
    }
}

fn pool_batch(pool: &Pool, sql: &str) {
    with_conn!(pool, |c| c.batch_execute(sql).map_err(DbError::from)).unwrap();
}

/// Submissions = operations accepted, 3 effect records each, at most one pair per submission
/// once the screener has scored every pair (it keeps one of a submission's candidates).
fn check(backend: &str, pool: &Pool, accepted: usize) {
    let unscored = || -> i64 {
        with_conn!(pool, |c| duplicate_pairs::table
            .filter(duplicate_pairs::status.eq(onceform::domain::PairStatus::Screening.as_str()))
            .count()
            .get_result(c)
            .map_err(DbError::from))
        .unwrap()
    };
    let waited = std::time::Instant::now();
    while unscored() > 0 && waited.elapsed() < std::time::Duration::from_secs(120) {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let (stats, pairs, paired) = with_conn!(pool, |c| {
        let counts = |c: &mut _| -> Result<(onceform::db::Stats, i64, i64), DbError> {
            let stats = Store::stats(c)?;
            let pairs: i64 = duplicate_pairs::table.count().get_result(c)?;
            let paired: i64 = duplicate_pairs::table
                .select(diesel::dsl::sql::<diesel::sql_types::BigInt>("COUNT(DISTINCT duplicate_id)"))
                .get_result(c)?;
            Ok((stats, pairs, paired))
        };
        counts(c)
    })
    .unwrap();
    let statuses: Vec<(String, i64)> = with_conn!(pool, |c| duplicate_pairs::table
        .group_by(duplicate_pairs::status)
        .select((duplicate_pairs::status, diesel::dsl::count_star()))
        .load(c)
        .map_err(DbError::from))
    .unwrap();
    let effects = form_effects(&stats);
    let ok = stats.submissions == accepted as i64 && effects == 3 * stats.submissions && pairs == paired;
    println!(
        "\ntargets' consistency ({backend}): {} submissions for {accepted} operations accepted, {} effect \
         records, {pairs} pair rows ({statuses:?}) for {paired} paired submissions: {}\n",
        stats.submissions,
        effects,
        if ok { "OK" } else { "FAILED" }
    );
    assert!(ok, "consistency check failed on {backend}");
}
