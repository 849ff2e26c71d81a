//! Issue 42's rows for the read API and the change feed, on PostgreSQL.
//!
//! `cargo bench --bench feed [-- --submissions N (20,000)] [--kills N (5)] [--rows N (100,000)] [--only-follow] [--only-read]`
//! (PostgreSQL from ONCEFORM_TEST_PG_URL, default postgres://postgres@127.0.0.1:5432/postgres).
//!
//! - *Following the feed* (`feed/follow.rs`): four `serve` processes and one `worker` on one
//!   fresh database; clients submit N new submissions spread over the four (every tenth sent
//!   again to another process: the same answer), while a consumer process (the example
//!   consumer's own code, `examples/changes_consumer.rs`, run as a child of this binary)
//!   follows `GET /api/v1/changes` with a token and is killed (SIGKILL) and restarted from its
//!   stored copy `--kills` times. Once every effect is SENT and the consumer has caught up, its
//!   copy must hold exactly the N submissions, each change of each once, and every effect
//!   record's states in the order the `changes` table recorded them (and one `SENDING` per
//!   attempt recorded): any mismatch panics.
//! - *Reading* (`feed/read.rs`): N (`--rows`) submissions bulk-inserted by SQL, then paged
//!   through with `GET /api/v1/submissions` at `limit=500` and at the default limit,
//!   following the cursors: rows/s and p50/p99 per page against the targets (≥ 5,000 rows/s,
//!   p99 < 50 ms), each row served once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/mod.rs"]
mod common;
#[path = "../examples/changes_consumer.rs"]
#[allow(dead_code)]
mod consumer;
#[path = "feed/follow.rs"]
mod follow;
#[path = "feed/read.rs"]
mod read;

use common::Process;

/// Set in the environment of the consumer child: its copy file (with `ONCEFORM_URL` and
/// `ONCEFORM_TOKEN`).
pub const CONSUMER_FILE: &str = "ONCEFORM_BENCH_CONSUMER_FILE";

fn main() {
    if let Some(file) = std::env::var_os(CONSUMER_FILE) {
        return consume(file.into());
    }
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let flag = |name: &str| args.iter().any(|a| a == name);
    if !flag("--only-read") {
        let submissions = value("--submissions").and_then(|n| n.parse().ok()).unwrap_or(20_000);
        let kills = value("--kills").and_then(|n| n.parse().ok()).unwrap_or(5);
        follow::run(submissions, kills);
    }
    if !flag("--only-follow") {
        let rows = value("--rows").and_then(|n| n.parse().ok()).unwrap_or(100_000);
        read::run(rows);
    }
}

/// The consumer child: the example consumer following the feed until it is killed (an error,
/// a refused connection while a server restarts, ends it: the parent starts it again).
fn consume(file: std::path::PathBuf) {
    let consumer = consumer::Consumer {
        base: std::env::var("ONCEFORM_URL").unwrap(),
        token: std::env::var("ONCEFORM_TOKEN").unwrap(),
        file,
        limit: 500,
        follow: true,
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    if let Err(e) = rt.block_on(consumer.run(|_| {})) {
        eprintln!("consumer: {e}");
        std::process::exit(1);
    }
}

/// `serve` on a free port with `config`, rate limits off.
fn serve(config: &std::path::Path) -> Process {
    let p = Process::start(
        &["serve", "--config", config.to_str().unwrap()],
        &[("ONCEFORM_BIND", "127.0.0.1:0"), ("ONCEFORM_RATE_LIMIT", "off")],
    );
    assert!(p.first_line.contains("listening on"), "{}", p.first_line);
    p
}

/// A token with `scopes` made by `onceform api-token create`; its secret.
fn token(config: &std::path::Path, scopes: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_onceform"))
        .args([
            "--config",
            config.to_str().unwrap(),
            "api-token",
            "create",
            "--name",
            "bench",
            "--scope",
            scopes,
        ])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(out.status.success(), "api-token create: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().next().unwrap().trim().to_string()
}
