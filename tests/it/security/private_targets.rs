//! Issue 45: the private-address check looked only at addresses written in a URL, and only in
//! check-config; a receiver or CRM whose host *name* resolved to a private address (here
//! `localhost`, resolving to the loopback listener) was called. Now every name is checked as
//! the connection is made: no connection is opened, and the record fails for good
//! (`private_address`) unless the operator allows private targets.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use onceform::config::{Config, DEFAULT_CONFIG};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::on_both_backends;
use crate::support::delivery::{spawn_delivery_app, DeliveryApp};
use crate::support::{inquiry, new_key, set_crm, Backend};

on_both_backends!(
    a_webhook_whose_host_name_resolves_to_loopback_is_refused_without_connecting,
    a_crm_named_localhost_is_refused_by_check_config_and_at_start,
);

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// A loopback listener that counts the connections it accepts and answers each `200 {}`.
struct Listener {
    port: u16,
    connections: Arc<AtomicUsize>,
}

impl Listener {
    async fn start() -> Listener {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = stream.read(&mut buf).await;
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 13\r\nconnection: close\r\n\r\n{\"id\":\"ld_1\"}";
                    let _ = stream.write_all(answer.as_bytes()).await;
                });
            }
        });
        Listener { port, connections }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// The demo form with `webhook` alone, posting to `url`.
fn webhook_form(url: &str, allow_private: bool) -> Config {
    let var = format!("ONCEFORM_TEST_PRIVATE_{}", uuid::Uuid::new_v4().simple());
    std::env::set_var(&var, SECRET);
    let effects = r#"effects = ["crm_lead", "confirmation_email", "owner_notification"]"#;
    let text = DEFAULT_CONFIG.replace(effects, r#"effects = ["webhook"]"#)
        + &format!(
            "\n[forms.contact.webhook]\nurl = \"{url}\"\nsecret_env = \"{var}\"\nallow_private = {allow_private}\n"
        );
    Config::parse(&text).unwrap()
}

/// Submits one inquiry and lets the worker settle; its key.
async fn submit_and_settle(d: &DeliveryApp) -> String {
    let key = new_key();
    assert_eq!(d.app.submit(&key, &inquiry("Hello")).await.status(), 201);
    let worker = d.worker();
    d.settle(&worker).await;
    key
}

async fn a_webhook_whose_host_name_resolves_to_loopback_is_refused_without_connecting(backend: Backend) {
    let receiver = Listener::start().await;
    let url = format!("http://localhost:{}/events", receiver.port);
    let parsed = webhook_form(&url, false);
    let problems = onceform::services::check_config::problems(&parsed);
    assert!(
        problems.iter().any(|p| p.contains("forms.contact.webhook.url: `localhost` resolves to a loopback")),
        "check-config names it: {problems:?}"
    );

    let d = spawn_delivery_app(backend, |c| c.forms = parsed.forms).await;
    let key = submit_and_settle(&d).await;
    let effect = d.effect(&key, "webhook").await;
    assert_eq!((effect.state.as_str(), effect.attempts), ("FAILED_FINAL", 1), "{effect:?}");
    assert_eq!(d.attempts(&key, "webhook").await, vec![("permanent".into(), Some("private_address".into()))]);
    assert_eq!(receiver.connections(), 0, "no connection to the loopback receiver");

    // The operator's own receiver on a private network: allowed when they say so.
    let allowed = webhook_form(&url, true);
    assert_eq!(onceform::services::check_config::problems(&allowed), Vec::<String>::new());
    let d = spawn_delivery_app(backend, |c| c.forms = allowed.forms).await;
    let key = submit_and_settle(&d).await;
    assert_eq!(d.effect(&key, "webhook").await.state, "SENT");
    assert!(receiver.connections() >= 1);
}

/// A CRM's host is held to the rule as the connection is made too (the adapter's own test,
/// `effects::crm::generic`); `localhost` is named by check-config, and the workers refuse to
/// start with it, before any lead is sent.
async fn a_crm_named_localhost_is_refused_by_check_config_and_at_start(backend: Backend) {
    let crm = Listener::start().await;
    let base = format!("http://localhost:{}", crm.port);
    let d = spawn_delivery_app(backend, |c| {
        c.crm.url = Some(format!("{base}/leads"));
        set_crm(c, "generic", &[("lookup_url", &format!("{base}/leads/{{external_ref}}"))]);
    })
    .await;
    let problems = onceform::services::check_config::problems(&d.app.config);
    assert!(problems.iter().any(|p| p.starts_with("crm.url: `localhost` resolves")), "{problems:?}");
    assert!(problems.iter().any(|p| p.starts_with("crm.generic.lookup_url: `localhost`")), "{problems:?}");
    let registry = onceform::app::registry(d.app.config.clone(), crate::support::test_keyring());
    let error = registry.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("crm.url: `localhost` resolves to a loopback address"), "{error}");

    let mut allowed = (*d.app.config).clone();
    allowed.crm.allow_private = true;
    assert_eq!(onceform::services::check_config::problems(&allowed), Vec::<String>::new());
    assert_eq!(crm.connections(), 0);
}
