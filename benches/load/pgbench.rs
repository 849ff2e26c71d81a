//! PostgreSQL's own ceiling for the accept transaction: pgbench running its SQL (the
//! submission, the duplicate look-up, three effect records, the delivery) with no
//! application in between, on the benchmark's database.

use std::process::Command;

const SCRIPT: &str = include_str!("accept.sql");

/// (transactions committed, per second), or `None` when pgbench is not installed.
pub fn run(url: &str, dir: &std::path::Path, clients: usize, seconds: u64) -> Option<(usize, f64)> {
    let script = dir.join("accept.sql");
    std::fs::write(&script, SCRIPT).ok()?;
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
