//! A source's redelivery window on its admin page: the spread of one event ID's redeliveries
//! beside the provider's documented span and the source's `retention.keys`.

use onceform::services::accounts::Role;

use crate::support::hooks::{hook, secret_var, spawn_hook_app};
use crate::support::Backend;

const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_source_page_shows_the_redelivery_spread_beside_the_providers_span() {
    let var = secret_var("sw", WHSEC);
    let cfg =
        format!("verify = \"standard-webhooks\"\nsecret_env = \"{var}\"\n[retention]\nkeys = \"30d\"\n");
    let app = spawn_hook_app(Backend::Sqlite, vec![("helpdesk", hook(&cfg))]).await;
    let body = r#"{"ticket":"R","text":"sent twice"}"#;
    assert_eq!(app.post_signed("helpdesk", WHSEC, "evt-R", body).await.status(), 200);
    tokio::time::sleep(std::time::Duration::from_millis(2_100)).await;
    assert_eq!(app.post_signed("helpdesk", WHSEC, "evt-R", body).await.status(), 200);

    let admin = app.app.sign_in(Role::Viewer).await;
    let page = app.app.admin_get(Some(&admin), "/admin/inbound/helpdesk").await.text().await.unwrap();
    let seconds: u64 = page
        .split(r#"id="spread" data-seconds=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no spread on the page: {page}"));
    assert!((2..=4).contains(&seconds), "{seconds} s between the two arrivals");
    assert!(page.contains("keep an endpoint for 5 days of failures"), "the provider's span: {page}");
    assert!(page.contains("This source keeps event IDs for: 30d."), "{page}");
}
