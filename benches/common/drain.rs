//! The workers' drain rate against an instant loopback CRM and file mail.

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
}

/// The target for one worker process with the file adapters (issue 11, item 5).
pub const TARGET_PER_PROCESS: f64 = 3000.0;

/// Prints effects/s for one and two `worker` processes per backend (leads over HTTP).
pub fn print_table<'a>(backends: impl IntoIterator<Item = &'a str>, submissions: usize) {
    print_table_with(backends, submissions, &[Leads::Http]);
}

/// The same, once per way of sending leads. The file rows name their target: 3,000
/// effects/s for one process, more with a second. CPU is the workers' user + system time
/// per 1,000 effects, which does not depend on what else the machine runs.
pub fn print_table_with<'a>(
    backends: impl IntoIterator<Item = &'a str>,
    submissions: usize,
    leads: &[Leads],
) {
    println!("| backend | leads | worker processes | effects | seconds | effects/s | worker CPU s per 1,000 effects | target | met |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let crm = InstantCrm::start();
    // Every run's files are deleted after the last run: ext4 passes over inodes freed within
    // the last half minute or so when it allocates one (`recently_deleted`), so a run right
    // after another deleted its ~10,000 files paid for that scan on every file it created
    // (half the workers' CPU time, by perf), which a deployment, that keeps its files, does not.
    let mut scratch = Vec::new();
    for backend in backends {
        for &to in leads {
            let mut one = None;
            for processes in [1, 2] {
                let mut run = drain_rate_to(&crm, to, backend, processes, submissions);
                scratch.extend(run.scratch.take());
                let rate = run.effects as f64 / run.seconds;
                let label = if to == Leads::File { "file" } else { "http" };
                let (target, met) = match (to, processes, one) {
                    (Leads::File, 1, _) => ("≥ 3,000".to_string(), Some(rate >= TARGET_PER_PROCESS)),
                    (Leads::File, _, Some(single)) => {
                        (format!("> {single:.0} (one process)"), Some(rate > single))
                    }
                    _ => (String::new(), None),
                };
                let met = match met {
                    Some(true) => "yes",
                    Some(false) => "**no**",
                    None => "",
                };
                println!(
                    "| {backend} | {label} | {processes} | {} | {:.2} | {rate:.0} | {:.2} | {target} | {met} |",
                    run.effects,
                    run.seconds,
                    1000.0 * run.cpu_seconds / run.effects as f64
                );
                one = one.or(Some(rate));
            }
        }
    }
}

/// One drain run: effects delivered, wall-clock seconds, the workers' CPU seconds.
pub struct Drained {
    pub effects: i64,
    pub seconds: f64,
    pub cpu_seconds: f64,
    /// The run's database and files, removed when dropped.
    pub scratch: Option<Db>,
}

/// Seeds `submissions` (3 effects each) on a fresh `backend` database, starts `processes`
/// workers and returns (effects, seconds) until all are SENT; checks each lead arrived once.
pub fn drain_rate(crm: &InstantCrm, backend: &str, processes: usize, submissions: usize) -> (i64, f64) {
    let run = drain_rate_to(crm, Leads::Http, backend, processes, submissions);
    (run.effects, run.seconds)
}

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
        (0..processes).map(|_| Process::start(&["worker", "--config", path], &[])).collect();
    // The clock starts once the processes are up (they print their first line when running).
    let started = Instant::now();
    let cpu_before: f64 = workers.iter().map(Process::cpu_seconds).sum();
    let total = (submissions * 3) as i64;
    while sent(&pool) < total {
        assert!(started.elapsed() < Duration::from_secs(600), "drain did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu_seconds = workers.iter().map(Process::cpu_seconds).sum::<f64>() - cpu_before;
    drop(workers);
    match to {
        Leads::Http => assert_eq!(crm.created() - before, submissions, "each lead exactly once"),
        Leads::File => {
            let files = std::fs::read_dir(db.dir.join("crm").join("leads")).unwrap().count();
            assert_eq!(files, submissions, "one file per lead");
        }
    }
    Drained { effects: total, seconds, cpu_seconds, scratch: Some(db) }
}

/// A CRM that answers every create at once (HTTP/1.1 keep-alive, one thread per connection).
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

fn write_config(db: &Db, crm_url: &str, to: Leads) -> (std::path::PathBuf, Config) {
    let mail = db.dir.join("mail").display().to_string();
    let crm = match to {
        Leads::Http => format!("url = {crm_url:?}"),
        Leads::File => format!("adapter = \"file\"\ndir = {:?}", db.dir.join("crm").display().to_string()),
    };
    db.config(&format!(
        "[crm]\n{crm}\n\n[smtp]\nmail_dir = {mail:?}\n\n[worker]\nconcurrency = 64\npoll_ms = 10"
    ))
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
