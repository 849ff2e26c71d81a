//! The benchmark: onceform over HTTP against its own database ceiling, on SQLite and
//! PostgreSQL, in one run.
//!
//! `cargo bench --bench load [-- --quick] [--seconds N] [--grow N|0] [--drain N|0] [--clients 1,16,32,64]
//!  [--backend sqlite|postgres] [--traffic accept,email-flood,name-flood,replay,mixed,conflict,hooks,attach]
//!  [--only-targets] [--no-targets]
//!  [--pgbouncer] [--purge N|0] [--burst N|0] [--only-burst] [--only-purge] [--only-attach] [--only-serve] [--baseline PATH]`
//!
//! First the targets of issue 11 (`load/targets.rs`) on a fresh database per backend and,
//! with `--pgbouncer`, four `serve` and two `worker` processes through pgbouncer
//! (`load/pgbouncer.rs`); then issue 12's accepts during a retention pass of `--purge N`
//! rows (default 100 k, 0 skips; `load/purge.rs`), and a burst of `--burst N` seconds of accepts
//! (default 20, 0 skips) into one `serve` with the default configuration, timed until every
//! effect is delivered, and on each backend a burst with repeated visitors, timed until every
//! duplicate pair is scored (`load/burst.rs`); `--only-targets` stops there. Issue 44's table in one
//! run: `--only-targets --purge 0 --burst 0 --traffic accept,email-flood,name-flood` (the
//! targets and the default `serve`'s rows, each ratio to a ceiling of the same run). `--baseline PATH`
//! runs another build's `serve` beside this one's fresh-database accepts (`load/targets.rs`).
//! After the targets, issue 23's accepts with a 1 MiB attachment per request against the
//! limit of the idea, and the server's peak RSS at 1 and 64 uploads at once, and at 64 with
//! 4 MiB files (`load/attach.rs`;
//! `--traffic attach`, and by default; `--only-attach` runs them alone). `--only-serve` runs
//! the default `serve` rows alone (`load/default_serve.rs`).
//!
//! Per backend: the ceiling (the accept transaction through onceform's database layer,
//! in-process, at the same concurrency, as the service runs it: `Acceptor`, with SQLite's
//! group commit) and the baseline (one transaction per accept, `Acceptor::one_transaction_each`), then accept / replay / mixed / conflict traffic over
//! HTTP at 1, 16 and 64 clients (requests/s, p50, p99, ratio to the ceiling, the server's peak
//! RSS), new visitors first (`accept`: a new email, name and company each), then one
//! identity flooding with fresh operation IDs (`email-flood`: one address; `name-flood`: one
//! name and company, a new address each; issue 44), each also as a ratio to `accept`, inbound webhook deliveries (`load/hooks.rs`: `POST /hooks/bench`, Standard Webhooks
//! signed, unique event IDs and one event ID replayed; `--traffic hooks`), latency growth with 10 k and `--grow` (default 1 M) submissions stored, and on
//! PostgreSQL two `serve` processes sharing the database. Every response's status is checked;
//! the run ends with a consistency check of the database (submissions = distinct operations
//! accepted, effect records = 3 × submissions, no 5xx; stored events = distinct event IDs sent,
//! one record per handler each) and fails loudly if it does not hold.
//! Then the query plans at the largest size, and the workers' drain rate with one and two
//! `worker` processes (`--drain N` submissions, 0 skips; `--bench drain` runs it alone).
//! Nothing here is a pass/fail timing test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "load/attach.rs"]
mod attach;
#[path = "load/burst.rs"]
mod burst;
#[path = "common/mod.rs"]
mod common;
#[path = "load/default_serve.rs"]
mod default_serve;
#[path = "load/grow.rs"]
mod grow;
#[path = "load/hooks.rs"]
mod hooks;
#[path = "load/pgbench.rs"]
mod pgbench;
#[path = "load/pgbouncer.rs"]
mod pgbouncer;
#[path = "load/plans.rs"]
mod plans;
#[path = "load/purge.rs"]
mod purge;
#[path = "load/targets.rs"]
mod targets;
#[path = "load/traffic.rs"]
mod traffic;
#[path = "load/wrk.rs"]
mod wrk;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{inquiry, Db, Process};
use diesel::connection::SimpleConnection;
use onceform::config::Config;
use onceform::db::{DbError, Pool, Store};
use onceform::domain::{normalise, OperationId};
use onceform::services::accept::{Acceptor, Intake};
use onceform::services::request_log::Channel;
use onceform::with_conn;
use traffic::{Scenario, Tally};

pub struct Options {
    pub seconds: u64,
    pub grow: usize,
    pub clients: Vec<usize>,
    pub backends: Vec<String>,
    pub scenarios: Vec<Scenario>,
    /// Inbound webhook rows (`--traffic hooks`, and by default).
    pub hooks: bool,
    /// Accepts with a 1 MiB attachment each (`--traffic attach`, and by default).
    pub attach: bool,
    /// Only those (`--only-attach`).
    pub only_attach: bool,
    /// Submissions seeded for the drain runs (0 skips them).
    pub drain: usize,
    /// Only the targets' rows of issue 11 (`--only-targets`).
    pub only_targets: bool,
    /// Only the default `serve` rows of issue 25 (`--only-serve`), without the ratios to
    /// rows of other runs.
    pub only_serve: bool,
    /// Also four `serve` and two `worker` processes through pgbouncer (`--pgbouncer`).
    pub pgbouncer: bool,
    /// Rows purged while accepts run (`--purge N`, 0 skips).
    pub purge: usize,
    /// Seconds of the default configuration's burst (`--burst N`, 0 skips).
    pub burst: u64,
    /// Only the burst (`--only-burst`).
    pub only_burst: bool,
    /// Only the accepts during a retention pass (`--only-purge`).
    pub only_purge: bool,
    /// Without the targets (`--no-targets`): the main table's rows sooner.
    pub no_targets: bool,
    /// Another build's binary whose fresh-database accepts are measured beside this build's,
    /// interleaved, each on a fresh database of its own (`--baseline PATH`).
    pub baseline: Option<std::path::PathBuf>,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let quick = args.iter().any(|a| a == "--quick");
    let traffic = value("--traffic");
    Options {
        seconds: value("--seconds").and_then(|v| v.parse().ok()).unwrap_or(if quick { 2 } else { 5 }),
        grow: value("--grow").and_then(|v| v.parse().ok()).unwrap_or(if quick { 100_000 } else { 1_000_000 }),
        clients: value("--clients")
            .map(|v| v.split(',').filter_map(|n| n.parse().ok()).collect())
            .unwrap_or_else(|| vec![1, 16, 32, 64]),
        backends: value("--backend")
            .map(|b| vec![b])
            .unwrap_or_else(|| vec!["sqlite".into(), "postgres".into()]),
        scenarios: traffic
            .as_ref()
            .map(|v| Scenario::ALL.into_iter().filter(|s| v.split(',').any(|n| n == s.option())).collect())
            .unwrap_or_else(|| Scenario::ALL.to_vec()),
        hooks: traffic.as_ref().is_none_or(|v| v.split(',').any(|n| n == "hooks")),
        attach: traffic.as_ref().is_none_or(|v| v.split(',').any(|n| n == "attach")),
        only_attach: args.iter().any(|a| a == "--only-attach"),
        drain: value("--drain").and_then(|v| v.parse().ok()).unwrap_or(if quick { 1000 } else { 5000 }),
        only_targets: args.iter().any(|a| a == "--only-targets"),
        only_serve: args.iter().any(|a| a == "--only-serve"),
        pgbouncer: args.iter().any(|a| a == "--pgbouncer"),
        purge: value("--purge").and_then(|v| v.parse().ok()).unwrap_or(if quick { 20_000 } else { 100_000 }),
        burst: value("--burst").and_then(|v| v.parse().ok()).unwrap_or(if quick { 5 } else { 20 }),
        only_burst: args.iter().any(|a| a == "--only-burst"),
        only_purge: args.iter().any(|a| a == "--only-purge"),
        no_targets: args.iter().any(|a| a == "--no-targets"),
        baseline: value("--baseline").map(Into::into),
    }
}

fn main() {
    let opts = options();
    println!("onceform load benchmark: {} s per cell, clients {:?}\n", opts.seconds, opts.clients);
    if opts.only_burst {
        targets::header();
        bursts(&opts);
        return;
    }
    if opts.only_attach {
        attachments(&opts);
        return;
    }
    if opts.only_serve {
        targets::header();
        for backend in opts.backends.iter().map(String::as_str) {
            for r in default_serve::measure(
                &rt_for_targets(),
                backend,
                opts.seconds,
                &default_serve::Ceiling::none(),
                &[],
            ) {
                targets::print(backend, &r);
            }
        }
        return;
    }
    if !opts.only_purge && !opts.no_targets {
        println!("Targets (issue 11), each backend on a fresh database:\n");
        targets::header();
        for backend in opts.backends.iter().map(String::as_str) {
            targets::measure(&rt_for_targets(), backend, &opts);
        }
    }
    if opts.pgbouncer && opts.backends.iter().any(|b| b == "postgres") {
        pgbouncer::run(&rt_for_targets(), &opts);
    }
    if opts.attach && !opts.only_purge {
        attachments(&opts);
    }
    if opts.purge > 0 {
        println!(
            "\nAccepts during a retention pass of {} rows (issue 12), {} clients:\n",
            opts.purge,
            purge::CLIENTS
        );
        purge::header();
        for backend in opts.backends.iter().map(String::as_str) {
            purge::measure(&rt_for_targets(), backend, &opts);
        }
    }
    if opts.only_purge {
        return;
    }
    if opts.burst > 0 {
        println!(
            "\nA burst into the default configuration (issues 11 and 22), then its delivery and screening:\n"
        );
        targets::header();
        bursts(&opts);
    }
    if opts.only_targets {
        return;
    }
    println!(
        "| backend | traffic | clients | req/s | p50 ms | p99 ms | × ceiling | × pgbench | × accept | server peak RSS MiB | unexpected |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let (mut growth_rows, mut plans) = (Vec::new(), Vec::new());
    for backend in opts.backends.iter().map(String::as_str) {
        let db = Db::new(backend);
        let (path, config) = db.config(&hooks::with_source("[worker]\nenabled = false"));
        let pool = Pool::connect(&config.database).unwrap();
        let acceptor =
            Acceptor::start(Arc::new(config.clone()), pool.clone(), common::keyring(&config)).unwrap();
        let bench = Bench { backend, db: &db, config: &config, pool: &pool, acceptor: &acceptor };
        let server = serve(&path);
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let (mut accepted, mut five_xx, mut hooks_sent) = (0usize, 0usize, hooks::Sent::default());
        let mut count =
            |created: usize, errors: usize| (accepted, five_xx) = (accepted + created, five_xx + errors);
        for &clients in &opts.clients {
            let r = bench.references(clients, opts.seconds, true);
            count(r.accepted, 0);
            let rss = || Some(server.peak_rss_mib());
            // The floods (issue 44) also as a ratio to this concurrency's new-visitor accepts.
            let mut accept = None;
            for &scenario in &opts.scenarios {
                let tally = rt.block_on(traffic::run(&[server.address()], scenario, clients, opts.seconds));
                count(tally.created, tally.five_xx);
                let r = References { accept: accept.filter(|_| scenario != Scenario::Accept), ..r };
                row(backend, scenario.name(), clients, &tally, &r, rss());
                if scenario == Scenario::Accept {
                    accept = Some(tally.rate);
                }
            }
            for mode in hooks::Mode::ALL.into_iter().filter(|_| opts.hooks) {
                let run = rt.block_on(hooks::run(&server.address(), mode, clients, opts.seconds));
                hooks_sent.add(&run);
                row(backend, mode.name(), clients, &run.tally, &r, rss());
            }
            let address = server.address();
            let replays = opts.scenarios.contains(&Scenario::Replay);
            let wrk = replays
                .then(|| rt.block_on(wrk::replay(&address, &db.dir, clients, opts.seconds, wrk::WARM_KEYS)));
            if let Some(tally) = wrk.flatten() {
                count(tally.created, tally.five_xx);
                row(backend, "replay (wrk)", clients, &tally, &r, rss());
            }
        }
        if db.is_pg() {
            // The references first: pgbench's connections and a second server's would not
            // fit in PostgreSQL's default 100 together.
            let r = bench.references(64, opts.seconds, false);
            count(r.accepted, 0);
            let second = serve(&path);
            let addrs = [server.address(), second.address()];
            let tally = rt.block_on(traffic::run(&addrs, Scenario::Accept, 64, opts.seconds));
            count(tally.created, tally.five_xx);
            let rss = Some(second.peak_rss_mib());
            row(backend, "accept, 2 serve processes", 64, &tally, &r, rss);
        }
        acceptor.deliveries().flush_blocking();
        consistency(&pool, accepted, five_xx, backend);
        if opts.hooks {
            hooks::check(backend, &pool, &hooks_sent);
        }
        if opts.grow > 0 {
            let (rows, explained) = grow::measure(&rt, backend, &opts);
            growth_rows.extend(rows);
            plans.push(format!("{backend}, {} submissions stored:\n{explained}", opts.grow));
        }
    }
    println!("\nLatency growth (16 clients, a fresh database filled with delivered submissions):\n");
    println!(
        "| backend | stored submissions | accept p50 ms | accept p99 ms | replay p50 ms | replay p99 ms |"
    );
    println!("|---|---|---|---|---|---|");
    for r in growth_rows {
        println!("{r}");
    }
    println!("\nQuery plans:\n");
    for p in plans {
        println!("{p}");
    }
    if opts.drain > 0 {
        println!(
            "\nWorker drain rate ({} submissions, 3 effects each, instant loopback CRM, mail as files):\n",
            opts.drain
        );
        common::drain::print_table(opts.backends.iter().map(String::as_str), opts.drain);
    }
}

/// Issue 23's accepts with a 1 MiB attachment each, each backend on a fresh database.
fn attachments(opts: &Options) {
    println!(
        "\nAccepts with a 1 MiB attachment each (issue 23), against the limit of the idea (in-process: \
         the blob written, fsynced and renamed, then the accept transaction), each backend on a fresh database:\n"
    );
    attach::header();
    for backend in opts.backends.iter().map(String::as_str) {
        attach::measure(&rt_for_targets(), backend, "folder", opts);
        if backend == "postgres" {
            attach::measure(&rt_for_targets(), backend, "database", opts);
        }
    }
}

/// The default configuration's delivery burst (SQLite) and screening burst (each backend).
fn bursts(opts: &Options) {
    if opts.backends.iter().any(|b| b == "sqlite") {
        burst::run(&rt_for_targets(), opts);
    }
    for backend in opts.backends.iter().map(String::as_str) {
        burst::screening(&rt_for_targets(), opts, backend);
    }
}

fn rt_for_targets() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// One backend's database, configuration and in-process accept paths.
struct Bench<'a> {
    backend: &'a str,
    db: &'a Db,
    config: &'a Config,
    pool: &'a Pool,
    acceptor: &'a Acceptor,
}

/// The same-run references at one concurrency.
#[derive(Clone, Copy)]
struct References {
    ceiling: f64,
    pgbench: Option<f64>,
    /// The new-visitor accepts over HTTP, for the floods' rows.
    accept: Option<f64>,
    /// Operations the references accepted, for the consistency check.
    accepted: usize,
}

impl Bench<'_> {
    /// The ceiling (`Acceptor`, in-process), the baseline (a transaction per accept) and, on
    /// PostgreSQL, pgbench; prints their rows when `print`.
    fn references(&self, clients: usize, seconds: u64, print: bool) -> References {
        let (config, pool, acceptor) = (self.config, self.pool, self.acceptor);
        let mut accepted = 0;
        if self.db.is_pg() {
            // A second of warm-up, then fresh statistics (see `analyze`).
            accepted += in_process(config, clients, 1, |i| acceptor.accept(i).is_ok()).0;
            analyze(pool);
        }
        let (n, ceiling) = in_process(config, clients, seconds, |i| acceptor.accept(i).is_ok());
        accepted += n;
        let reference = References { ceiling: ceiling.rate, pgbench: None, accept: None, accepted: 0 };
        let show = |label: &str, t: &Tally| {
            if print {
                row(self.backend, label, clients, t, &reference, None);
            }
        };
        show("ceiling (in-process)", &ceiling);
        if print {
            let baseline_acceptor = Acceptor::one_transaction_each(
                Arc::new(config.clone()),
                pool.clone(),
                common::keyring(config),
            )
            .unwrap();
            let (n, baseline) = in_process(config, clients, seconds, |i| baseline_acceptor.accept(i).is_ok());
            accepted += n;
            show("baseline: a transaction per accept", &baseline);
        }
        let pgbench =
            self.db.is_pg().then(|| pgbench::run(&self.db.url, &self.db.dir, clients, seconds)).flatten();
        if let Some((n, tps)) = pgbench {
            accepted += n;
            show("pgbench: the same SQL, no application", &Tally::rate_only(tps));
        }
        References { ceiling: ceiling.rate, pgbench: pgbench.map(|(_, tps)| tps), accept: None, accepted }
    }
}

fn serve(config: &std::path::Path) -> Process {
    serve_bin(std::path::Path::new(env!("CARGO_BIN_EXE_onceform")), config)
}

/// `serve` with the binary `bin`.
fn serve_bin(bin: &std::path::Path, config: &std::path::Path) -> Process {
    let p = Process::start_bin(
        bin,
        &["serve", "--config", config.to_str().unwrap()],
        &[("ONCEFORM_BIND", "127.0.0.1:0"), ("ONCEFORM_RATE_LIMIT", "off"), hooks::env()],
    );
    assert!(p.first_line.contains("listening on"), "{}", p.first_line);
    p
}

/// A table row; the ratios divide the rate by the same-run ceiling, pgbench and (a flood's
/// row) new-visitor accept figures.
fn row(backend: &str, traffic: &str, clients: usize, t: &Tally, r: &References, rss: Option<f64>) {
    let rss = rss.map_or("".into(), |r| format!("{r:.0}"));
    let to_pgbench = r.pgbench.map_or("".into(), |p| format!("{:.2}", t.rate / p));
    let to_accept = r.accept.map_or("".into(), |a| format!("{:.2}", t.rate / a));
    println!(
        "| {backend} | {traffic} | {clients} | {:.0} | {:.2} | {:.2} | {:.2} | {to_pgbench} | {to_accept} | {rss} | {} |",
        t.rate,
        t.p50_ms,
        t.p99_ms,
        t.rate / r.ceiling,
        t.unexpected
    );
}

/// Refreshes PostgreSQL's statistics, as autovacuum does within a minute or so in a
/// long-running deployment. Connections that prepare their statements while the tables are
/// (nearly) empty get generic plans (PostgreSQL settles on one after five executions) that
/// pick an index by a coin toss, e.g. the key look-up on `(form, phone_digest)` with
/// `operation_id` as a filter, and keep them until an ANALYZE invalidates them: without
/// this, successive in-process cells fell from 1,100 to 270 accepts/s.
fn analyze(pool: &Pool) {
    if let Pool::Pg(p, _) = pool {
        p.get().unwrap().batch_execute("ANALYZE").unwrap();
    }
}

/// New operations accepted by `clients` threads through `accept` (the database layer, no
/// HTTP): (operations accepted, their rate; failed calls count as unexpected).
fn in_process(
    config: &Config,
    clients: usize,
    seconds: u64,
    accept: impl Fn(Intake) -> bool + Sync,
) -> (usize, Tally) {
    let (done, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let until = Instant::now() + Duration::from_secs(seconds);
    std::thread::scope(|s| {
        for _ in 0..clients {
            let (done, failed, accept) = (done.clone(), failed.clone(), &accept);
            s.spawn(move || {
                let form = onceform::config::Form::new("contact", config.form("contact").unwrap().clone());
                while Instant::now() < until {
                    let fields = normalise(&*form, &inquiry("Ceiling")).unwrap();
                    let op = Some(OperationId::generate());
                    let intake = Intake {
                        form: form.clone(),
                        operation_id: op,
                        channel: Channel::Api,
                        fields,
                        scans: Default::default(),
                        received: None,
                        test: false,
                    };
                    if accept(intake) {
                        done.fetch_add(1, Ordering::Relaxed);
                    } else {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let n = done.load(Ordering::Relaxed);
    let rate = n as f64 / seconds as f64;
    (n, Tally { rate, unexpected: failed.load(Ordering::Relaxed), ..Tally::default() })
}

/// submissions = operations accepted, effect records = 3 × submissions; loud if not.
fn consistency(pool: &Pool, accepted: usize, five_xx: usize, backend: &str) {
    let stats = with_conn!(pool, |c| c.stats().map_err(DbError::from)).unwrap();
    let effects = common::form_effects(&stats);
    let ok = stats.submissions == accepted as i64 && effects == 3 * stats.submissions && five_xx == 0;
    println!(
        "\nconsistency ({backend}): {} submissions for {accepted} operations accepted, {} effect records, \
         {five_xx} 5xx: {}\n",
        stats.submissions,
        effects,
        if ok { "OK" } else { "FAILED" }
    );
    assert!(ok, "consistency check failed on {backend}");
}
