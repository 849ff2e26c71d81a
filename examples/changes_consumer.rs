//! An example consumer of the change feed (`GET /api/v1/changes`, docs/changes.md): it keeps a
//! local copy of every submission's state (a JSON file: submission ID → its form, whether its
//! content is still there, each effect record's kind and state and the states it moved
//! through, the last duplicate decision)
//! and resumes after a restart without missing or repeating a change.
//!
//! ```text
//! ONCEFORM_URL=https://forms.example.com ONCEFORM_TOKEN=ofk_… \
//!   cargo run --example changes_consumer -- [--once] [COPY_FILE]
//! ```
//!
//! The token needs `read:submissions` (and `read:effects` for the effect states). The copy
//! and the cursor it was brought up to are one file (`COPY_FILE`, default
//! `./changes-copy.json`), replaced after each page by writing a new file and renaming it
//! over the old one: after a crash the file holds either the page or not, never half of it,
//! and never a cursor ahead of (or behind) the copy. It prints one line per change applied.
//! `--once` stops at the end of the feed; otherwise it waits and polls again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The local copy, and the cursor of the last change applied to it.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Copy {
    pub cursor: Option<String>,
    pub submissions: BTreeMap<String, Submission>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submission {
    pub form: String,
    /// `accepted`, `erased` (its content is gone) or `deleted`.
    pub status: String,
    /// Effect record ID → (kind, state).
    pub effects: BTreeMap<String, (String, String)>,
    /// Each state an effect record moved to, (effect record ID, state), in the order applied.
    #[serde(default)]
    pub history: Vec<(String, String)>,
    /// The last decision on a pair naming it as the later submission.
    pub decision: Option<String>,
    /// Retries refused with other content (409).
    pub conflicts: u64,
    /// Changes applied to it: a change applied twice would show here.
    pub changes: u64,
}

impl Copy {
    /// Applies one change of the feed; the line to print.
    pub fn apply(&mut self, change: &Value) -> String {
        let text = |key: &str| change[key].as_str().unwrap_or_default().to_string();
        let (id, kind) = (text("submission_id"), text("type"));
        let entry = self.submissions.entry(id.clone()).or_default();
        entry.form = text("form");
        entry.changes += 1;
        let detail = match kind.as_str() {
            "accepted" | "erased" | "deleted" => {
                entry.status = kind.clone();
                String::new()
            }
            "conflict" => {
                entry.conflicts += 1;
                String::new()
            }
            "effect_state" => {
                entry.effects.insert(text("effect_id"), (text("kind"), text("state")));
                entry.history.push((text("effect_id"), text("state")));
                format!(" {} {}", text("kind"), text("state"))
            }
            "decision" => {
                entry.decision = Some(text("status"));
                format!(" {}", text("status"))
            }
            _ => String::new(), // a type added later: counted, otherwise ignored
        };
        format!("{} {} {} {kind}{detail}", text("at"), entry.form, id)
    }
}

/// Reads the copy at `file` (an empty one if there is none yet).
pub fn load(file: &Path) -> Result<Copy, String> {
    match std::fs::read(file) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", file.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Copy::default()),
        Err(e) => Err(format!("{}: {e}", file.display())),
    }
}

/// Replaces the copy at `file` whole: a new file, flushed to disk, renamed over the old one.
pub fn save(file: &Path, copy: &Copy) -> Result<(), String> {
    let bytes = serde_json::to_vec_pretty(copy).map_err(|e| e.to_string())?;
    let next = file.with_extension("json.next");
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut out = std::fs::File::create(&next)?;
        out.write_all(&bytes)?;
        out.sync_all()?;
        std::fs::rename(&next, file)
    };
    write().map_err(|e| format!("{}: {e}", file.display()))
}

/// Where and how to read the feed.
pub struct Consumer {
    pub base: String,
    pub token: String,
    pub file: PathBuf,
    /// Changes per page (1–500).
    pub limit: u32,
    /// Keep polling at the end of the feed (else stop there).
    pub follow: bool,
}

impl Consumer {
    /// Follows the feed from the copy's cursor; `said` gets one line per change applied.
    pub async fn run(&self, mut said: impl FnMut(String)) -> Result<(), String> {
        let client =
            reqwest::Client::builder().timeout(Duration::from_secs(30)).build().map_err(|e| e.to_string())?;
        let mut copy = load(&self.file)?;
        loop {
            let mut url = format!("{}/api/v1/changes?limit={}", self.base, self.limit);
            if let Some(cursor) = &copy.cursor {
                // A cursor is URL-safe, but encode it anyway.
                url.push_str("&cursor=");
                url.push_str(&encode(cursor));
            }
            let resp = client.get(&url).bearer_auth(&self.token).send().await.map_err(|e| e.to_string())?;
            match resp.status().as_u16() {
                200 => {}
                410 => {
                    return Err(
                        "the cursor expired: start over from a full copy (GET /api/v1/submissions)".into()
                    )
                }
                status => {
                    return Err(format!(
                        "the feed answered {status}: {}",
                        resp.text().await.unwrap_or_default()
                    ))
                }
            }
            let page: Value = resp.json().await.map_err(|e| e.to_string())?;
            let items = page["items"].as_array().cloned().unwrap_or_default();
            let lines: Vec<String> = items.iter().map(|change| copy.apply(change)).collect();
            if let Some(next) = page["next_cursor"].as_str() {
                copy.cursor = Some(next.to_string());
            }
            if !items.is_empty() {
                save(&self.file, &copy)?;
            }
            lines.into_iter().for_each(&mut said);
            if items.is_empty() {
                if !self.follow {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    }
}

/// Percent-encodes everything but unreserved characters.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let follow = !args.iter().any(|a| a == "--once");
    let file = args.iter().find(|a| !a.starts_with("--")).cloned().unwrap_or("changes-copy.json".into());
    let Ok(token) = std::env::var("ONCEFORM_TOKEN") else {
        eprintln!("set ONCEFORM_TOKEN to an API token with read:submissions (and read:effects)");
        return std::process::ExitCode::FAILURE;
    };
    let base = std::env::var("ONCEFORM_URL").unwrap_or("http://127.0.0.1:8080".into());
    let consumer =
        Consumer { base: base.trim_end_matches('/').into(), token, file: file.into(), limit: 100, follow };
    match consumer.run(|line| println!("{line}")).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("changes_consumer: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
