//! The embedded default adapters: one file per lead under `DIR/leads/`, one `.eml` per email,
//! each written once, leads looked up by their reference.

use crate::on_both_backends;
use crate::support::delivery::spawn_delivery_app;
use crate::support::vendor::{force_lead_state, inquiry_from, lead_ref};
use crate::support::{new_key, Backend};

on_both_backends!(leads_and_emails_are_one_file_each_and_a_repeat_after_unknown_writes_nothing_new);

fn files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

async fn leads_and_emails_are_one_file_each_and_a_repeat_after_unknown_writes_nothing_new(backend: Backend) {
    let scratch = std::env::temp_dir().join(format!("onceform-files-{}", uuid::Uuid::new_v4().simple()));
    let (crm_dir, mail_dir) = (scratch.join("crm"), scratch.join("mail"));
    let d = spawn_delivery_app(backend, |c| {
        c.crm.adapter = Some("file".into());
        (c.crm.url, c.smtp.url) = (None, None);
        crate::support::set_crm(c, "file", &[("dir", &crm_dir.display().to_string())]);
        c.smtp.mail_dir = mail_dir.display().to_string();
    })
    .await;
    let keys = [new_key(), new_key(), new_key()];
    for (i, key) in keys.iter().enumerate() {
        d.app.submit(key, &inquiry_from(&format!("visitor{i}@example.com"), "Hello")).await;
    }
    let worker = d.worker();
    d.settle(&worker).await;

    let leads = crm_dir.join("leads");
    let mut want = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let reference = lead_ref(&d.app, key).await;
        let lead = d.effect(key, "crm_lead").await;
        assert_eq!((lead.state.as_str(), lead.provider_ref.as_deref()), ("SENT", Some(reference.as_str())));
        let name = format!("{}.json", reference.replace(':', "%3A"));
        let stored: serde_json::Value =
            serde_json::from_slice(&std::fs::read(leads.join(&name)).unwrap()).unwrap();
        assert_eq!(stored["external_ref"], reference.as_str());
        assert_eq!(stored["fields"]["email"], format!("visitor{i}@example.com"));
        want.push(name);
    }
    want.sort();
    assert_eq!(files(&leads), want, "one file per lead, nothing else");
    assert_eq!(files(&mail_dir).len(), 6, "two emails per submission: {:?}", files(&mail_dir));
    assert!(files(&mail_dir).iter().all(|n| n.ends_with(".eml")));

    // A worker died after writing: UNKNOWN is looked up and found; sent again, nothing new.
    force_lead_state(&d.app, "UNKNOWN").await;
    d.settle(&worker).await;
    let outcomes: Vec<String> = d.attempts(&keys[0], "crm_lead").await.into_iter().map(|(o, _)| o).collect();
    assert_eq!(outcomes, ["sent", "lookup_found"]);
    force_lead_state(&d.app, "PENDING").await;
    d.settle(&worker).await;
    assert_eq!(files(&leads), want, "still one file per lead");
    for key in &keys {
        assert_eq!(d.effect(key, "crm_lead").await.state, "SENT");
    }
    let _ = std::fs::remove_dir_all(scratch);
}
