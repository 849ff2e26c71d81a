//! The HTTP load generator: clients in a loop until the time is up, every status checked.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::json;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// Every request a new operation: 201.
    Accept,
    /// Existing operations, same content: 200.
    Replay,
    /// 70 % new, 30 % retries, and every 100th request of a client a burst of 64
    /// simultaneous requests on one new key (one 201, the rest 200 or in-progress 409).
    Mixed,
    /// Existing operations, different content: 409.
    Conflict,
    /// Every request a new operation, all from one email address (a bot): 201, and each
    /// one a repeat for the duplicate detector (`--traffic email-flood`).
    SameEmail,
    /// Every request a new operation, all with one name and company, a new email each (a
    /// bot): 201, each one linked by its name (`--traffic name-flood`).
    SameName,
    /// Every request a new operation; every fourth from the visitor of 401 requests before
    /// (same email and name, a new message): 201, and a pair for the duplicate detector.
    Repeats,
}

impl Scenario {
    /// The main table's traffic, new visitors (`accept`) first, then the two floods of one
    /// identity (issue 44).
    pub const ALL: [Scenario; 6] = [
        Scenario::Accept,
        Scenario::SameEmail,
        Scenario::SameName,
        Scenario::Replay,
        Scenario::Mixed,
        Scenario::Conflict,
    ];

    /// Its name in `--traffic`.
    pub fn option(self) -> &'static str {
        match self {
            Scenario::SameEmail => "email-flood",
            Scenario::SameName => "name-flood",
            Scenario::Repeats => "repeats",
            other => other.name(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Accept => "accept",
            Scenario::Replay => "replay",
            Scenario::Mixed => "mixed",
            Scenario::Conflict => "conflict",
            Scenario::SameEmail => "one-email flood",
            Scenario::SameName => "one-name flood",
            Scenario::Repeats => "a repeat in every four",
        }
    }
}

#[derive(Debug, Default, Clone)]
pub struct Tally {
    pub rate: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Responses whose status the scenario did not expect (5xx included).
    pub unexpected: usize,
    pub five_xx: usize,
    /// 201 responses: operations accepted.
    pub created: usize,
}

impl Tally {
    pub fn rate_only(rate: f64) -> Tally {
        Tally { rate, ..Tally::default() }
    }

    /// Cells of the same traffic as one: the mean rate and p50, the largest p99, the counts
    /// added.
    pub fn mean(cells: &[Tally]) -> Tally {
        let n = cells.len() as f64;
        Tally {
            rate: cells.iter().map(|c| c.rate).sum::<f64>() / n,
            p50_ms: cells.iter().map(|c| c.p50_ms).sum::<f64>() / n,
            p99_ms: cells.iter().map(|c| c.p99_ms).fold(0.0, f64::max),
            unexpected: cells.iter().map(|c| c.unexpected).sum(),
            five_xx: cells.iter().map(|c| c.five_xx).sum(),
            created: cells.iter().map(|c| c.created).sum(),
        }
    }

    /// The rate with the p50 and p99 of sorted microsecond samples.
    pub fn from_samples(sorted: &[u64], rate: f64) -> Tally {
        Tally {
            rate,
            p50_ms: crate::common::quantile_ms(sorted, 0.50),
            p99_ms: crate::common::quantile_ms(sorted, 0.99),
            ..Tally::default()
        }
    }
}

/// Each operation from its own visitor (its own email, name and company), as real traffic is.
pub fn body(key: &str, message: &str) -> serde_json::Value {
    json!({"name": format!("Load Test {key}"), "email": format!("{key}@example.com"),
           "company": format!("Company {key}"), "topic": "Sales", "message": format!("{message} {key}")})
}

fn new_key() -> String {
    format!("load-{}", uuid::Uuid::new_v4().simple())
}

struct Shared {
    same_email: bool,
    same_name: bool,
    repeats: bool,
    client: reqwest::Client,
    addrs: Vec<String>,
    next: AtomicUsize,
    created: AtomicUsize,
    unexpected: AtomicUsize,
    five_xx: AtomicUsize,
}

impl Shared {
    /// Sends one submission; returns its latency in µs after checking the status.
    async fn send(&self, key: &str, message: &str, ok: &[u16]) -> u64 {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let addr = &self.addrs[n % self.addrs.len()];
        let mut body = body(key, message);
        if self.same_email {
            body["email"] = "one.bot@example.com".into();
        }
        if self.same_name {
            (body["name"], body["company"]) = ("One Bot".into(), "Bot Company".into());
        }
        if self.repeats {
            let visitor = if n % 4 == 3 && n >= 401 { n - 401 } else { n };
            body["email"] = format!("visitor-{visitor}@example.com").into();
        }
        let started = Instant::now();
        let resp = self
            .client
            .post(format!("{addr}/api/forms/contact/submissions"))
            .header("Idempotency-Key", key)
            .json(&body)
            .send()
            .await;
        let status = resp.as_ref().map(|r| r.status().as_u16()).unwrap_or(0);
        if let Ok(r) = resp {
            let _ = r.bytes().await;
        }
        let micros = started.elapsed().as_micros() as u64;
        if status == 201 {
            self.created.fetch_add(1, Ordering::Relaxed);
        }
        if status >= 500 || status == 0 {
            self.five_xx.fetch_add(1, Ordering::Relaxed);
        }
        if !ok.contains(&status) {
            self.unexpected.fetch_add(1, Ordering::Relaxed);
        }
        micros
    }
}

/// When a run ends.
#[derive(Debug, Clone)]
pub enum Stop {
    /// This long after its clock starts.
    After(Duration),
    /// Once the flag is set (when the work measured alongside is done).
    When(Arc<AtomicBool>),
}

impl Stop {
    fn going(&self, started: Instant) -> bool {
        match self {
            Stop::After(d) => started.elapsed() < *d,
            Stop::When(done) => !done.load(Ordering::Relaxed),
        }
    }
}

/// Runs `scenario` with `clients` concurrent clients for `seconds` against `addrs` (round robin).
pub async fn run(addrs: &[String], scenario: Scenario, clients: usize, seconds: u64) -> Tally {
    run_until(addrs, scenario, clients, Stop::After(Duration::from_secs(seconds))).await
}

/// Runs `scenario` with `clients` concurrent clients against `addrs` until `stop`.
pub async fn run_until(addrs: &[String], scenario: Scenario, clients: usize, stop: Stop) -> Tally {
    let shared = Arc::new(Shared {
        same_email: scenario == Scenario::SameEmail,
        same_name: scenario == Scenario::SameName,
        repeats: scenario == Scenario::Repeats,
        client: reqwest::Client::builder().pool_max_idle_per_host(clients * 2).build().unwrap(),
        addrs: addrs.to_vec(),
        next: AtomicUsize::new(0),
        created: AtomicUsize::new(0),
        unexpected: AtomicUsize::new(0),
        five_xx: AtomicUsize::new(0),
    });
    // Operations to replay or contradict, accepted before the clock starts.
    let existing: Arc<Vec<String>> = Arc::new(match scenario {
        Scenario::Accept | Scenario::SameEmail | Scenario::SameName => Vec::new(),
        _ => {
            let keys: Vec<String> = (0..(clients * 4).max(64)).map(|_| new_key()).collect();
            for chunk in keys.chunks(16) {
                join_all(chunk.iter().map(|k| shared.send(k, "Load", &[201]))).await;
            }
            keys
        }
    });
    let shared_for_clients = shared.clone();
    let (samples, rate) = drive(clients, stop, move |i| {
        let (shared, existing) = (shared_for_clients.clone(), existing.clone());
        async move {
            let old = existing.get(i % existing.len().max(1)).cloned().unwrap_or_default();
            match scenario {
                Scenario::Accept | Scenario::SameEmail | Scenario::SameName | Scenario::Repeats => {
                    vec![shared.send(&new_key(), "Load", &[201]).await]
                }
                Scenario::Replay => vec![shared.send(&old, "Load", &[200]).await],
                Scenario::Conflict => vec![shared.send(&old, "Changed", &[409]).await],
                Scenario::Mixed if (i / clients) % 100 == 99 => {
                    let key = new_key();
                    join_all((0..64).map(|_| shared.send(&key, "Load", &[201, 200, 409]))).await
                }
                Scenario::Mixed if fastrand::f64() < 0.3 => vec![shared.send(&old, "Load", &[200]).await],
                Scenario::Mixed => vec![shared.send(&new_key(), "Load", &[201]).await],
            }
        }
    })
    .await;
    Tally {
        unexpected: shared.unexpected.load(Ordering::Relaxed),
        five_xx: shared.five_xx.load(Ordering::Relaxed),
        created: shared.created.load(Ordering::Relaxed),
        ..Tally::from_samples(&samples, rate)
    }
}

/// `clients` concurrent loops, each awaiting `request(i)` (`i` = its client number plus
/// `clients` per round, as the scenarios count) until `stop`; returns the sorted latency
/// samples (µs) and the requests per second.
pub async fn drive<F, Fut>(clients: usize, stop: Stop, request: F) -> (Vec<u64>, f64)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Vec<u64>> + Send + 'static,
{
    let request = Arc::new(request);
    let started = Instant::now();
    let tasks = (0..clients).map(|c| {
        let (request, stop) = (request.clone(), stop.clone());
        tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut i = c;
            while stop.going(started) {
                i += clients;
                samples.extend(request(i).await);
            }
            samples
        })
    });
    let mut samples: Vec<u64> =
        join_all(tasks).await.into_iter().flat_map(|r| r.unwrap_or_default()).collect();
    let elapsed = started.elapsed().as_secs_f64();
    samples.sort_unstable();
    let rate = samples.len() as f64 / elapsed;
    (samples, rate)
}
