//! What an operator reads: `--version`, JSON logs (`ONCEFORM_LOG_FORMAT=json`) in which every
//! line of a request carries its `request_id` (also returned as `X-Request-Id`), and the
//! workers' lines for its side effects name the submission that request created.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{inquiry, new_key, own_dir, Backend, TestDb};

#[test]
fn version_prints_the_package_version() {
    let out = Command::new(env!("CARGO_BIN_EXE_onceform"))
        .arg("--version")
        .current_dir(own_dir())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("onceform {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn an_unknown_log_format_is_one_line_and_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_onceform"))
        .arg("check-config")
        .current_dir(own_dir())
        .env("ONCEFORM_LOG_FORMAT", "xml")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("ONCEFORM_LOG_FORMAT"), "{err}");
}

/// `onceform serve` on port 0 with JSON logs; its stderr lines are collected as they come.
struct Served {
    child: Child,
    base: String,
    lines: Arc<Mutex<Vec<String>>>,
    dir: std::path::PathBuf,
}

impl Served {
    fn start(db_url: &str) -> Served {
        let dir = std::env::temp_dir().join(format!("onceform-logs-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_onceform"))
            .arg("serve")
            .current_dir(&dir)
            .env_remove("ONCEFORM_CONFIG")
            .env_remove("RUST_LOG")
            .env("ONCEFORM_DATABASE_URL", db_url)
            .env("ONCEFORM_BIND", "127.0.0.1:0")
            .env("ONCEFORM_LOG_FORMAT", "json")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        let base = first.trim().strip_prefix("onceform listening on ").expect("the address line").to_string();
        std::thread::spawn(move || for _ in stdout.lines() {});
        Served { child, base, lines, dir }
    }

    fn json_lines(&self) -> Vec<Value> {
        let lines = self.lines.lock().unwrap();
        lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("not a JSON log line: {l}")))
            .collect()
    }

    /// Waits (up to a generous limit, not a timing assertion) until `found` holds.
    async fn wait_for(&self, found: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let lines = self.json_lines();
            if found(&lines) || start.elapsed() > Duration::from_secs(60) {
                return lines;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // SAFETY: sending SIGTERM to the child this test started.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn message(line: &Value) -> &str {
    line["fields"]["message"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_carry_the_request_id_from_request_to_side_effects() {
    let db = TestDb::new(Backend::Sqlite);
    let served = Served::start(&db.url);
    let client = reqwest::Client::new();
    let resp = client
        .post(format!("{}/api/forms/contact/submissions", served.base))
        .header("Idempotency-Key", new_key())
        .json(&inquiry("log me"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let request_id = resp.headers()["x-request-id"].to_str().unwrap().to_string();
    let submission = resp.json::<Value>().await.unwrap()["submission_id"].as_str().unwrap().to_string();

    let attempts_for = |lines: &[Value]| {
        lines
            .iter()
            .filter(|l| message(l) == "attempt" && l["fields"]["submission"] == submission.as_str())
            .count()
    };
    let lines = served.wait_for(|lines| attempts_for(lines) >= 3).await;
    let of_request: Vec<&Value> =
        lines.iter().filter(|l| l["span"]["request_id"] == request_id.as_str()).collect();
    let messages: Vec<&str> = of_request.iter().map(|l| message(l)).collect();
    assert!(messages.contains(&"request"), "the access line carries the request ID: {messages:?}");
    let accepted =
        of_request.iter().find(|l| message(l) == "accepted").expect("an `accepted` line in the request");
    assert_eq!(accepted["fields"]["submission"], submission.as_str());
    assert_eq!(attempts_for(&lines), 3, "one attempt line per side effect names the submission");

    // A proxy's request ID is kept; a malformed one is replaced.
    let resp = client
        .get(format!("{}/healthz", served.base))
        .header("X-Request-Id", "nginx-0123456789abcdef")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-request-id"], "nginx-0123456789abcdef");
    let resp =
        client.get(format!("{}/healthz", served.base)).header("X-Request-Id", "bad id").send().await.unwrap();
    assert_ne!(resp.headers()["x-request-id"], "bad id");
}
