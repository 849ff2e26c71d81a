//! PostgreSQL's own ceiling for the accept transaction: pgbench running its SQL (the
//! submission, the duplicate look-up, three effect records, the delivery) with no
//! application in between, on the benchmark's database.

use std::process::Command;

const SCRIPT: &str = include_str!("accept.sql");
/// The limit of the idea: one statement inserting the submission and its three effect
/// records (`accept_one.sql`).
pub const ONE_STATEMENT: &str = include_str!("accept_one.sql");

/// (transactions committed, per second), or `None` when pgbench is not installed.
pub fn run(url: &str, dir: &std::path::Path, clients: usize, seconds: u64) -> Option<(usize, f64)> {
    run_script(url, dir, clients, seconds, SCRIPT)
}

/// `run` with another script.
pub fn run_script(
    url: &str,
    dir: &std::path::Path,
    clients: usize,
    seconds: u64,
    sql: &str,
) -> Option<(usize, f64)> {
    let script = dir.join(format!("pgbench-{}.sql", uuid::Uuid::new_v4().simple()));
    std::fs::write(&script, sql).ok()?;
    let out = Command::new("pgbench")
        .args(["-n", "-M", "simple", "-j", "2", "-c", &clients.to_string(), "-T", &seconds.to_string(), "-f"])
        .arg(&script)
        .arg(url)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let after = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
    };
    let failed = after("number of failed transactions: ").unwrap_or(0.0);
    assert!(
        out.status.success() && failed == 0.0,
        "pgbench failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some((after("number of transactions actually processed: ")? as usize, after("tps = ")?))
}
