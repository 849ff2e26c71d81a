//! Drain rate of the side-effect workers: effects/s for one and two `onceform worker`
//! processes against an instant loopback CRM and file mail, on SQLite and PostgreSQL.
//!
//! `cargo bench --bench drain [-- --submissions N]` (PostgreSQL from ONCEFORM_TEST_PG_URL,
//! default postgres://postgres@127.0.0.1:5432/postgres). It prints a table; it asserts only
//! that every effect ended SENT and every lead was created once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use onceform::accept::{accept, Intake};
use onceform::config::{Config, DEFAULT_CONFIG};
use onceform::db::{DbError, Pool, Store};
use onceform::deliveries::Channel;
use onceform::domain::{normalise, OperationId};
use onceform::with_conn;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let submissions = args
        .iter()
        .position(|a| a == "--submissions")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000usize);
    let crm = InstantCrm::start();
    println!("| backend | worker processes | effects | seconds | effects/s |");
    println!("|---|---|---|---|---|");
    for backend in ["sqlite", "postgres"] {
        for processes in [1, 2] {
            let db = Db::new(backend);
            let config = write_config(&db, &crm.url);
            seed(&config, submissions);
            let before = crm.created();
            let started = Instant::now();
            let workers: Vec<Worker> = (0..processes).map(|_| Worker::start(&config.path)).collect();
            let total = (submissions * 3) as i64;
            let pool = Pool::connect(&config.parsed.database).unwrap();
            while sent(&pool) < total {
                assert!(started.elapsed() < Duration::from_secs(600), "drain did not finish");
                std::thread::sleep(Duration::from_millis(50));
            }
            let secs = started.elapsed().as_secs_f64();
            drop(workers);
            assert_eq!(crm.created() - before, submissions, "each lead exactly once");
            println!("| {backend} | {processes} | {total} | {secs:.2} | {:.0} |", total as f64 / secs);
        }
    }
}

/// A CRM that answers every create at once (HTTP/1.1 keep-alive, one thread per connection).
struct InstantCrm {
    url: String,
    created: Arc<AtomicUsize>,
}

impl InstantCrm {
    fn start() -> InstantCrm {
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

    fn created(&self) -> usize {
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
        let head = format!(
            "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            reply.len()
        );
        if writer.write_all(head.as_bytes()).and_then(|_| writer.write_all(reply.as_bytes())).is_err() {
            return;
        }
    }
}

struct Db {
    url: String,
    dir: std::path::PathBuf,
    pg_name: Option<String>,
}

fn pg_admin() -> String {
    std::env::var("ONCEFORM_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

impl Db {
    fn new(backend: &str) -> Db {
        let tag = uuid::Uuid::new_v4().simple().to_string();
        let dir = std::env::temp_dir().join(format!("onceform-bench-{tag}"));
        std::fs::create_dir_all(&dir).unwrap();
        if backend == "sqlite" {
            return Db { url: format!("sqlite://{}", dir.join("bench.db").display()), dir, pg_name: None };
        }
        let name = format!("onceform_bench_{tag}");
        PgConnection::establish(&pg_admin())
            .unwrap()
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        let admin = pg_admin();
        let server = admin.rsplit_once('/').unwrap().0;
        Db { url: format!("{server}/{name}"), dir, pg_name: Some(name) }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        if let (Some(name), Ok(mut admin)) = (&self.pg_name, PgConnection::establish(&pg_admin())) {
            let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        }
    }
}

struct BenchConfig {
    path: std::path::PathBuf,
    parsed: Config,
}

fn write_config(db: &Db, crm_url: &str) -> BenchConfig {
    let forms = &DEFAULT_CONFIG[DEFAULT_CONFIG.find("[forms.contact]").unwrap()..];
    let mail = db.dir.join("mail");
    let text = format!(
        "[database]\nurl = {:?}\n\n[crm]\nurl = {crm_url:?}\n\n[smtp]\nmail_dir = {:?}\n\n\
         [worker]\nconcurrency = 64\npoll_ms = 10\n\n{forms}",
        db.url,
        mail.display().to_string()
    );
    let path = db.dir.join("onceform.toml");
    std::fs::write(&path, text).unwrap();
    let parsed = Config::load(Some(&path), |_| None).unwrap();
    BenchConfig { path, parsed }
}

fn seed(config: &BenchConfig, n: usize) {
    let config = &config.parsed;
    let pool = Pool::connect(&config.database).unwrap();
    let form = config.form("contact").unwrap();
    for i in 0..n {
        let raw = vec![
            ("name".to_string(), "Bench Mark".to_string()),
            ("email".to_string(), "bench@example.com".to_string()),
            ("topic".to_string(), "Sales".to_string()),
            ("message".to_string(), format!("Inquiry {i}")),
        ];
        let fields = normalise(form, &raw).unwrap();
        let intake = Intake {
            form_name: "contact",
            form,
            operation_id: Some(OperationId::generate()),
            channel: Channel::Api,
            fields,
        };
        accept(&pool, intake).unwrap();
    }
}

fn sent(pool: &Pool) -> i64 {
    let stats = with_conn!(pool, |c| c.stats().map_err(DbError::from)).unwrap();
    stats.effects.iter().filter(|(_, s, _)| s == "SENT").map(|(_, _, n)| n).sum()
}

struct Worker(Child);

impl Worker {
    fn start(config: &std::path::Path) -> Worker {
        let mut child = Command::new(env!("CARGO_BIN_EXE_onceform"))
            .args(["worker", "--config", config.to_str().unwrap()])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        Worker(child)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
