//! The chaos run (issue 27): onceform on a replicated PostgreSQL through pgbouncer, with the
//! primary, the workers and the pooler killed under load, checked after every round.
//!
//! `cargo bench --bench chaos [-- --rounds 20] [--worker-kills 6] [--clients 8] [--serve 2]`
//!
//! The cluster is `scripts/failover-cluster.sh` (pg_auto_failover: a monitor and two data
//! nodes, synchronous replication); in front of each node a pgbouncer in transaction pooling
//! mode, and onceform's URL names both poolers with `target_session_attrs=read-write`
//! (docs/SCALING.md). Two `serve` processes take submissions from `--clients` HTTP clients,
//! each retrying its submission under its key on 503 until it is acknowledged; two `worker`
//! processes deliver to a loopback CRM (each create answered after 25 ms, so a call is
//! always in flight) and a loopback SMTP sink. Each round:
//!
//! 1. the primary node is killed with SIGKILL (its keeper, its Postgres and the pgbouncer on
//!    its host); meanwhile `--worker-kills` worker processes are killed with SIGKILL
//!    mid-delivery, one at a time, each replaced by a new one;
//! 2. the standby is promoted, and its pgbouncer told (`RECONNECT`, as a failover hook would:
//!    docs/SCALING.md); the old primary is started again and rejoins as the secondary;
//! 3. the pgbouncer in front of the new primary is killed and started again under load;
//! 4. the clients pause, the workers finish the queue, and the checks run on the new primary:
//!    every acknowledged submission is there under the id it was acknowledged with and
//!    nothing else is; every effect SENT, or UNKNOWN (an email whose answer was lost with its
//!    worker: it has no lookup, so it waits for an operator, not sent again); each lead
//!    created once at the CRM, each email once at the sink; no 5xx but 503.
//!
//! It prints each round and the summary: kills, acknowledged, lost, duplicated, and the
//! unavailability per failover (from the kill to the first submission acknowledged after
//! it), median and max. Skipped when pg_auto_failover or pgbouncer is not installed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/mod.rs"]
mod common;

#[allow(dead_code)]
#[path = "../tests/it/support/cluster.rs"]
mod cluster;
#[allow(dead_code)]
#[path = "../tests/it/support/crm.rs"]
mod crm;
#[allow(dead_code)]
#[path = "../tests/it/support/smtp.rs"]
mod smtp;
// The fake CRM decodes lookup paths with the receiver's decoder.
#[allow(dead_code)]
#[path = "../tests/it/support/receiver.rs"]
mod receiver;

/// Serves each connection with `serve(stream, state)` on a fresh loopback port (the tests'
/// `support::listen`, which the fake CRM uses).
async fn listen<S, F>(state: S, serve: fn(tokio::net::TcpStream, S) -> F) -> String
where
    S: Clone + Send + 'static,
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, state.clone()));
        }
    });
    url
}

use std::collections::{HashMap, HashSet};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cluster::Cluster;
use common::Process;
use crm::{FakeCrm, Fault};
use diesel::prelude::*;
use onceform::config::DEFAULT_CONFIG;
use onceform::db::schema::{side_effects, submissions};
use serde_json::{json, Value};
use smtp::SmtpSink;

struct Options {
    rounds: usize,
    worker_kills: usize,
    clients: usize,
    serve: usize,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().collect();
    let get = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    Options {
        rounds: get("--rounds", 20),
        worker_kills: get("--worker-kills", 6),
        clients: get("--clients", 8),
        serve: get("--serve", 2),
    }
}

fn main() {
    let opts = options();
    if !cluster::available() || Command::new("pgbouncer").arg("--version").output().is_err() {
        println!("chaos: pg_auto_failover or pgbouncer is not installed (./test.sh installs both): skipped");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(run(opts));
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("Uid:")).map(|u| u.split_whitespace().next() == Some("0"))
        })
        .unwrap_or(false)
}

/// A port below the ephemeral range, where a pooler restarted on it finds it free.
fn free_port() -> u16 {
    cluster::free_ports()
}

/// A pgbouncer in transaction pooling mode in front of one data node.
struct Bouncer {
    port: u16,
    /// The data node's port.
    node: u16,
    ini: std::path::PathBuf,
    child: Option<Child>,
}

impl Bouncer {
    fn start(dir: &std::path::Path, node: u16) -> Bouncer {
        let port = free_port();
        let ini = dir.join(format!("pgbouncer-{node}.ini"));
        std::fs::write(
            &ini,
            format!(
                "[databases]\nonceform = host=127.0.0.1 port={node} dbname=onceform user=postgres\n\n\
                 [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
                 auth_type = any\nadmin_users = postgres\npool_mode = transaction\nmax_client_conn = 500\n\
                 default_pool_size = 20\n\
                 server_connect_timeout = 2\nserver_login_retry = 1\nquery_wait_timeout = 5\n\
                 ignore_startup_parameters = extra_float_digits,options\n"
            ),
        )
        .unwrap();
        let mut b = Bouncer { port, node, ini, child: None };
        b.spawn();
        b
    }

    fn spawn(&mut self) {
        let mut cmd = Command::new("pgbouncer");
        if is_root() {
            cmd.args(["-u", "postgres"]); // Debian's pgbouncer refuses to run as root
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.ini.with_extension("log"))
            .unwrap();
        self.child = Some(cmd.arg(&self.ini).stdout(Stdio::null()).stderr(log).spawn().unwrap());
        for _ in 0..100 {
            let alive = self.child.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(None)));
            assert!(alive, "pgbouncer exited: see {}", self.ini.with_extension("log").display());
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("pgbouncer did not listen on {}", self.port);
    }

    /// `RECONNECT`: its server connections are replaced. pgbouncer hands every new client the
    /// parameters its first server connection reported, `in_hot_standby` among them: after
    /// its node was promoted, libpq (`target_session_attrs=read-write`) would go on taking it
    /// for a standby until the pool reconnects. A failover hook does this (docs/SCALING.md).
    fn reconnect(port: u16) {
        let port = port.to_string();
        let _ = Command::new("psql")
            .args(["-X", "-q", "-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-d", "pgbouncer"])
            .args(["-c", "RECONNECT onceform"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// Killed (SIGKILL) and started again on the same port.
    fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What the clients saw.
#[derive(Default)]
struct Seen {
    /// key → (submission id, when acknowledged)
    acked: HashMap<String, (String, Instant)>,
    statuses: HashMap<u16, usize>,
    without_retry_after: usize,
    /// An acknowledgement under a key already acknowledged with another id.
    changed_id: usize,
}

fn clients(
    addrs: &[String],
    n: usize,
    paused: Arc<AtomicBool>,
    busy: Arc<Mutex<usize>>,
    seen: Arc<Mutex<Seen>>,
) {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    for i in 0..n {
        let (client, paused, busy, seen) = (client.clone(), paused.clone(), busy.clone(), seen.clone());
        let addrs = addrs.to_vec();
        tokio::spawn(async move {
            let mut turn = i;
            loop {
                if paused.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
                *busy.lock().unwrap() += 1;
                let key = format!("chaos-{}", uuid::Uuid::new_v4().simple());
                let body = json!({"name": "Chaos Monkey", "email": format!("{key}@example.com"),
                                  "topic": "Sales", "message": format!("Client {i} under chaos")});
                loop {
                    turn += 1;
                    let url = format!("{}/api/forms/contact/submissions", addrs[turn % addrs.len()]);
                    let sent = client.post(&url).header("Idempotency-Key", &key).json(&body).send().await;
                    let Ok(resp) = sent else {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    };
                    let status = resp.status().as_u16();
                    let retry_after = resp.headers().contains_key("retry-after");
                    let answer: Value = resp.json().await.unwrap_or_default();
                    let acked = matches!(status, 200 | 201);
                    {
                        let mut s = seen.lock().unwrap();
                        *s.statuses.entry(status).or_default() += 1;
                        if status == 503 && !retry_after {
                            s.without_retry_after += 1;
                        }
                        if acked {
                            let id = answer["submission_id"].as_str().unwrap_or("").to_string();
                            if let Some((before, _)) = s.acked.get(&key) {
                                if *before != id {
                                    s.changed_id += 1;
                                }
                            } else {
                                s.acked.insert(key.clone(), (id, Instant::now()));
                            }
                        }
                    }
                    if acked {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                *busy.lock().unwrap() -= 1;
            }
        });
    }
}

fn config_file(
    dir: &std::path::Path,
    url: &str,
    crm: &FakeCrm,
    smtp: &SmtpSink,
    worker: &str,
) -> std::path::PathBuf {
    let forms = &DEFAULT_CONFIG[DEFAULT_CONFIG.find("[forms.contact]").unwrap()..];
    let text = format!(
        "[database]\nurl = {url:?}\nprepared_statements = false\npool_size = 8\nacquire_timeout_ms = 1000\n\n\
         [crm]\nurl = \"{}/leads\"\n\n[crm.generic]\nlookup_url = {:?}\n\n[smtp]\nurl = {:?}\n\n[worker]\n{worker}\n\n{forms}",
        crm.url,
        crm.lookup_url(),
        smtp.url
    );
    let path = dir.join(format!("onceform-{}.toml", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, text).unwrap();
    path
}

/// A `worker` process. One started while no primary takes writes exits at once (it cannot
/// migrate): it is started again until it runs, as a supervisor would.
fn worker(config: &std::path::Path) -> Process {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let p = Process::start(&["worker", "--config", config.to_str().unwrap()], &[]);
        if p.first_line.starts_with("onceform worker") {
            return p;
        }
        assert!(Instant::now() < deadline, "no worker could start: {:?}", p.first_line);
        drop(p);
        std::thread::sleep(Duration::from_millis(250));
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

/// The round's findings from the new primary, the CRM and the sink.
struct Check {
    stored: usize,
    missing: usize,
    unexpected: usize,
    wrong_id: usize,
    effects: HashMap<(String, String), i64>,
    leads: usize,
    duplicate_leads: usize,
    mails: usize,
    duplicate_mails: usize,
}

fn check(url: &str, seen: &Seen, crm: &FakeCrm, smtp: &SmtpSink) -> Check {
    let mut c = onceform::db::establish_pg(url).unwrap();
    let rows: Vec<(String, String)> =
        submissions::table.select((submissions::operation_id, submissions::id)).load(&mut c).unwrap();
    let stored: HashMap<String, String> = rows.into_iter().collect();
    let missing = seen.acked.keys().filter(|k| !stored.contains_key(*k)).count();
    let wrong_id = seen.acked.iter().filter(|(k, (id, _))| stored.get(*k).is_some_and(|s| s != id)).count();
    let unexpected = stored.keys().filter(|k| !seen.acked.contains_key(*k)).count();
    let effects: Vec<(String, String, i64)> = side_effects::table
        .group_by((side_effects::kind, side_effects::state))
        .select((side_effects::kind, side_effects::state, diesel::dsl::count_star()))
        .load(&mut c)
        .unwrap();
    let leads = crm.leads();
    let refs: HashSet<&String> = leads.iter().map(|(r, _)| r).collect();
    let ids: Vec<String> = smtp
        .messages()
        .iter()
        .filter_map(|m| m.lines().find(|l| l.starts_with("Message-ID:")).map(String::from))
        .collect();
    let unique: HashSet<&String> = ids.iter().collect();
    Check {
        stored: stored.len(),
        missing,
        unexpected,
        wrong_id,
        effects: effects.into_iter().map(|(k, s, n)| ((k, s), n)).collect(),
        leads: leads.len(),
        duplicate_leads: leads.len() - refs.len(),
        mails: ids.len(),
        duplicate_mails: ids.len() - unique.len(),
    }
}

/// Effects still on their way (PENDING, SENDING, or a CRM outcome UNKNOWN until its lookup).
fn open_effects(url: &str) -> Option<i64> {
    let mut c = onceform::db::establish_pg(url).ok()?;
    side_effects::table
        .filter(
            side_effects::state
                .eq_any(["PENDING", "SENDING"])
                .or(side_effects::state.eq("UNKNOWN").and(side_effects::kind.eq("crm_lead"))),
        )
        .count()
        .get_result(&mut c)
        .ok()
}

fn median(sorted: &[f64]) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

async fn run(opts: Options) {
    let started = Instant::now();
    let cluster = Arc::new(blocking(|| Cluster::start().unwrap()).await);
    let dir = std::env::temp_dir().join(format!("onceform-chaos-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let nodes = cluster.nodes();
    let mut bouncers: Vec<Bouncer> = nodes.iter().map(|n| Bouncer::start(&dir, *n)).collect();
    let url = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/onceform?target_session_attrs=read-write&sslmode=disable&gssencmode=disable",
        bouncers[0].port, bouncers[1].port
    );
    let (crm, smtp) = (FakeCrm::start().await, SmtpSink::start().await);
    for _ in 0..200_000 {
        crm.push_fault(Fault::SlowAfterCreate(Duration::from_millis(25)));
    }
    let serving = config_file(&dir, &url, &crm, &smtp, "enabled = false");
    let working = config_file(
        &dir,
        &url,
        &crm,
        &smtp,
        "call_timeout_ms = 1000\nlease_seconds = 2\npoll_ms = 20\nbackoff_base_ms = 20\nbackoff_max_seconds = 1\n\
         reconcile_after_ms = 50\nconcurrency = 16",
    );
    let servers: Vec<Process> = (0..opts.serve)
        .map(|_| {
            Process::start(
                &["serve", "--config", serving.to_str().unwrap()],
                &[("ONCEFORM_BIND", "127.0.0.1:0"), ("ONCEFORM_RATE_LIMIT", "off")],
            )
        })
        .collect();
    let addrs: Vec<String> = servers.iter().map(Process::address).collect();
    let mut workers: Vec<Process> = (0..2).map(|_| worker(&working)).collect();
    let (paused, busy, seen) =
        (Arc::new(AtomicBool::new(false)), Arc::new(Mutex::new(0)), Arc::new(Mutex::new(Seen::default())));
    clients(&addrs, opts.clients, paused.clone(), busy.clone(), seen.clone());
    println!(
        "chaos: cluster on {:?} behind pgbouncer {:?}, {} serve + 2 worker processes, {} clients; {} rounds",
        nodes,
        bouncers.iter().map(|b| b.port).collect::<Vec<_>>(),
        opts.serve,
        opts.clients,
        opts.rounds
    );
    println!(
        "| round | unavailable s (standby writable after s) | acknowledged | 503 | worker kills | effects | leads | emails | check |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");

    let (mut unavailable, mut worker_kills, mut bouncer_restarts, mut failed) =
        (Vec::new(), 0usize, 0usize, 0usize);
    let mut last_check = None;
    for round in 1..=opts.rounds {
        tokio::time::sleep(Duration::from_millis(1500)).await; // traffic before the kill
        let primary = loop {
            let c = cluster.clone();
            if let Some(p) = blocking(move || c.primary()).await {
                break p;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let standby = nodes.into_iter().find(|p| *p != primary).unwrap();
        let killed_at = Instant::now();
        let c = cluster.clone();
        blocking(move || c.kill(primary)).await;
        // The node's host is gone: its pgbouncer with it (one left up would answer every
        // login with an error, and libpq tries the next host only when a connection fails,
        // not when a login does: docs/SCALING.md).
        bouncers.iter_mut().find(|b| b.node == primary).unwrap().stop();

        // Workers killed mid-delivery while the standby is promoted (and its pooler told).
        let c = cluster.clone();
        let standby_port = bouncers.iter().find(|b| b.node == standby).unwrap().port;
        let promoted = tokio::spawn(blocking(move || {
            let took = c.wait_writable(standby, Duration::from_secs(90));
            Bouncer::reconnect(standby_port);
            took
        }));
        let mut kills = 0;
        while kills < opts.worker_kills {
            tokio::time::sleep(Duration::from_millis(300 + fastrand::u64(0..400))).await;
            let i = fastrand::usize(0..workers.len());
            let _ = workers[i].child.kill(); // SIGKILL
            let _ = workers[i].child.wait();
            let w = working.clone();
            workers[i] = blocking(move || worker(&w)).await;
            kills += 1;
        }
        worker_kills += kills;
        let promotion = promoted.await.unwrap();
        let c = cluster.clone();
        blocking(move || {
            c.restart(primary);
            c.wait_healthy(120);
        })
        .await;
        // The rejoined node's host is back with its pooler; the new primary's pooler is
        // restarted under load.
        bouncers.iter_mut().find(|b| b.node == primary).unwrap().spawn();
        bouncers.iter_mut().find(|b| b.node == standby).unwrap().restart();
        bouncer_restarts += 1;
        tokio::time::sleep(Duration::from_millis(500)).await;

        // Pause, drain, check.
        paused.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(60);
        while *busy.lock().unwrap() > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let direct = cluster.node_url(standby);
        loop {
            let d = direct.clone();
            if blocking(move || open_effects(&d)).await == Some(0) || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // The longest stretch without an acknowledgement from the kill on.
        let gap = {
            let s = seen.lock().unwrap();
            let mut at: Vec<Instant> =
                s.acked.values().map(|(_, at)| *at).filter(|at| *at > killed_at).collect();
            at.sort();
            at.iter()
                .scan(killed_at, |prev, t| {
                    let g = (*t - *prev).as_secs_f64();
                    *prev = *t;
                    Some(g)
                })
                .fold(None, |m: Option<f64>, g| Some(m.map_or(g, |m| m.max(g))))
        };
        let (d, s2, crm2, smtp2) = (direct.clone(), seen.clone(), crm.clone(), smtp.clone());
        let found = blocking(move || check(&d, &s2.lock().unwrap(), &crm2, &smtp2)).await;
        let s = seen.lock().unwrap();
        let acked = s.acked.len();
        let five_xx: usize =
            s.statuses.iter().filter(|(c, _)| **c >= 500 && **c != 503).map(|(_, n)| n).sum();
        let odd: usize =
            s.statuses.iter().filter(|(c, _)| !matches!(**c, 200 | 201 | 409 | 503)).map(|(_, n)| n).sum();
        let n503 = s.statuses.get(&503).copied().unwrap_or(0);
        let effect = |kind: &str, state: &str| {
            found.effects.get(&(kind.to_string(), state.to_string())).copied().unwrap_or(0)
        };
        let mails_sent = effect("confirmation_email", "SENT") + effect("owner_notification", "SENT");
        let mails_unknown = effect("confirmation_email", "UNKNOWN") + effect("owner_notification", "UNKNOWN");
        let total_effects: i64 = found.effects.values().sum();
        let ok = found.missing == 0
            && found.unexpected == 0
            && found.wrong_id == 0
            && s.changed_id == 0
            && found.stored == acked
            && total_effects == 3 * acked as i64
            && effect("crm_lead", "SENT") == acked as i64
            && found.leads == acked
            && found.duplicate_leads == 0
            && found.duplicate_mails == 0
            && mails_sent + mails_unknown == 2 * acked as i64
            && mails_sent as usize <= found.mails
            && five_xx == 0
            && odd == 0
            && s.without_retry_after == 0;
        if !ok {
            failed += 1;
        }
        if let Some(g) = gap {
            unavailable.push(g);
        }
        println!(
            "| {round} | {} ({:.1}) | {acked} | {n503} | {kills} | {total_effects} ({} UNKNOWN emails) | {} | {} | {} |",
            gap.map_or("-".into(), |g| format!("{g:.1}")),
            promotion.as_secs_f64(),
            mails_unknown,
            found.leads,
            found.mails,
            if ok { "OK" } else { "**FAILED**" }
        );
        if !ok {
            println!(
                "  missing {} unexpected {} wrong id {} changed id {} stored {} effects {:?} dup leads {} dup mails {} 5xx {five_xx} odd {odd} {:?}",
                found.missing, found.unexpected, found.wrong_id, s.changed_id, found.stored, found.effects,
                found.duplicate_leads, found.duplicate_mails, s.statuses
            );
        }
        last_check =
            Some((acked, n503, five_xx, found.duplicate_leads + found.duplicate_mails, found.missing));
        drop(s);
        paused.store(false, Ordering::SeqCst);
    }
    paused.store(true, Ordering::SeqCst);
    unavailable.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let (acked, n503, five_xx, duplicated, lost) = last_check.unwrap_or_default();
    println!(
        "\nchaos summary: {} rounds, {} primary kills (each old primary rejoined), {worker_kills} worker SIGKILLs, \
         {bouncer_restarts} pgbouncer restarts; {acked} acknowledged, lost {lost}, duplicated {duplicated}, \
         503 {n503}, other 5xx {five_xx}; unavailability per failover median {:.1} s, max {:.1} s; \
         rounds failed {failed}; {:.0} s in all",
        opts.rounds,
        opts.rounds,
        median(&unavailable),
        unavailable.last().copied().unwrap_or(0.0),
        started.elapsed().as_secs_f64()
    );
    drop(workers);
    drop(servers);
    drop(bouncers);
    let _ = std::fs::remove_dir_all(&dir);
    blocking(move || drop(cluster)).await;
    assert_eq!(failed, 0, "a round's check failed");
}
