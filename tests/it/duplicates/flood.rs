//! One identity flooding (issue 44): a bot sending one email, or one name and company, with
//! fresh operation IDs links a bounded number of its submissions (`FLOOD` per key in the
//! window), so the flood costs the single writer no more than new visitors do; a genuine
//! repeat is still paired for review.

use std::sync::Arc;
use std::time::Instant;

use onceform::config::{Config, Form};
use onceform::db::{DbError, Pool};
use onceform::services::accept::{Acceptor, Intake};
use onceform::with_conn;
use serde_json::Value;

use crate::on_both_backends;
use crate::support::{inquiry, new_key, spawn_app, test_config, test_keyring, Backend, TestDb};

on_both_backends!(a_flood_of_one_address_links_a_bounded_cluster_and_a_genuine_repeat_is_still_paired);

/// 200 submissions from one address with fresh keys: the first `FLOOD` are linked and
/// screened (one cluster), the rest add no pair row; another visitor's repeat sent after
/// the flood is still paired for review.
async fn a_flood_of_one_address_links_a_bounded_cluster_and_a_genuine_repeat_is_still_paired(
    backend: Backend,
) {
    use onceform::db::duplicates::FLOOD;
    let app = spawn_app(backend).await;
    let mut bot = inquiry("Cheap watches, best prices, visit our shop today");
    bot["email"] = "one.bot@example.com".into();
    bot["name"] = "Watch Seller".into();
    bot["company"] = "Watches".into();
    let mut first = String::new();
    for n in 0..200 {
        let resp = app.submit(&new_key(), &bot).await;
        assert_eq!(resp.status(), 201);
        if n == 0 {
            let body: Value = resp.json().await.unwrap();
            first = body["submission_id"].as_str().unwrap().to_string();
        }
    }
    let mut visitor = inquiry("Quote for 40 units of the X200 please");
    visitor["email"] = "grace@example.com".into();
    visitor["name"] = "Grace Hopper".into();
    visitor["company"] = "Navy".into();
    let original: Value = app.submit(&new_key(), &visitor).await.json().await.unwrap();
    visitor["message"] = "Quote for 40 units of X200, please".into();
    let repeat: Value = app.submit(&new_key(), &visitor).await.json().await.unwrap();

    let pairs = app.screened_pairs().await;
    let (flood, genuine): (Vec<_>, Vec<_>) = pairs.iter().partition(|p| p.1 != repeat["submission_id"]);
    assert!(!flood.is_empty() && flood.len() < FLOOD as usize, "a bounded cluster: {} pairs", flood.len());
    assert!(flood.iter().all(|p| p.0 == first && p.4 == "open"), "one cluster under the first: {flood:?}");
    assert_eq!(genuine.len(), 1, "{genuine:?}");
    assert_eq!(
        (genuine[0].0.as_str(), genuine[0].4.as_str()),
        (original["submission_id"].as_str().unwrap(), "open")
    );
    assert_eq!(app.stats().await.submissions, 202, "a flood is accepted, only not linked");
}

/// The traffic of one measured run.
#[derive(Clone, Copy, Debug)]
enum Identity {
    /// A new person each: unique email, name and company.
    New,
    /// One email address, a new message each.
    OneEmail,
    /// One name and company, a new email each.
    OneName,
}

fn body(identity: Identity, i: usize) -> Value {
    let mut v = inquiry(&format!("Please call me about order {i} next week"));
    match identity {
        Identity::New => {
            v["email"] = format!("person-{i}@example.com").into();
            v["name"] = format!("Person Number{i}").into();
            v["company"] = format!("Company {i} Ltd").into();
        }
        Identity::OneEmail => v["email"] = "one.bot@example.com".into(),
        Identity::OneName => v["email"] = format!("bot-{i}@example.com").into(),
    }
    v
}

fn intake(form: &Form, v: &Value) -> Intake {
    let raw =
        v.as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect();
    Intake {
        form: form.clone(),
        operation_id: Some(onceform::domain::OperationId::generate()),
        channel: onceform::services::request_log::Channel::Api,
        fields: onceform::domain::normalise(&**form, &raw).unwrap(),
        scans: Default::default(),
        received: None,
        test: false,
    }
}

/// The process's CPU seconds (user + system, every thread: HTTP-less accepts, the SQLite
/// writer, the screener).
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(u.ru_utime) + s(u.ru_stime)
}

fn pending(pool: &Pool) -> i64 {
    use diesel::prelude::*;
    use onceform::db::schema::duplicate_pairs::dsl as p;
    with_conn!(pool, |c| p::duplicate_pairs
        .filter(p::status.eq("screening"))
        .count()
        .get_result::<i64>(c)
        .map_err(DbError::from))
    .unwrap()
}

fn pairs(pool: &Pool) -> i64 {
    use diesel::prelude::*;
    use onceform::db::schema::duplicate_pairs::dsl as p;
    with_conn!(pool, |c| p::duplicate_pairs.count().get_result::<i64>(c).map_err(DbError::from)).unwrap()
}

fn setup(backend: Backend) -> (TestDb, Arc<Config>, Pool, Acceptor) {
    let db = TestDb::new(backend);
    let config = Arc::new(test_config(&db.url));
    let pool = Pool::connect(&config.database).unwrap();
    let acceptor = Acceptor::start(config.clone(), pool.clone(), test_keyring()).unwrap();
    (db, config, pool, acceptor)
}

/// One measured run: the accepts (wall and process CPU seconds until the last returned),
/// then the screening of what they linked (the same after it), and the pair rows left.
struct Measured {
    accept_wall: f64,
    accept_cpu: f64,
    screen_wall: f64,
    screen_cpu: f64,
    pairs: i64,
}

/// `n` accepts of `identity` by `clients` threads, then the screening of what they linked.
fn run(identity: Identity, n: usize, clients: usize) -> Measured {
    let (_db, config, pool, acceptor) = setup(Backend::Sqlite);
    let form = Form::new("contact", config.form("contact").unwrap().clone());
    let (wall, cpu) = (Instant::now(), cpu_seconds());
    std::thread::scope(|s| {
        for t in 0..clients {
            let (acceptor, form) = (&acceptor, &form);
            s.spawn(move || {
                for i in (t..n).step_by(clients) {
                    acceptor.accept(intake(form, &body(identity, i))).unwrap();
                }
            });
        }
    });
    let (accept_wall, accept_cpu) = (wall.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    let (wall, cpu) = (Instant::now(), cpu_seconds());
    while pending(&pool) > 0 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let (screen_wall, screen_cpu) = (wall.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    Measured { accept_wall, accept_cpu, screen_wall, screen_cpu, pairs: pairs(&pool) }
}

/// Where a flood's time goes on SQLite: CPU per accept (process-wide: the accepting
/// threads, the writer and the screener) for new visitors against one email and one name,
/// while accepting and then while the screener finishes. Compare the ratios of one run only:
/// `FLOOD_N=2000 cargo nextest run -E 'test(/flood_cost_per_accept/)' --run-ignored only --no-capture`
#[test]
#[ignore = "a measurement, not a check"]
fn flood_cost_per_accept() {
    let n: usize = std::env::var("FLOOD_N").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let _warm = run(Identity::New, n / 4, 16);
    println!(
        "| traffic | accepts | accepts/s | CPU ms per accept | screening after, s | its CPU ms per accept | \
         × new: rate | × new: CPU (both) | pair rows |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut new: Option<(f64, f64)> = None;
    for identity in [Identity::New, Identity::OneEmail, Identity::OneName] {
        let m = run(identity, n, 16);
        let (rate, cpu) = (n as f64 / m.accept_wall, m.accept_cpu + m.screen_cpu);
        let (r0, c0) = *new.get_or_insert((rate, cpu));
        println!(
            "| {identity:?} | {n} | {rate:.0} | {:.3} | {:.2} | {:.3} | {:.2} | {:.2} | {} |",
            m.accept_cpu * 1e3 / n as f64,
            m.screen_wall,
            m.screen_cpu * 1e3 / n as f64,
            rate / r0,
            cpu / c0,
            m.pairs
        );
    }
}
