//! `onceform worker` reloads its effect settings on SIGHUP (`onceform reload`): the records
//! claimed after the reload go out with the new settings (here a new CRM URL), none lost or
//! sent twice; a bad file changes nothing.

use std::time::Duration;

use super::workers::{config_file, wait_for};
use crate::support::crm::FakeCrm;
use crate::support::smtp::SmtpSink;
use crate::support::worker_process::WorkerProcess;
use crate::support::{seed, Backend, TestDb};

crate::on_both_backends!(a_reloaded_worker_sends_the_next_records_with_the_new_settings);

/// `onceform reload` with the worker's configuration (it signals `[worker] pid_file`).
fn reload(config: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_onceform"))
        .args(["--config", config.to_str().unwrap(), "reload"])
        .env("RUST_LOG", "off")
        .current_dir(config.parent().unwrap())
        .output()
        .unwrap()
}

async fn sent_crm_leads(config: &onceform::config::Config) -> i64 {
    let config = config.clone();
    tokio::task::spawn_blocking(move || {
        let pool = onceform::db::Pool::connect(&config.database).unwrap();
        let stats = onceform::with_conn!(&pool, |c| onceform::db::Store::stats(c)
            .map_err(onceform::db::DbError::from))
        .unwrap();
        stats
            .effects
            .iter()
            .filter(|(k, s, _)| k == "crm_lead" && s.to_string() == "SENT")
            .map(|(_, _, n)| n)
            .sum()
    })
    .await
    .unwrap()
}

async fn a_reloaded_worker_sends_the_next_records_with_the_new_settings(backend: Backend) {
    let db = TestDb::new(backend);
    let (a, b, smtp) = (FakeCrm::start().await, FakeCrm::start().await, SmtpSink::start().await);
    let path = config_file(&db, &a, &smtp, 30);
    let pid_file = path.with_extension("pid");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("[worker]\n", &format!("[worker]\npid_file = {:?}\n", pid_file.to_str().unwrap()));
    std::fs::write(&path, &text).unwrap();
    let config = onceform::services::check_config::load(Some(&path), |_| None).unwrap();
    let pool = onceform::db::Pool::connect(&config.database).unwrap();

    let worker = WorkerProcess::start(&path);
    seed(&pool, &config, 5).await;
    wait_for("5 leads at A", Duration::from_secs(20), || a.leads().len() == 5).await;

    // Point the CRM at B and reload: the records claimed from now on go to B.
    std::fs::write(&path, text.replace(&a.url, &b.url)).unwrap();
    let out = reload(&path);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(worker.next_line(Duration::from_secs(10)), "onceform worker reloaded its settings");
    seed(&pool, &config, 5).await;
    wait_for("the next leads at B", Duration::from_secs(20), || b.leads().len() == 5).await;

    // A bad file changes nothing (a bare SIGHUP: `onceform reload` refuses to send it).
    std::fs::write(&path, "[worker]\nconcurrency = 0\n").unwrap();
    let refused = reload(&path);
    assert!(!refused.status.success(), "`onceform reload` checks the file first");
    // SAFETY: a plain signal to the child this test started.
    assert_eq!(unsafe { libc::kill(worker.pid() as libc::pid_t, libc::SIGHUP) }, 0);
    let line = worker.next_line(Duration::from_secs(10));
    assert!(line.starts_with("onceform worker kept its settings (1 reload(s) refused so far)"), "{line}");
    seed(&pool, &config, 5).await;
    wait_for("the last leads at B", Duration::from_secs(20), || b.leads().len() == 10).await;

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!((a.leads().len(), a.create_requests()), (5, 5), "A got the first five, once each");
    assert_eq!((b.leads().len(), b.create_requests()), (10, 10), "B got the next ten, once each");
    assert_eq!(sent_crm_leads(&config).await, 15, "every lead SENT, none lost");
}
