//! Inbound webhook traffic: `POST /hooks/bench` with Standard Webhooks signed bodies from the
//! same Rust client as the form rows: every delivery a new event ID (200, stored with one
//! record per handler), or one stored event delivered again and again (200,
//! `Idempotent-Replayed`). `check` then holds the database to it: stored events = distinct
//! event IDs sent, each with exactly one record per handler.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel::prelude::*;
use diesel::sql_types::BigInt;
use onceform::db::schema::{inbound_events, side_effects, submissions};
use onceform::db::{DbError, Pool};
use onceform::web::hooks::verify::standard_webhooks;
use onceform::with_conn;

use crate::traffic::{drive, Stop, Tally};

const SOURCE: &str = "bench";
const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// The variable `serve` reads the source's secret from.
pub const SECRET_VAR: &str = "ONCEFORM_BENCH_HOOK_SECRET";
const HANDLERS: i64 = 2;

/// `extra` plus the `[hooks.bench]` source: two handlers, whose records the benchmark's
/// disabled workers leave PENDING (this measures ingest, not delivery).
pub fn with_source(extra: &str) -> String {
    format!(
        "{extra}\n\n[hooks.{SOURCE}]\nverify = \"standard-webhooks\"\nsecret_env = \"{SECRET_VAR}\"\n\
         [[hooks.{SOURCE}.handlers]]\nname = \"to-crm\"\nkind = \"forward\"\nurl = \"http://127.0.0.1:9/events\"\n\
         [[hooks.{SOURCE}.handlers]]\nname = \"owner\"\nkind = \"owner_notification\"\nnotify = [\"owner@example.com\"]\n"
    )
}

/// The secret's variable and value, for the `serve` processes.
pub fn env() -> (&'static str, &'static str) {
    (SECRET_VAR, WHSEC)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every delivery a new event ID: 200, stored.
    Unique,
    /// Deliveries of one stored event ID: 200 with `Idempotent-Replayed`, nothing stored.
    Replay,
}

impl Mode {
    pub const ALL: [Mode; 2] = [Mode::Unique, Mode::Replay];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Unique => "hooks: unique event IDs",
            Mode::Replay => "hooks: one event ID replayed",
        }
    }
}

/// A run's figures and the distinct event IDs it sent.
pub struct Run {
    pub tally: Tally,
    pub ids: usize,
}

/// What runs on one database sent, for `check`.
#[derive(Debug, Default)]
pub struct Sent {
    pub ids: usize,
    pub five_xx: usize,
}

impl Sent {
    pub fn add(&mut self, run: &Run) {
        self.ids += run.ids;
        self.five_xx += run.tally.five_xx;
    }
}

struct Sender {
    client: reqwest::Client,
    url: String,
    key: Vec<u8>,
    unexpected: AtomicUsize,
    five_xx: AtomicUsize,
}

impl Sender {
    /// One signed delivery of `id`; its latency in µs after checking the answer.
    async fn deliver(&self, id: &str, replay: bool) -> u64 {
        let body = format!(
            r#"{{"type":"ticket.created","data":{{"ticket":"{id}","subject":"Printer on fire","from":"load@example.com"}}}}"#
        );
        let ts = chrono::Utc::now().timestamp();
        let signature = standard_webhooks::sign(&self.key, id, ts, body.as_bytes());
        let started = Instant::now();
        let resp = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("webhook-id", id)
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", signature)
            .body(body)
            .send()
            .await;
        let (status, replayed) = resp
            .as_ref()
            .map_or((0, false), |r| (r.status().as_u16(), r.headers().contains_key("idempotent-replayed")));
        if let Ok(r) = resp {
            let _ = r.bytes().await;
        }
        let micros = started.elapsed().as_micros() as u64;
        if status >= 500 || status == 0 {
            self.five_xx.fetch_add(1, Ordering::Relaxed);
        }
        if status != 200 || replayed != replay {
            self.unexpected.fetch_add(1, Ordering::Relaxed);
        }
        micros
    }
}

fn new_id() -> String {
    format!("evt-{}", uuid::Uuid::new_v4().simple())
}

/// `mode` traffic from `clients` concurrent clients for `seconds` against `addr`.
pub async fn run(addr: &str, mode: Mode, clients: usize, seconds: u64) -> Run {
    let sender = Arc::new(Sender {
        client: reqwest::Client::builder().pool_max_idle_per_host(clients * 2).build().unwrap(),
        url: format!("{addr}/hooks/{SOURCE}"),
        key: standard_webhooks::decode_secret(WHSEC).unwrap(),
        unexpected: AtomicUsize::new(0),
        five_xx: AtomicUsize::new(0),
    });
    // The replayed event is stored before the clock starts.
    let replayed = new_id();
    if mode == Mode::Replay {
        sender.deliver(&replayed, false).await;
    }
    let (s, id) = (sender.clone(), replayed.clone());
    let (samples, rate) = drive(clients, Stop::After(Duration::from_secs(seconds)), move |_| {
        let (s, id) = (s.clone(), id.clone());
        async move {
            match mode {
                Mode::Unique => vec![s.deliver(&new_id(), false).await],
                Mode::Replay => vec![s.deliver(&id, true).await],
            }
        }
    })
    .await;
    let ids = match mode {
        Mode::Unique => samples.len(),
        Mode::Replay => 1,
    };
    let tally = Tally {
        unexpected: sender.unexpected.load(Ordering::Relaxed),
        five_xx: sender.five_xx.load(Ordering::Relaxed),
        ..Tally::from_samples(&samples, rate)
    };
    Run { tally, ids }
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Stored events = distinct event IDs sent, no anchor rows in `submissions` (records belong
/// to their event), exactly one record per (event, handler), no 5xx; loud if not.
pub fn check(backend: &str, pool: &Pool, sent: &Sent) {
    let (ids, five_xx) = (sent.ids, sent.five_xx);
    let kinds = format!("hook:{SOURCE}:%");
    let (events, anchors, records, pairs) = with_conn!(pool, |c| {
        let counts = |c: &mut _| -> Result<(i64, i64, i64, i64), DbError> {
            let events =
                inbound_events::table.filter(inbound_events::source.eq(SOURCE)).count().get_result(c)?;
            let anchors = submissions::table
                .filter(submissions::form.eq(format!("hook:{SOURCE}")))
                .count()
                .get_result(c)?;
            let records =
                side_effects::table.filter(side_effects::kind.like(&kinds)).count().get_result(c)?;
            // (event, handler) pairs holding exactly one record, on a stored event.
            let pairs = diesel::sql_query(format!(
                "SELECT COUNT(*) AS n FROM (SELECT s.inbound_event_id FROM side_effects s \
                 JOIN inbound_events e ON e.id = s.inbound_event_id \
                 WHERE s.kind LIKE '{kinds}' GROUP BY s.inbound_event_id, s.kind HAVING COUNT(*) = 1) one"
            ))
            .get_result::<Count>(c)?
            .n;
            Ok((events, anchors, records, pairs))
        };
        counts(c)
    })
    .unwrap();
    let ok = events == ids as i64
        && anchors == 0
        && records == HANDLERS * events
        && pairs == HANDLERS * events
        && five_xx == 0;
    println!(
        "hooks' consistency ({backend}): {events} events stored for {ids} distinct event IDs sent, \
         {records} handler records ({pairs} (event, handler) pairs with exactly one, {HANDLERS} handlers), \
         {five_xx} 5xx: {}\n",
        if ok { "OK" } else { "FAILED" }
    );
    assert!(ok, "hooks' consistency check failed on {backend}");
}
