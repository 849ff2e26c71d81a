//! The workers' drain rate against an instant loopback CRM and file mail, and of outbound
//! webhooks against an instant loopback receiver.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use onceform::config::Config;
use onceform::db::{DbError, Pool, Store};
use onceform::with_conn;

use super::{seed, Db, Process};

/// Where the drain runs send leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leads {
    /// The `generic` adapter against the instant loopback CRM.
    Http,
    /// The embedded `file` adapter (one file per lead).
    File,
    /// No lead: the contact form's only effect is an outbound `webhook` (signed per Standard
    /// Webhooks) to the instant loopback receiver.
    Webhook,
    /// The form lists the outbound `webhook` only, and a route that every submission takes
    /// sends each to three destinations: the `webhook`, `teams` and `discord`, all at the
    /// instant receiver.
    Routed,
}

impl Leads {
    fn label(self) -> &'static str {
        match self {
            Leads::Http => "http",
            Leads::File => "file",
            Leads::Webhook => "outbound webhook",
            Leads::Routed => "routed to webhook, teams, discord",
        }
    }

    /// Effect records per submission.
    fn effects(self) -> usize {
        if self == Leads::Webhook {
            1
        } else {
            3
        }
    }

    /// Requests the instant receiver gets per submission.
    fn received(self) -> usize {
        match self {
            Leads::Http | Leads::Webhook => 1,
            Leads::Routed => 3,
            Leads::File => 0,
        }
    }
}

/// The variable holding the outbound webhook's secret, and the secret.
const WEBHOOK_SECRET: (&str, &str) =
    ("ONCEFORM_BENCH_OUTBOUND_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");

/// The variables holding the Teams and Discord URLs of the routed drain.
const CHAT_URLS: (&str, &str) = ("ONCEFORM_BENCH_TEAMS_URL", "ONCEFORM_BENCH_DISCORD_URL");

/// A routed burst's effects/s against one destination's, at least (issue 41).
pub const ROUTED_RATIO_TARGET: f64 = 0.7;

/// The target for one worker process, leads to the instant CRM or to files (issue 11, item 5).
pub const TARGET_PER_PROCESS: f64 = 3000.0;

/// Prints effects/s for one and two `worker` processes per backend (leads over HTTP).
pub fn print_table<'a>(backends: impl IntoIterator<Item = &'a str>, submissions: usize) {
    print_table_with(backends, submissions, &[Leads::Http]);
}

/// The same, once per way of sending leads, each row with its target: 3,000 effects/s for
/// one process, more with a second. CPU is the workers' user + system time per 1,000
/// effects; "machine CPU busy" is the share of both cores in use during the run (the
/// database's and the benchmark's own included), which bounds what a second process can add.
pub fn print_table_with<'a>(
    backends: impl IntoIterator<Item = &'a str>,
    submissions: usize,
    leads: &[Leads],
) {
    println!("| backend | leads | worker processes | effects | seconds | effects/s | worker CPU s per 1,000 effects | machine CPU busy | target | met |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let crm = InstantCrm::start();
    // Every run's files are deleted after the last run, not between runs (see `scratch_parent`).
    let mut scratch = Vec::new();
    for backend in backends {
        for &to in leads {
            let mut one = None;
            for processes in [1, 2] {
                let mut run = drain_rate_to(&crm, to, backend, processes, submissions);
                scratch.extend(run.scratch.take());
                let rate = run.effects as f64 / run.seconds;
                let (target, met) = match one {
                    None => ("≥ 3,000".to_string(), rate >= TARGET_PER_PROCESS),
                    Some(single) => (format!("> {single:.0} (one process)"), rate > single),
                };
                let met = if met { "yes" } else { "**no**" };
                println!(
                    "| {backend} | {} | {processes} | {} | {:.2} | {rate:.0} | {:.2} | {:.0} % | {target} | {met} |",
                    to.label(),
                    run.effects,
                    run.seconds,
                    1000.0 * run.cpu_seconds / run.effects as f64,
                    100.0 * run.busy
                );
                one = one.or(Some(rate));
            }
        }
    }
}

/// A burst of `submissions`, each routed to three destinations, drained by one `worker`
/// process, against the same burst sent to one destination (the outbound webhook), per
/// backend: effects/s and submissions/s of each, and the routed run's effects/s as a share
/// of the one-destination run's (the target: at least 0.7).
pub fn print_routed<'a>(backends: impl IntoIterator<Item = &'a str>, submissions: usize) {
    println!("| backend | destinations per submission | submissions | effects | seconds | effects/s | submissions/s | worker CPU s per 1,000 effects | effects/s vs one destination | target | met |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let crm = InstantCrm::start();
    let mut scratch = Vec::new();
    for backend in backends {
        let mut one = None;
        for to in [Leads::Webhook, Leads::Routed] {
            let mut run = drain_rate_to(&crm, to, backend, 1, submissions);
            scratch.extend(run.scratch.take());
            let rate = run.effects as f64 / run.seconds;
            let single: f64 = *one.get_or_insert(rate);
            let ratio = rate / single;
            let met = if to == Leads::Webhook {
                "(the base)"
            } else if ratio >= ROUTED_RATIO_TARGET {
                "yes"
            } else {
                "**no**"
            };
            println!(
                "| {backend} | {} ({}) | {submissions} | {} | {:.2} | {rate:.0} | {:.0} | {:.2} | {ratio:.2} × | ≥ {ROUTED_RATIO_TARGET} × | {met} |",
                to.effects(),
                to.label(),
                run.effects,
                run.seconds,
                submissions as f64 / run.seconds,
                1000.0 * run.cpu_seconds / run.effects as f64,
            );
        }
    }
}

/// One drain run: effects delivered, wall-clock seconds, the workers' CPU seconds, and the
/// share of the machine's CPU time that was busy (0..=1) while it ran.
pub struct Drained {
    pub effects: i64,
    pub seconds: f64,
    pub cpu_seconds: f64,
    pub busy: f64,
    /// The run's database and files, removed when dropped.
    pub scratch: Option<Db>,
}

/// Seeds `submissions` (3 effects each, or the one webhook) on a fresh `backend` database,
/// starts `processes` workers and measures until all are SENT; checks each lead (or
/// webhook) arrived once.
pub fn drain_rate_to(
    crm: &InstantCrm,
    to: Leads,
    backend: &str,
    processes: usize,
    submissions: usize,
) -> Drained {
    let db = Db::new(backend);
    let (path, config) = write_config(&db, &crm.url, to);
    let pool = Pool::connect(&config.database).unwrap();
    seed(&pool, &config, submissions);
    let before = crm.created();
    let path = path.to_str().unwrap();
    let workers: Vec<Process> =
        (0..processes).map(|_| Process::start(&["worker", "--config", path], &env(crm).each())).collect();
    // The clock starts once the processes are up (they print their first line when running).
    let started = Instant::now();
    let cpu_before: f64 = workers.iter().map(Process::cpu_seconds).sum();
    let machine_before = machine_jiffies();
    while open(&pool) > 0 {
        assert!(started.elapsed() < Duration::from_secs(600), "drain did not finish");
        std::thread::sleep(Duration::from_millis(5));
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu_seconds = workers.iter().map(Process::cpu_seconds).sum::<f64>() - cpu_before;
    let machine_after = machine_jiffies();
    let busy = (machine_after.0 - machine_before.0) / (machine_after.1 - machine_before.1).max(1.0);
    drop(workers);
    let total = (submissions * to.effects()) as i64;
    assert_eq!(sent(&pool), total, "every effect SENT");
    match to {
        Leads::Http | Leads::Webhook | Leads::Routed => {
            assert_eq!(crm.created() - before, submissions * to.received(), "each request exactly once")
        }
        Leads::File => {
            let files = std::fs::read_dir(db.dir.join("crm").join("leads")).unwrap().count();
            assert_eq!(files, submissions, "one file per lead");
        }
    }
    Drained { effects: total, seconds, cpu_seconds, busy, scratch: Some(db) }
}

/// Effects still to go: a count on the due index, cheap enough to poll every few milliseconds.
fn open(pool: &Pool) -> i64 {
    use diesel::dsl::count_star;
    use diesel::prelude::*;
    use onceform::db::schema::side_effects::dsl::*;
    use onceform::domain::EffectState::{Pending, Sending, Unknown};
    with_conn!(pool, |c| side_effects
        .filter(state.eq_any([Pending, Sending, Unknown]))
        .select(count_star())
        .get_result::<i64>(c)
        .map_err(DbError::from))
    .unwrap()
}

/// (busy, all) CPU time of the whole machine so far, in jiffies (Linux `/proc/stat`).
fn machine_jiffies() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let cpu: Vec<f64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .take(8) // guest time is counted in user time already
        .filter_map(|v| v.parse().ok())
        .collect();
    let all: f64 = cpu.iter().sum();
    // user nice system idle iowait irq softirq steal: idle and iowait are not busy.
    let idle = cpu.get(3).unwrap_or(&0.0) + cpu.get(4).unwrap_or(&0.0);
    (all - idle, all)
}

/// A CRM (or webhook receiver) that answers every create at once (HTTP/1.1 keep-alive, one
/// thread per connection).
pub struct InstantCrm {
    pub url: String,
    created: Arc<AtomicUsize>,
}

impl InstantCrm {
    pub fn start() -> InstantCrm {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/leads", listener.local_addr().unwrap());
        let created = Arc::new(AtomicUsize::new(0));
        let c = created.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let c = c.clone();
                std::thread::spawn(move || serve(stream, &c));
            }
        });
        InstantCrm { url, created }
    }

    pub fn created(&self) -> usize {
        self.created.load(Ordering::SeqCst)
    }
}

fn serve(stream: std::net::TcpStream, created: &AtomicUsize) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let n = created.fetch_add(1, Ordering::SeqCst) + 1;
        let reply = format!("{{\"id\":\"L-{n}\"}}");
        // One write: a head and a body in two segments would wait for the client's delayed
        // ACK (Nagle), about 40 ms per lead, and measure that instead of the worker.
        let answer = format!(
            "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{reply}",
            reply.len()
        );
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// The workers' environment: the outbound webhook's secret and the chat kinds' URLs.
struct Env(Vec<(&'static str, String)>);

impl Env {
    fn each(&self) -> Vec<(&str, &str)> {
        self.0.iter().map(|(k, v)| (*k, v.as_str())).collect()
    }
}

fn env(crm: &InstantCrm) -> Env {
    let base = crm.url.trim_end_matches("/leads");
    Env(vec![
        (WEBHOOK_SECRET.0, WEBHOOK_SECRET.1.to_string()),
        (CHAT_URLS.0, format!("{base}/teams")),
        (CHAT_URLS.1, format!("{base}/api/webhooks/1/bench-token")),
    ])
}

fn write_config(db: &Db, crm_url: &str, to: Leads) -> (std::path::PathBuf, Config) {
    let mail = db.dir.join("mail").display().to_string();
    let crm = match to {
        Leads::Http | Leads::Webhook | Leads::Routed => format!("url = {crm_url:?}"),
        Leads::File => format!("adapter = \"file\"\ndir = {:?}", db.dir.join("crm").display().to_string()),
    };
    let forms = match to {
        Leads::Webhook | Leads::Routed => {
            let effects = "effects = [\"webhook\"]";
            let forms = super::default_forms().replacen(
                "effects = [\"crm_lead\", \"confirmation_email\", \"owner_notification\"]",
                effects,
                1,
            );
            assert!(forms.contains(effects), "the default contact form's effects changed");
            let mut forms = format!(
                "{forms}\n[forms.contact.webhook]\nurl = {crm_url:?}\nsecret_env = {:?}\n",
                WEBHOOK_SECRET.0
            );
            if to == Leads::Routed {
                forms.push_str(&format!(
                    "[forms.contact.teams]\nurl_env = {:?}\n[forms.contact.discord]\nurl_env = {:?}\n\
                     [[forms.contact.routes]]\nname = \"everyone\"\nwhen = {{ spam = false }}\n\
                     effects = [\"webhook\", \"teams\", \"discord\"]\n",
                    CHAT_URLS.0, CHAT_URLS.1
                ));
            }
            forms
        }
        _ => super::default_forms().to_string(),
    };
    let extra =
        format!("[crm]\n{crm}\n\n[smtp]\nmail_dir = {mail:?}\n\n[worker]\nconcurrency = 64\npoll_ms = 10");
    db.config_with_forms(&extra, &forms)
}

fn sent(pool: &Pool) -> i64 {
    let stats = with_conn!(pool, |c| c.stats().map_err(DbError::from)).unwrap();
    stats
        .effects
        .iter()
        .filter(|(_, s, _)| *s == onceform::domain::EffectState::Sent)
        .map(|(_, _, n)| n)
        .sum()
}
