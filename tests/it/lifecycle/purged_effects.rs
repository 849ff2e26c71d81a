//! An effect still due when its submission's content is purged (retention, erasure), such
//! as an UNKNOWN that reconciliation later finds absent, is never sent with empty fields.

use diesel::prelude::*;
use onceform::db::schema::submissions;
use onceform::db::DbError;
use onceform::with_conn;

use crate::on_both_backends;
use crate::support::delivery::spawn_delivery_app;
use crate::support::{inquiry, new_key, Backend};

on_both_backends!(an_effect_whose_content_was_purged_fails_final_and_sends_nothing);

async fn an_effect_whose_content_was_purged_fails_final_and_sends_nothing(backend: Backend) {
    let d = spawn_delivery_app(backend, |_| {}).await;
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Purged before it went out")).await.status(), 201);
    // The content goes as the purge takes it while the effects are still due.
    let k = key.clone();
    let purged = d
        .app
        .query(move |pool| {
            with_conn!(pool, |c| diesel::update(submissions::table.filter(submissions::operation_id.eq(&k)))
                .set((
                    submissions::fields_json.eq(None::<String>),
                    submissions::content_purged_at.eq(Some(chrono::Utc::now().naive_utc())),
                ))
                .execute(c)
                .map_err(DbError::from))
        })
        .await;
    assert_eq!(purged, 1);
    d.settle(&d.worker()).await;
    for kind in ["crm_lead", "confirmation_email", "owner_notification"] {
        assert_eq!(d.effect(&key, kind).await.state, "FAILED_FINAL", "{kind}");
        let attempts = d.attempts(&key, kind).await;
        assert_eq!(attempts.last().and_then(|a| a.1.as_deref()), Some("content_purged"), "{kind}");
    }
    assert!(d.crm.leads().is_empty(), "no lead with empty fields");
    assert!(d.smtp.messages().is_empty(), "no email with empty fields");
}
