//! PostgreSQL: the first acceptance of a key is one statement (one round trip) that writes
//! the submission, its effect records, its delivery row and its duplicate link; a retry is
//! read after the failed claim, never before it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use diesel::connection::{Instrumentation, InstrumentationEvent};
use diesel::prelude::*;
use onceform::accept::{accept_on_pg, Intake, Outcome};
use onceform::config::{Config, DuplicatePolicy};
use onceform::db::schema::{deliveries, duplicate_pairs, side_effects};
use onceform::db::{establish_pg, DbConnection, Pool, Store};
use onceform::deliveries::{Channel, DeliveryLog};
use onceform::domain::{normalise, OperationId};

use crate::support::{test_config, Backend, TestDb};

fn intake(config: &Config, key: &str, email: &str, message: &str) -> Intake {
    let form = Arc::new(config.form("contact").unwrap().clone());
    let raw = [("name", "Ada"), ("email", email), ("topic", "Sales"), ("message", message)]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let fields = normalise(&*form, &raw).unwrap();
    let operation_id = Some(OperationId::parse(&format!("one-statement-{key}")).unwrap());
    Intake { form_name: "contact".into(), form, operation_id, channel: Channel::Api, fields }
}

/// A connection that counts the statements it sends.
fn counted(url: &str) -> (DbConnection, Arc<AtomicUsize>) {
    let mut c = establish_pg(url).unwrap();
    let n = Arc::new(AtomicUsize::new(0));
    let counter = n.clone();
    let count = move |event: InstrumentationEvent<'_>| {
        if let InstrumentationEvent::StartQuery { .. } = event {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    };
    c.set_instrumentation(Box::new(count) as Box<dyn Instrumentation>);
    (DbConnection::Pg(c), n)
}

fn log() -> DeliveryLog {
    DeliveryLog::start(Box::new(|_| Ok(()))).unwrap()
}

#[test]
fn a_first_acceptance_is_one_statement_with_all_its_rows() {
    let db = TestDb::new(Backend::Postgres);
    let mut config = test_config(&db.url);
    config.forms.get_mut("contact").unwrap().duplicates.policy = DuplicatePolicy::Hold;
    let _migrated = Pool::connect(&config.database).unwrap();
    let (mut c, statements) = counted(&db.url);
    let log = log();

    let first =
        accept_on_pg(&mut c, intake(&config, "op-first", "ada@example.com", "A quote"), &log).unwrap();
    assert!(matches!(first, Outcome::Created(_)), "{first:?}");
    assert_eq!(statements.swap(0, Ordering::SeqCst), 1, "one statement, one round trip");
    let stats = c.stats().unwrap();
    assert_eq!((stats.submissions, stats.effects_total()), (1, 3));
    assert_eq!(stats.deliveries_with("created"), 1);
    statements.store(0, Ordering::SeqCst);

    // A repeat from the same address: linked in the same statement, effects held (policy hold).
    let again =
        accept_on_pg(&mut c, intake(&config, "op-again", "ada@example.com", "A quote!"), &log).unwrap();
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

    // A stranger: no link, nothing held.
    let other = accept_on_pg(&mut c, intake(&config, "op-other", "bob@example.com", "Hello"), &log).unwrap();
    let Outcome::Created(other) = other else { panic!("{other:?}") };
    let held: i64 = side_effects::table
        .filter(side_effects::submission_id.eq(&other.submission_id))
        .filter(side_effects::held.eq(true))
        .count()
        .get_result(&mut c)
        .unwrap();
    assert_eq!(held, 0);
    assert_eq!(duplicate_pairs::table.count().get_result::<i64>(&mut c).unwrap(), 1);
}

#[test]
fn a_retry_is_read_after_the_failed_claim_and_writes_nothing_twice() {
    let db = TestDb::new(Backend::Postgres);
    let config = test_config(&db.url);
    let _migrated = Pool::connect(&config.database).unwrap();
    let (mut c, statements) = counted(&db.url);
    let log = log();
    let Outcome::Created(first) =
        accept_on_pg(&mut c, intake(&config, "op-1", "ada@example.com", "Original"), &log).unwrap()
    else {
        panic!("not created")
    };
    statements.store(0, Ordering::SeqCst);

    let replay = accept_on_pg(&mut c, intake(&config, "op-1", "ada@example.com", "Original"), &log).unwrap();
    assert_eq!(replay, Outcome::Replayed(first.clone()), "the stored body, byte for byte");
    assert_eq!(statements.swap(0, Ordering::SeqCst), 2, "the claim, then the read");

    let conflict = accept_on_pg(&mut c, intake(&config, "op-1", "ada@example.com", "Edited"), &log).unwrap();
    assert!(
        matches!(conflict, Outcome::Conflict { ref submission_id, .. } if *submission_id == first.submission_id)
    );
    let stats = c.stats().unwrap();
    assert_eq!((stats.submissions, stats.effects_total(), stats.open_conflicts), (1, 3, 1));
    let conflicts: i64 =
        deliveries::table.filter(deliveries::outcome.eq("conflict")).count().get_result(&mut c).unwrap();
    assert_eq!(conflicts, 1, "the conflict's delivery row is written with it");
}
