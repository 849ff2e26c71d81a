//! Replays and accepts measured with `wrk`, the tool svix-server's figures were taken with:
//! a C load generator leaves more of the two cores to the server than the Rust client does.
//! Its Lua script counts every answer that is not the expected one. Skipped when `wrk` is
//! not installed (`apt-get install wrk`).

use std::process::Command;

use crate::traffic::{body, Tally};

/// Operations accepted before the clock starts, replayed round robin (each in the server's
/// replay memory after its first replay).
pub const WARM_KEYS: usize = 64;

/// More keys than the server's replay memory holds (`server.replay_cache`, 20,000): replayed
/// round robin, each has left the memory before its turn comes again (a cold replay).
pub const COLD_KEYS: usize = 30_000;

/// Replays round robin over `{KEYS}` (each answered 200): the body `traffic::body` accepted
/// each key with, byte for byte in its fields.
const REPLAY: &str = r#"
local keys = {KEYS}
local n = 0
function request()
  n = n % #keys + 1
  local k = keys[n]
  local body = string.format('{"name":"Load Test %s","email":"%s@example.com","company":"Company %s","topic":"Sales","message":"Load %s"}',
    k, k, k, k)
  return wrk.format("POST", "/api/forms/contact/submissions",
    {["Content-Type"] = "application/json", ["Idempotency-Key"] = k}, body)
end
"#;

/// A new operation on every request (each answered 201), its key made of the run, the
/// thread and a counter; `{NAME}`, `{EMAIL}` and `{COMPANY}` are the Lua expressions of its
/// visitor's name, email address and company.
const ACCEPT: &str = r#"
local n = 0
function request()
  n = n + 1
  local k = string.format("wrk-{RUN}-%d-%d", id, n)
  local body = string.format('{"name":"%s","email":"%s","company":"%s","topic":"Sales","message":"Load %s"}',
    {NAME}, {EMAIL}, {COMPANY}, k)
  return wrk.format("POST", "/api/forms/contact/submissions",
    {["Content-Type"] = "application/json", ["Idempotency-Key"] = k}, body)
end
"#;

/// Counts every answer that is not `{OK}`, the 5xx among them and the 201s, summed over the
/// threads in `done`.
const COUNT: &str = r#"
bad, five_xx, created = 0, 0, 0 -- globals: done() reads them from each thread
threads = {}
counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end
function response(status)
  if status ~= {OK} then bad = bad + 1 end
  if status >= 500 then five_xx = five_xx + 1 end
  if status == 201 then created = created + 1 end
end
function done(summary, latency, requests)
  local b, f, c = 0, 0, 0
  for _, t in ipairs(threads) do b, f, c = b + t:get("bad"), f + t:get("five_xx"), c + t:get("created") end
  io.write(string.format("onceform: %d %d %.0f %.0f %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), b, f, c))
end
"#;

/// Replay traffic over `keys` operations from `clients` wrk connections for `seconds`;
/// `None` without wrk.
pub async fn replay(
    addr: &str,
    dir: &std::path::Path,
    clients: usize,
    seconds: u64,
    keys: usize,
) -> Option<Tally> {
    Command::new("wrk").arg("--version").output().ok()?;
    let client = reqwest::Client::new();
    let keys: Vec<String> = (0..keys).map(|_| format!("wrk-{}", uuid::Uuid::new_v4().simple())).collect();
    let mut created = 0;
    for chunk in keys.chunks(32) {
        for accepted in
            futures_util::future::join_all(chunk.iter().map(|key| accept_key(&client, addr, key))).await
        {
            created += usize::from(accepted?);
        }
    }
    let quoted: Vec<String> = keys.iter().map(|k| format!("{k:?}")).collect();
    let script = REPLAY.replace("{KEYS}", &format!("{{{}}}", quoted.join(",")));
    let tally = run(addr, dir, clients, seconds, &script, 200)?;
    Some(Tally { created, ..tally })
}

/// Accepts `key` once, retried with the same key where a request failed (a pooled connection
/// the server closed as it was reused): whether it is stored (a retry answered 200 was
/// accepted by the try it lost); `None` if three tries failed.
async fn accept_key(client: &reqwest::Client, addr: &str, key: &str) -> Option<bool> {
    for _ in 0..3 {
        let url = format!("{addr}/api/forms/contact/submissions");
        if let Ok(resp) =
            client.post(url).header("Idempotency-Key", key).json(&body(key, "Load")).send().await
        {
            return Some(matches!(resp.status().as_u16(), 200 | 201));
        }
    }
    None
}

/// Who sends each new operation (issue 44's traffic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visitor {
    /// A new person each time: their own email, name and company (made of the key).
    New,
    /// One email address for all (a bot): each a repeat for the duplicate detector.
    SameEmail,
    /// One name and company for all, a new email each: each linked by its name.
    SameName,
}

impl Visitor {
    /// The row's name, as the Rust client's scenarios name them.
    pub fn name(self) -> &'static str {
        match self {
            Visitor::New => "accept (a new person each)",
            Visitor::SameEmail => "one-email flood",
            Visitor::SameName => "one-name flood",
        }
    }
}

/// New operations from `clients` wrk connections for `seconds`; `created` counts the 201s
/// wrk saw (a request still in flight when wrk stops may be accepted unseen). `None`
/// without wrk.
pub async fn accept(
    addr: &str,
    dir: &std::path::Path,
    clients: usize,
    seconds: u64,
    visitor: Visitor,
) -> Option<Tally> {
    let run_id = uuid::Uuid::new_v4().simple().to_string();
    let (name, email, company) = match visitor {
        Visitor::New => ("\"Load Test \" .. k", "k .. \"@example.com\"", "\"Company \" .. k"),
        Visitor::SameEmail => ("\"Load Test \" .. k", "\"one.bot@example.com\"", "\"Company \" .. k"),
        Visitor::SameName => ("\"One Bot\"", "k .. \"@example.com\"", "\"Bot Company\""),
    };
    let script = ACCEPT
        .replace("{RUN}", &run_id[..8])
        .replace("{NAME}", name)
        .replace("{EMAIL}", email)
        .replace("{COMPANY}", company);
    run(addr, dir, clients, seconds, &script, 201)
}

/// Runs `script` (a `request` function; the counting is added) and reads its tally.
fn run(
    addr: &str,
    dir: &std::path::Path,
    clients: usize,
    seconds: u64,
    script: &str,
    ok: u16,
) -> Option<Tally> {
    Command::new("wrk").arg("--version").output().ok()?;
    let path = dir.join(format!("wrk-{}.lua", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, format!("{script}{}", COUNT.replace("{OK}", &ok.to_string()))).ok()?;
    let out = Command::new("wrk")
        .args([
            "-t",
            &clients.min(2).to_string(),
            "-c",
            &clients.to_string(),
            "-d",
            &format!("{seconds}s"),
            "-s",
        ])
        .arg(&path)
        .arg(addr)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find_map(|l| l.strip_prefix("onceform: "))?;
    let v: Vec<f64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    let [requests, duration_us, p50_us, p99_us, bad, five_xx, created] = v[..] else { return None };
    Some(Tally {
        rate: requests / (duration_us / 1e6),
        p50_ms: p50_us / 1000.0,
        p99_ms: p99_us / 1000.0,
        unexpected: bad as usize,
        five_xx: five_xx as usize,
        created: created as usize,
    })
}
