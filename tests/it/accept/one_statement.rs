//! PostgreSQL: the first acceptance of a key is one statement (one round trip) that writes
//! the submission, its effect records, its delivery row and its duplicate link; a retry is
//! read after the failed claim, never before it.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Once};

use diesel::connection::SimpleConnection;
use diesel::connection::{set_default_instrumentation, Instrumentation, InstrumentationEvent};
use diesel::prelude::*;
use onceform::config::{Config, DuplicatePolicy};
use onceform::db::schema::{changes, deliveries, duplicate_pairs, side_effects};
use onceform::db::{establish_pg, DbConnection, Pool, Store};
use onceform::domain::{normalise, OperationId};
use onceform::services::accept::{Acceptor, Intake, Outcome};
use onceform::services::request_log::Channel;

use crate::support::{test_config, Backend, TestDb};

fn intake(config: &Config, key: &str, email: &str, message: &str) -> Intake {
    intake_named(config, key, "Ada", email, message)
}

fn intake_named(config: &Config, key: &str, name: &str, email: &str, message: &str) -> Intake {
    let form = onceform::config::Form::new("contact", config.form("contact").unwrap().clone());
    let raw = [("name", name), ("email", email), ("topic", "Sales"), ("message", message)]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let fields = normalise(&*form, &raw).unwrap();
    let operation_id = Some(OperationId::parse(&format!("one-statement-{key}")).unwrap());
    Intake {
        form,
        operation_id,
        channel: Channel::Api,
        fields,
        scans: Default::default(),
        received: None,
        test: false,
    }
}

thread_local! {
    /// The statements this thread sends, when it counts them.
    static COUNTER: RefCell<Option<Arc<AtomicUsize>>> = const { RefCell::new(None) };
}

/// The databases whose duplicate screener waits (see `Paused`).
static PAUSED: Mutex<Vec<String>> = Mutex::new(Vec::new());
static RESUMED: Condvar = Condvar::new();

/// Watches every connection the process opens (the pool's included): counts the statements
/// the calling thread sends (`Acceptor::accept` runs on it), and holds the duplicate
/// screener of a paused database before its first statement.
struct Watch {
    url: String,
}

impl Instrumentation for Watch {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        match event {
            InstrumentationEvent::StartEstablishConnection { url, .. } => self.url = url.to_string(),
            InstrumentationEvent::StartQuery { .. } => {
                COUNTER.with(|c| {
                    if let Some(n) = &*c.borrow() {
                        n.fetch_add(1, Ordering::SeqCst);
                    }
                });
                if std::thread::current().name() == Some("duplicate-screener") {
                    let mut paused = PAUSED.lock().unwrap();
                    while paused.contains(&self.url) {
                        paused = RESUMED.wait(paused).unwrap();
                    }
                }
            }
            _ => {}
        }
    }
}

fn watch() -> Option<Box<dyn Instrumentation>> {
    Some(Box::new(Watch { url: String::new() }))
}

/// Counts the statements this thread sends from now on.
fn counted() -> Arc<AtomicUsize> {
    let n = Arc::new(AtomicUsize::new(0));
    COUNTER.with(|c| *c.borrow_mut() = Some(n.clone()));
    n
}

/// The duplicate screener of one database waits while this lives, so what the accept
/// statement wrote is seen as it wrote it.
struct Paused(String);

impl Paused {
    fn new(config: &Config) -> Paused {
        let url = config.database.url.to_string();
        PAUSED.lock().unwrap().push(url.clone());
        Paused(url)
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        PAUSED.lock().unwrap().retain(|u| *u != self.0);
        RESUMED.notify_all();
    }
}

/// The service's acceptor (one statement on PostgreSQL) over a pool, and a connection of
/// the test's own to look at the rows.
fn acceptor(config: &Config) -> (Acceptor, DbConnection) {
    static WATCH: Once = Once::new();
    WATCH.call_once(|| set_default_instrumentation(watch).unwrap());
    acceptor_of(config)
}

/// An acceptor of its own (its own replay memory) on `config`'s database.
fn acceptor_of(config: &Config) -> (Acceptor, DbConnection) {
    let pool = Pool::connect(&config.database).unwrap();
    let acceptor = Acceptor::start(Arc::new(config.clone()), pool, crate::support::test_keyring()).unwrap();
    (acceptor, DbConnection::Pg(establish_pg(&config.database.url.to_string()).unwrap()))
}

#[test]
fn a_first_acceptance_is_one_statement_with_all_its_rows() {
    let db = TestDb::new(Backend::Postgres);
    let mut config = test_config(&db.url);
    config.forms.get_mut("contact").unwrap().duplicates.policy = DuplicatePolicy::Hold;
    // The pair stays `screening` and its effects held while the test looks.
    let _screener = Paused::new(&config);
    let (acceptor, mut c) = acceptor(&config);
    let statements = counted();

    let first = acceptor.accept(intake(&config, "op-first", "ada@example.com", "A quote")).unwrap();
    let Outcome::Created(first) = first else { panic!("{first:?}") };
    assert_eq!(statements.swap(0, Ordering::SeqCst), 1, "one statement, one round trip");
    let stats = c.stats().unwrap();
    assert_eq!((stats.submissions, stats.effects_total()), (1, 3));
    assert_eq!(stats.deliveries_with("created"), 1);
    statements.store(0, Ordering::SeqCst);

    // A repeat from the same address: linked in the same statement, effects held (policy hold).
    let again = acceptor.accept(intake(&config, "op-again", "ada@example.com", "A quote!")).unwrap();
    let Outcome::Created(again) = again else { panic!("{again:?}") };
    assert_eq!(statements.swap(0, Ordering::SeqCst), 1);
    let (status, duplicate): (String, String) = duplicate_pairs::table
        .select((duplicate_pairs::status, duplicate_pairs::duplicate_id))
        .first(&mut c)
        .unwrap();
    assert_eq!((status.as_str(), duplicate.as_str()), ("screening", again.submission_id.as_str()));
    let effects: Vec<(String, String, bool, Option<String>)> = side_effects::table
        .filter(side_effects::submission_id.eq(&again.submission_id))
        .select((side_effects::kind, side_effects::state, side_effects::held, side_effects::last_error))
        .order(side_effects::kind)
        .load(&mut c)
        .unwrap();
    let view: Vec<(&str, &str, bool, Option<&str>)> =
        effects.iter().map(|(k, s, h, e)| (k.as_str(), s.as_str(), *h, e.as_deref())).collect();
    assert_eq!(
        view,
        [
            // The second confirmation to the address within the hour: capped in the same statement.
            ("confirmation_email", "CANCELLED", false, Some("recipient_cap")),
            ("crm_lead", "PENDING", true, None),
            ("owner_notification", "PENDING", true, None),
        ],
        "held until the screening"
    );
    assert!(again.body.contains("CANCELLED"), "the stored result says so: {}", again.body);
    statements.store(0, Ordering::SeqCst);

    // A third from the address: one pair row, linked to the most recent, naming the other.
    let third = acceptor.accept(intake(&config, "op-third", "ada@example.com", "A quote?")).unwrap();
    let Outcome::Created(third) = third else { panic!("{third:?}") };
    assert_eq!(statements.swap(0, Ordering::SeqCst), 1);
    let rows: Vec<(String, Option<String>)> = duplicate_pairs::table
        .filter(duplicate_pairs::duplicate_id.eq(&third.submission_id))
        .select((duplicate_pairs::original_id, duplicate_pairs::candidates))
        .load(&mut c)
        .unwrap();
    assert_eq!(rows, [(again.submission_id.to_string(), Some(first.submission_id.to_string()))]);

    // A stranger: no link, nothing held.
    let other = acceptor.accept(intake(&config, "op-other", "bob@example.com", "Hello")).unwrap();
    let Outcome::Created(other) = other else { panic!("{other:?}") };
    let held: i64 = side_effects::table
        .filter(side_effects::submission_id.eq(&other.submission_id))
        .filter(side_effects::held.eq(true))
        .count()
        .get_result(&mut c)
        .unwrap();
    assert_eq!(held, 0);
    assert_eq!(duplicate_pairs::table.count().get_result::<i64>(&mut c).unwrap(), 2);
}

/// First acceptances that wait while a statement is in flight share the next one
/// (`pg_batch`, `claim_many_pg`), and each writes what it would have alone: its submission,
/// three records, its delivery and feed rows; a repeat of a stored address is linked to it,
/// held (policy hold) and capped; a stranger is not.
#[test]
fn waiting_first_acceptances_share_a_statement_and_each_writes_its_own_rows() {
    let db = TestDb::new(Backend::Postgres);
    let mut config = test_config(&db.url);
    config.forms.get_mut("contact").unwrap().duplicates.policy = DuplicatePolicy::Hold;
    let _screener = Paused::new(&config);
    let (acceptor, mut c) = acceptor(&config);
    let stored = acceptor
        .accept(intake_named(&config, "op-stored", "Grace Hopper", "grace@example.com", "Hi"))
        .unwrap();
    let Outcome::Created(stored) = stored else { panic!("{stored:?}") };

    // The cap's table is locked: the first statement waits on it, the others queue.
    let mut lock = establish_pg(&db.url).unwrap();
    lock.batch_execute("BEGIN; LOCK TABLE confirmation_caps IN EXCLUSIVE MODE").unwrap();
    let visitors: Vec<(String, String, String)> = (0..12)
        .map(|i| match i {
            // A repeat of the stored address, under another name.
            5 => (format!("op-batch-{i}"), "Grace H.".to_string(), "grace@example.com".to_string()),
            i => (format!("op-batch-{i}"), format!("Visitor Number{i}"), format!("v{i}@example.com")),
        })
        .collect();
    let threads = spawn_accepts(&acceptor, &config, &visitors);
    one_statement_waits(&mut c);
    std::thread::sleep(std::time::Duration::from_millis(200));
    lock.batch_execute("COMMIT").unwrap();
    let done: Vec<(Outcome, usize)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let statements: usize = done.iter().map(|d| d.1).sum();
    assert!(statements < visitors.len(), "{statements} statements for {} first acceptances", visitors.len());

    for (i, (outcome, _)) in done.iter().enumerate() {
        let Outcome::Created(r) = outcome else { panic!("visitor {i}: {outcome:?}") };
        let effects: Vec<(String, String, bool)> = side_effects::table
            .filter(side_effects::submission_id.eq(&r.submission_id))
            .select((side_effects::kind, side_effects::state, side_effects::held))
            .order(side_effects::kind)
            .load(&mut c)
            .unwrap();
        let (capped, held) = (i == 5, i == 5);
        let confirmation = if capped { "CANCELLED" } else { "PENDING" };
        assert_eq!(
            effects,
            [
                ("confirmation_email".to_string(), confirmation.to_string(), false),
                ("crm_lead".to_string(), "PENDING".to_string(), held),
                ("owner_notification".to_string(), "PENDING".to_string(), held),
            ],
            "visitor {i}"
        );
        assert_eq!(r.body.contains("CANCELLED"), capped, "visitor {i}: {}", r.body);
        let delivered: i64 = deliveries::table
            .filter(deliveries::submission_id.eq(&r.submission_id))
            .filter(deliveries::outcome.eq("created"))
            .count()
            .get_result(&mut c)
            .unwrap();
        let fed: i64 = changes::table
            .filter(changes::submission_id.eq(&r.submission_id))
            .filter(changes::kind.eq("accepted"))
            .count()
            .get_result(&mut c)
            .unwrap();
        assert_eq!((delivered, fed), (1, 1), "visitor {i}: its delivery and feed rows");
    }
    let Outcome::Created(repeat) = &done[5].0 else { unreachable!() };
    let pairs: Vec<(String, String)> = duplicate_pairs::table
        .select((duplicate_pairs::original_id, duplicate_pairs::duplicate_id))
        .load(&mut c)
        .unwrap();
    assert_eq!(pairs, [(stored.submission_id.to_string(), repeat.submission_id.to_string())]);
}

/// One visitor's flood (one address and name, a new operation ID each) that waits shares
/// statements as everyone's traffic does, and each acceptance does what it would have done
/// in turn: the first takes the address's confirmation slot and the others are capped; each
/// of the first `FLOOD` is linked to the ones before it (the most recent, naming up to
/// `CANDIDATES` in all), and the later ones to nothing.
#[test]
fn one_visitors_flood_shares_statements_and_each_sees_those_before_it() {
    const FLOOD: usize = onceform::db::duplicates::FLOOD as usize;
    const CANDIDATES: usize = onceform::db::duplicates::CANDIDATES as usize;
    let db = TestDb::new(Backend::Postgres);
    let mut config = test_config(&db.url);
    config.forms.get_mut("contact").unwrap().duplicates.policy = DuplicatePolicy::Hold;
    let _screener = Paused::new(&config);
    let (acceptor, mut c) = acceptor(&config);

    // A stranger's statement waits on the cap's locked table; the flood queues behind it.
    let mut lock = establish_pg(&db.url).unwrap();
    lock.batch_execute("BEGIN; LOCK TABLE confirmation_caps IN EXCLUSIVE MODE").unwrap();
    let stranger = [("op-stranger".to_string(), "Alan Turing".to_string(), "alan@example.com".to_string())];
    let stranger = spawn_accepts(&acceptor, &config, &stranger);
    one_statement_waits(&mut c);
    let flood: Vec<(String, String, String)> = (0..FLOOD + 4)
        .map(|i| (format!("op-flood-{i}"), "Mallory Flood".to_string(), "mallory@example.com".to_string()))
        .collect();
    let threads = spawn_accepts(&acceptor, &config, &flood);
    std::thread::sleep(std::time::Duration::from_millis(300));
    lock.batch_execute("COMMIT").unwrap();
    stranger.into_iter().for_each(|t| drop(t.join().unwrap()));
    let done: Vec<(Outcome, usize)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let statements: usize = done.iter().map(|d| d.1).sum();
    assert!(statements < flood.len(), "{statements} statements for a flood of {}", flood.len());

    let ids: Vec<String> = (done.iter())
        .map(|(o, _)| match o {
            Outcome::Created(r) => r.submission_id.to_string(),
            other => panic!("{other:?}"),
        })
        .collect();
    let confirmations: Vec<(Option<String>, String)> = side_effects::table
        .filter(side_effects::submission_id.eq_any(&ids))
        .filter(side_effects::kind.eq("confirmation_email"))
        .select((side_effects::submission_id, side_effects::state))
        .load(&mut c)
        .unwrap();
    let sent: Vec<&String> =
        confirmations.iter().filter(|(_, s)| s == "PENDING").filter_map(|(id, _)| id.as_ref()).collect();
    assert_eq!(sent.len(), 1, "one confirmation to the address: {confirmations:?}");
    let pairs: Vec<(String, String, Option<String>)> = duplicate_pairs::table
        .select((duplicate_pairs::original_id, duplicate_pairs::duplicate_id, duplicate_pairs::candidates))
        .load(&mut c)
        .unwrap();
    let mut named: Vec<usize> = pairs
        .iter()
        .map(|(_, _, others)| 1 + others.as_deref().map_or(0, |o| o.split(',').count()))
        .collect();
    named.sort();
    let expected: Vec<usize> = (1..FLOOD).map(|earlier| earlier.min(CANDIDATES)).collect();
    assert_eq!(named, expected, "each of the first {FLOOD} linked to those before it: {pairs:?}");
    let duplicates: std::collections::HashSet<&String> = pairs.iter().map(|(_, d, _)| d).collect();
    assert_eq!(duplicates.len(), FLOOD - 1);
    assert!(!duplicates.contains(sent[0]), "the first of the flood took the slot and repeats nothing");
    assert!(pairs.iter().all(|(o, d, _)| ids.contains(o) && ids.contains(d) && o != d));
    let held: i64 = side_effects::table
        .filter(side_effects::submission_id.eq_any(&ids))
        .filter(side_effects::held.eq(true))
        .count()
        .get_result(&mut c)
        .unwrap();
    assert_eq!(held as usize, 2 * (FLOOD - 1), "the linked ones' lead and notification held");
}

/// Accepts each visitor's (key, name, email) on a thread of its own: its outcome and how many
/// statements that thread sent.
fn spawn_accepts(
    acceptor: &Acceptor,
    config: &Config,
    visitors: &[(String, String, String)],
) -> Vec<std::thread::JoinHandle<(Outcome, usize)>> {
    visitors
        .iter()
        .map(|(key, name, email)| {
            let (acceptor, config) = (acceptor.clone(), config.clone());
            let (key, name, email) = (key.clone(), name.clone(), email.clone());
            std::thread::spawn(move || {
                let statements = counted();
                let outcome = acceptor.accept(intake_named(&config, &key, &name, &email, "Batched")).unwrap();
                (outcome, statements.load(Ordering::SeqCst))
            })
        })
        .collect()
}

/// Waits until one statement of the test's database waits on a lock (the cap's table,
/// locked by the test): the one in flight, while the others queue to share the next.
fn one_statement_waits(c: &mut DbConnection) {
    let waiting = |c: &mut DbConnection| -> i64 {
        diesel::sql_query(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
             AND datname = current_database()",
        )
        .get_result::<Count>(c)
        .unwrap()
        .n
    };
    let started = std::time::Instant::now();
    while waiting(c) < 1 && started.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(waiting(c), 1, "one statement in flight, the others wait to share");
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

#[test]
fn a_retry_is_read_after_the_failed_claim_and_writes_nothing_twice() {
    let db = TestDb::new(Backend::Postgres);
    let config = test_config(&db.url);
    let (acceptor, mut c) = acceptor(&config);
    let statements = counted();
    let Outcome::Created(first) =
        acceptor.accept(intake(&config, "op-1", "ada@example.com", "Original")).unwrap()
    else {
        panic!("not created")
    };
    let (other, _) = acceptor_of(&config);
    statements.store(0, Ordering::SeqCst);

    // The claim, then the read, whichever process it is: a retry of a key this process saw
    // committed was read before (`Acceptor::submit`, shown in `accept::cold_replays`).
    for process in [&other, &acceptor] {
        let replay = process.accept(intake(&config, "op-1", "ada@example.com", "Original")).unwrap();
        assert_eq!(replay, Outcome::Replayed(first.clone()), "the stored body, byte for byte");
        assert_eq!(statements.swap(0, Ordering::SeqCst), 2, "the claim, then the read");
    }

    let conflict = acceptor.accept(intake(&config, "op-1", "ada@example.com", "Edited")).unwrap();
    assert!(
        matches!(conflict, Outcome::Conflict { ref submission_id, .. } if *submission_id == first.submission_id)
    );
    let stats = c.stats().unwrap();
    assert_eq!((stats.submissions, stats.effects_total(), stats.open_conflicts), (1, 3, 1));
    let conflicts: i64 =
        deliveries::table.filter(deliveries::outcome.eq("conflict")).count().get_result(&mut c).unwrap();
    assert_eq!(conflicts, 1, "the conflict's delivery row is written with it");
}
