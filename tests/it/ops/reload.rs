//! Forms change without a restart: `onceform reload` (SIGHUP to `serve`) puts a checked
//! configuration's forms in force while clients submit and retry, with no failed request and
//! no wrong answer; a bad file changes nothing, is refused by `onceform reload` and, sent
//! as a bare SIGHUP, is counted on `/metrics`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::on_both_backends;
use crate::support::serve_process::ServeProcess;
use crate::support::{Backend, TestDb};

on_both_backends!(forms_reload_under_load_with_no_failed_request_and_no_wrong_answer);

const CONTACT: &str = r#"
[forms.contact]
title = "Contact us"
effects = []
honeypot = ""
min_fill_seconds = 0
[[forms.contact.fields]]
name = "email"
type = "email"
required = true
[[forms.contact.fields]]
name = "message"
type = "textarea"
required = true
"#;

/// The same contact form with an optional field more, and a second form.
fn second_version() -> String {
    format!(
        "{CONTACT}[[forms.contact.fields]]\nname = \"company\"\ntype = \"text\"\n\n\
         [forms.quote]\ntitle = \"Quote\"\neffects = []\nhoneypot = \"\"\n\
         [[forms.quote.fields]]\nname = \"email\"\ntype = \"email\"\nrequired = true\n"
    )
}

/// `onceform reload` in the server's working directory (its pid file is there).
/// Replaces the file whole (a new file renamed over it), as an editor saves: a reload still
/// pending from an earlier signal never reads it half written (a prefix of the file can be
/// a valid configuration with fewer forms).
fn write(config: &Path, text: &str) {
    let next = config.with_extension("toml.next");
    std::fs::write(&next, text).unwrap();
    std::fs::rename(&next, config).unwrap();
}

fn reload(dir: &Path, config: &Path, db: &TestDb) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_onceform"))
        .args(["--config", config.to_str().unwrap(), "reload"])
        .env("ONCEFORM_DATABASE_URL", &db.url)
        .env("RUST_LOG", "off")
        .current_dir(dir)
        .output()
        .unwrap()
}

async fn submit(client: &reqwest::Client, base: &str, key: &str, body: &Value) -> (u16, Value) {
    let (status, bytes) = submit_raw(client, base, key, body).await;
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// The status and the body's bytes; a connection error fails the test.
async fn submit_raw(client: &reqwest::Client, base: &str, key: &str, body: &Value) -> (u16, Vec<u8>) {
    let resp = client
        .post(format!("{base}/api/forms/contact/submissions"))
        .header("Idempotency-Key", key)
        .json(body)
        .send()
        .await
        .expect("no connection error while reloading");
    let status = resp.status().as_u16();
    (status, resp.bytes().await.expect("the whole body").to_vec())
}

async fn forms_reload_under_load_with_no_failed_request_and_no_wrong_answer(backend: Backend) {
    let db = TestDb::new(backend);
    let dir: PathBuf =
        std::env::temp_dir().join(format!("onceform-reload-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("onceform.toml");
    std::fs::write(&config, CONTACT).unwrap();
    let mut command = ServeProcess::command(&db.url, &["--config", config.to_str().unwrap()]);
    command.current_dir(&dir);
    let mut server = ServeProcess::start(command);
    let base = server.address.clone();
    let client = reqwest::Client::new();

    // Clients submit and retry (the same content, and changed content) for four seconds
    // while the file changes and is reloaded every 250 ms: no failed request (no 5xx, no
    // connection error) and no wrong answer (201 for a new key, the first body byte for byte
    // for the same content, 409 for changed content).
    let until = Instant::now() + Duration::from_secs(4);
    let clients: Vec<_> = (0..6)
        .map(|c| {
            let (client, base) = (client.clone(), base.clone());
            tokio::spawn(async move {
                let mut answered = 0;
                for i in 0.. {
                    if Instant::now() > until {
                        break;
                    }
                    let key = format!("reload-{c}-{i}-{}", uuid::Uuid::new_v4().simple());
                    let body =
                        json!({"email": format!("c{c}.{i}@example.com"), "message": format!("inquiry {i}")});
                    let (status, first) = submit_raw(&client, &base, &key, &body).await;
                    assert_eq!(status, 201, "a new key: {}", String::from_utf8_lossy(&first));
                    let (status, again) = submit_raw(&client, &base, &key, &body).await;
                    assert_eq!(status, 200, "a retry replays: {}", String::from_utf8_lossy(&again));
                    assert_eq!(again, first, "the replay is the first answer, byte for byte");
                    // Every third operation is retried with changed content: a conflict.
                    if i % 3 == 0 {
                        let mut changed = body.clone();
                        changed["message"] = format!("inquiry {i}, changed").into();
                        let (status, conflict) = submit_raw(&client, &base, &key, &changed).await;
                        assert_eq!(status, 409, "changed content: {}", String::from_utf8_lossy(&conflict));
                        let (status, again) = submit_raw(&client, &base, &key, &body).await;
                        assert_eq!((status, &again), (200, &first), "the original content still replays");
                        answered += 2;
                    }
                    answered += 2;
                }
                answered
            })
        })
        .collect();
    let mut reloads = 0;
    while Instant::now() < until {
        let text = if reloads % 2 == 0 { second_version() } else { CONTACT.to_string() };
        write(&config, &text);
        let out = reload(&dir, &config, &db);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        reloads += 1;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let mut answered = 0;
    for c in clients {
        answered += c.await.unwrap();
    }
    assert!(reloads >= 8 && answered > 50, "{reloads} reloads, {answered} answers");

    // The last good file is in force: the second version with a form no earlier file had,
    // so that seeing it served proves the server read the file after this write (a reload
    // still pending from the loop read an older file, and would undo a form seen earlier).
    let last = format!(
        "{}\n[forms.settled]\ntitle = \"Settled\"\neffects = []\nhoneypot = \"\"\n\
         [[forms.settled.fields]]\nname = \"email\"\ntype = \"email\"\n",
        second_version()
    );
    write(&config, &last);
    assert!(reload(&dir, &config, &db).status.success());
    let served = |form: &'static str| client.get(format!("{base}/f/{form}")).send();
    let deadline = Instant::now() + Duration::from_secs(5);
    while served("settled").await.unwrap().status() != 200 {
        assert!(Instant::now() < deadline, "the reloaded form is never served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A bad file: `onceform reload` refuses it and signals nothing; a bare SIGHUP is counted.
    write(&config, &format!("{last}\n[forms.contact.nonsense]\nx = 1\n"));
    let out = reload(&dir, &config, &db);
    assert!(!out.status.success(), "a bad file is refused before the server is told");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nonsense"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid = i32::try_from(server.child.id()).unwrap();
    // SAFETY: sends SIGHUP to the child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
    let failures = || async {
        let metrics = client.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
        metrics
            .lines()
            .find_map(|l| l.strip_prefix("onceform_config_reload_failures_total "))
            .map(String::from)
    };
    // At least one: a signal of the last good reload may still be pending, and reads this file.
    let deadline = Instant::now() + Duration::from_secs(5);
    while failures().await.and_then(|n| n.parse::<u64>().ok()).unwrap_or(0) < 1 {
        assert!(Instant::now() < deadline, "the failed reload is not counted: {:?}", failures().await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for form in ["quote", "settled"] {
        assert_eq!(served(form).await.unwrap().status(), 200, "a bad file changes nothing");
    }
    let (status, body) = submit(
        &client,
        &base,
        &format!("after-{}", uuid::Uuid::new_v4().simple()),
        &json!({
            "email": "late@example.com", "message": "still served", "company": "the second version's field"
        }),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert!(server.child.try_wait().is_ok_and(|s| s.is_none()), "SIGHUP does not end the server");
    let _ = std::fs::remove_dir_all(&dir);
}
