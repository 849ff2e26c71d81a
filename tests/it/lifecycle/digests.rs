//! Keyed digests: email, phone and fingerprint are HMAC-SHA-256 with the server secret, and
//! digests of an earlier release (plain SHA-256) are converted at start.

use diesel::prelude::*;
use onceform::base::secret::Secret;
use onceform::db::schema::submissions;
use onceform::db::DbError;
use onceform::domain::digest;
use onceform::domain::keyring::Keyring;
use onceform::with_conn;

use crate::on_both_backends;
use crate::support::{
    inquiry, new_key, spawn_app, spawn_app_with, test_keyring, Backend, TestApp, TEST_SECRET,
};

on_both_backends!(
    stored_digests_of_a_known_email_cannot_be_reproduced_with_plain_sha256,
    plain_digests_of_an_earlier_release_are_keyed_and_still_replay,
);

type Digests = (String, Option<String>, Option<String>);

async fn digests(app: &TestApp, key: &str) -> Digests {
    let key = key.to_string();
    app.query(move |pool| {
        with_conn!(pool, |c| submissions::table
            .filter(submissions::operation_id.eq(&key))
            .select((submissions::fingerprint, submissions::email_digest, submissions::fields_json))
            .first::<Digests>(c)
            .map_err(DbError::from))
    })
    .await
}

async fn stored_digests_of_a_known_email_cannot_be_reproduced_with_plain_sha256(backend: Backend) {
    let app = spawn_app(backend).await;
    let key = new_key();
    assert_eq!(app.submit(&key, &inquiry("Hello there")).await.status(), 201);
    let (fingerprint, email_digest, fields) = digests(&app, &key).await;
    let email_digest = email_digest.unwrap();
    let plain_email = digest("ada@example.com");
    let plain_content = digest(&fields.unwrap());
    assert!(!email_digest.contains(&plain_email), "{email_digest}");
    assert!(!fingerprint.contains(&plain_content), "{fingerprint}");
    // With the server's secret (and only with it) the digest is reproduced.
    let keys = Keyring::new(Secret::new(TEST_SECRET), Vec::new());
    assert_eq!(email_digest, keys.digest("ada@example.com"));
    assert!(
        email_digest.starts_with(&format!("{}:", keys.version())),
        "the key's version is stored beside it"
    );
    let other = Keyring::new(Secret::new("some other secret of enough length"), Vec::new());
    assert_ne!(email_digest, other.digest("ada@example.com"));
}

async fn plain_digests_of_an_earlier_release_are_keyed_and_still_replay(backend: Backend) {
    let app = spawn_app_with(backend, |c| c.server.replay_cache = 0).await;
    let (kept, purged) = (new_key(), new_key());
    assert_eq!(app.submit(&kept, &inquiry("Kept content")).await.status(), 201);
    assert_eq!(app.submit(&purged, &inquiry("Purged content")).await.status(), 201);
    // Rewrite both rows as an earlier release stored them: plain SHA-256; one of them purged.
    let (k, p) = (kept.clone(), purged.clone());
    app.query(move |pool| {
        with_conn!(pool, |c| {
            for (key, purge) in [(&k, false), (&p, true)] {
                let row = submissions::table.filter(submissions::operation_id.eq(key));
                let json: Option<String> = row.select(submissions::fields_json).first(c)?;
                let json = json.unwrap_or_default();
                diesel::update(row)
                    .set((
                        submissions::fingerprint.eq(digest(&json)),
                        submissions::email_digest.eq(Some(digest("ada@example.com"))),
                    ))
                    .execute(c)?;
                if purge {
                    diesel::update(row).set(submissions::fields_json.eq(None::<String>)).execute(c)?;
                }
            }
            Ok::<_, DbError>(())
        })
    })
    .await;
    let config = app.config.clone();
    let converted = app
        .query(move |pool| onceform::services::lifecycle::rekey::rekey(pool, &config, &test_keyring()))
        .await;
    assert_eq!(converted.0, 1, "only the row with content can be keyed again");
    let config = app.config.clone();
    let again = app
        .query(move |pool| onceform::services::lifecycle::rekey::rekey(pool, &config, &test_keyring()))
        .await;
    assert_eq!(again, (0, 0), "idempotent");

    let keys = Keyring::new(Secret::new(TEST_SECRET), Vec::new());
    let (fp, email, _) = digests(&app, &kept).await;
    assert!(keys.is_current(&fp));
    assert_eq!(email, Some(keys.digest("ada@example.com")));
    let (_, email, _) = digests(&app, &purged).await;
    assert_eq!(email, None, "a plain digest that cannot be keyed is dropped");

    for key in [&kept, &purged] {
        let message = if key == &kept { "Kept content" } else { "Purged content" };
        assert_eq!(app.submit(key, &inquiry(message)).await.status(), 200, "a retry still replays");
        assert_eq!(app.submit(key, &inquiry("Changed")).await.status(), 409, "a change is still a conflict");
    }
}
