//! `onceform backup` and `restore` as an operator runs them (the binary, beside a running
//! server): every submission acknowledged before the backup started replays from the restored
//! copy (same key, same body: 200, `Idempotent-Replayed`, the same submission ID), with its
//! attached files; a backup whose files do not match its manifest is refused before anything
//! is restored; on PostgreSQL with the files in the database, the runbook's drill restores
//! them with the dump.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use onceform::config::Config;
use serde_json::{json, Value};

use crate::files::attach::{upload, with_quote};
use crate::on_both_backends;
use crate::support::files::{blobs, pdf, sha256};
use crate::support::{
    inquiry, new_key, own_dir, spawn_app_with, spawn_on, test_config, Backend, TestDb, TEST_SECRET,
};

on_both_backends!(every_submission_acknowledged_before_a_backup_replays_from_its_restore);

/// `onceform ARGS` with the test's secret and `database` as ONCEFORM_DATABASE_URL, in a
/// directory of its own.
fn onceform(args: &[&str], database: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_onceform"));
    cmd.args(args)
        .current_dir(own_dir())
        .env_remove("ONCEFORM_CONFIG")
        .env_remove("ONCEFORM_SECRET_PREVIOUS")
        .env("ONCEFORM_DATABASE_URL", database)
        .env("ONCEFORM_SECRET", TEST_SECRET)
        .env("RUST_LOG", "off");
    cmd.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A configuration file naming the file store and secret file of `config` (the in-process
/// server's), for the `onceform` beside it.
fn config_file(config: &Config) -> PathBuf {
    let server = format!(
        "[server]\nfiles = \"{}\"\nfiles_dir = {:?}\nsecret_file = {:?}\n",
        config.server.file_store(&config.database.url).as_str(),
        config.server.files_dir,
        config.server.secret_file
    );
    let path = own_dir().join("onceform.toml");
    std::fs::write(&path, onceform::config::DEFAULT_CONFIG.replacen("[server]\n", &server, 1)).unwrap();
    path
}

/// A folder that does not exist yet.
fn new_dir(name: &str) -> PathBuf {
    own_dir().join(name)
}

/// Runs a command `backup` or `restore` printed (`pg_dump …`, `pg_restore …`), with the
/// password of `url` (if any) as PGPASSWORD, as the printed note says.
fn run_printed(stdout: &str, program: &str, url: &str) {
    let line =
        stdout.lines().map(str::trim).find(|l| l.starts_with(program)).unwrap_or_else(|| panic!("{stdout}"));
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(line).current_dir(own_dir());
    if let Some(password) = url::Url::parse(url).unwrap().password() {
        cmd.env("PGPASSWORD", password);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{line}: {}", text(&out.stderr));
}

/// One acknowledged operation: where it went, its key and body, its submission, and when
/// the client had its 201.
#[derive(Clone)]
struct Acked {
    form: &'static str,
    key: String,
    body: Value,
    id: String,
    at: Instant,
}

async fn submit(client: &reqwest::Client, base: &str, form: &'static str, body: Value) -> Option<Acked> {
    let key = new_key();
    let url = format!("{base}/api/forms/{form}/submissions");
    let resp = client.post(url).header("Idempotency-Key", &key).json(&body).send().await.ok()?;
    let at = Instant::now();
    if resp.status() != 201 {
        return None;
    }
    let id = resp.json::<Value>().await.ok()?["submission_id"].as_str()?.to_string();
    Some(Acked { form, key, body, id, at })
}

async fn every_submission_acknowledged_before_a_backup_replays_from_its_restore(backend: Backend) {
    // The drill of the folder store (with `files = "database"` the files are in the dump).
    let app = spawn_app_with(backend, |c| {
        with_quote(c);
        c.server.files = Some(onceform::config::FileStoreKind::Folder);
    })
    .await;
    let database = app.config.database.url.to_string();
    let acked = Arc::new(Mutex::new(Vec::new()));
    // Submissions with attached files (blobs in the file store).
    let mut drawings = Vec::new();
    for i in 0..3 {
        let drawing = pdf(&format!("drawing {i}"));
        let (status, up) = upload(&app, "quote", "drawing.pdf", &drawing).await;
        assert_eq!(status, 201, "{up}");
        let body = json!({"email": "mei@example.com", "drawing": [up["upload_id"]]});
        let done = submit(&app.client, &app.address, "quote", body).await.expect("201");
        acked.lock().unwrap().push(done);
        drawings.push(sha256(&drawing));
    }
    // Load: three clients submitting as fast as they are answered, until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..3)
        .map(|c| {
            let (client, base, acked, stop) =
                (app.client.clone(), app.address.clone(), acked.clone(), stop.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    n += 1;
                    if let Some(done) =
                        submit(&client, &base, "contact", inquiry(&format!("load {c}-{n}"))).await
                    {
                        acked.lock().unwrap().push(done);
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.lock().unwrap().len() < 40 {
        assert!(Instant::now() < deadline, "the load is not being acknowledged");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let dir = new_dir("backup");
    let config = config_file(&app.config);
    let started = Instant::now();
    let (to, config_arg, url) =
        (dir.to_string_lossy().into_owned(), config.to_string_lossy().into_owned(), database.clone());
    let out = tokio::task::spawn_blocking(move || {
        let out = onceform(&["backup", "--to", &to, "--config", &config_arg], &url);
        if backend == Backend::Postgres && out.status.success() {
            // The database is the server's to copy: the dump the backup printed, run now.
            run_printed(&text(&out.stdout), "pg_dump ", &url);
        }
        out
    })
    .await
    .unwrap();
    let ended = Instant::now();
    stop.store(true, Ordering::SeqCst);
    for c in clients {
        c.await.unwrap();
    }
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("files: 3 blob(s)"), "{report}");
    assert!(!report.contains(TEST_SECRET), "the secret's value is never printed");
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    assert!(!manifest.contains(TEST_SECRET), "nor written");
    let acked = acked.lock().unwrap().clone();
    let before: Vec<&Acked> = acked.iter().filter(|a| a.at < started).collect();
    let during = acked.iter().filter(|a| a.at >= started && a.at < ended).count();
    assert!(before.len() >= 40 && during > 0, "{} before, {during} while the backup ran", before.len());

    let from = match backend {
        Backend::Sqlite => dir,
        Backend::Postgres => {
            // The dump taken first into a folder of its own is checksummed by the backup.
            let dumped = new_dir("dump-first");
            std::fs::create_dir_all(&dumped).unwrap();
            std::fs::rename(dir.join("onceform.pgdump"), dumped.join("onceform.pgdump")).unwrap();
            let to = dumped.to_string_lossy().into_owned();
            let out = onceform(&["backup", "--to", &to, "--config", &config.to_string_lossy()], &database);
            assert!(out.status.success(), "{}", text(&out.stderr));
            assert!(
                text(&out.stdout).contains("the dump already in the folder, checksummed"),
                "{}",
                text(&out.stdout)
            );
            dumped
        }
    };

    // Restored into a fresh database and file store; a server started on them.
    let db = TestDb::new(backend);
    let mut restored = test_config(&db.url);
    with_quote(&mut restored);
    restored.server.files = Some(onceform::config::FileStoreKind::Folder);
    let restored_file = config_file(&restored);
    let (from_arg, config_arg) =
        (from.to_string_lossy().into_owned(), restored_file.to_string_lossy().into_owned());
    let out = onceform(&["restore", "--from", &from_arg, "--config", &config_arg], &db.url);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("files: 3 blob(s)"), "{report}");
    assert!(report.contains("secret: ONCEFORM_SECRET is the backup's"), "{report}");
    if backend == Backend::Postgres {
        assert!(report.contains("onceform.pgdump checked"), "{report}");
        run_printed(&report, "pg_restore ", &db.url);
    }
    let mut want = drawings.clone();
    want.sort();
    assert!(
        want.iter().all(|d| blobs(&restored.server.files_dir).contains(d)),
        "the attached files came back"
    );
    let server = spawn_on(db, restored).await;
    for a in &before {
        let url = server.url(&format!("/api/forms/{}/submissions", a.form));
        let resp =
            server.client.post(url).header("Idempotency-Key", &a.key).json(&a.body).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{}: {}", a.key, resp.text().await.unwrap());
        assert_eq!(resp.headers().get("idempotent-replayed").unwrap(), "true");
        let receipt: Value = resp.json().await.unwrap();
        assert_eq!(receipt["submission_id"], a.id.as_str(), "{}", a.key);
    }
}

/// A backup of a server with one attached file: (the folder, the server's configuration file).
async fn one_backup() -> (crate::support::TestApp, PathBuf, PathBuf) {
    let app = spawn_app_with(Backend::Sqlite, with_quote).await;
    let (status, up) = upload(&app, "quote", "drawing.pdf", &pdf("kept")).await;
    assert_eq!(status, 201, "{up}");
    let body = json!({"email": "mei@example.com", "drawing": [up["upload_id"]]});
    submit(&app.client, &app.address, "quote", body).await.expect("201");
    let dir = new_dir("backup");
    let config = config_file(&app.config);
    let out = onceform(
        &["backup", "--to", &dir.to_string_lossy(), "--config", &config.to_string_lossy()],
        &app.config.database.url.to_string(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    (app, dir, config)
}

/// `restore` into a fresh database and file store: (its output, the database file, the store).
fn restore_fresh(from: &Path, extra: &[&str]) -> (Output, PathBuf, String, TestDb) {
    let db = TestDb::new(Backend::Sqlite);
    let config = test_config(&db.url);
    let file = config_file(&config);
    let mut args = vec!["restore", "--from"];
    let (from, file) = (from.to_string_lossy().into_owned(), file.to_string_lossy().into_owned());
    args.extend([from.as_str(), "--config", file.as_str()]);
    args.extend(extra);
    let out = onceform(&args, &db.url);
    let path = PathBuf::from(db.url.strip_prefix("sqlite://").unwrap());
    (out, path, config.server.files_dir.clone(), db)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_backup_is_refused_before_anything_is_restored() {
    let (app, dir, config) = one_backup().await;
    let blob = std::fs::read_dir(dir.join("files")).unwrap().next().unwrap().unwrap().path();
    let blob = std::fs::read_dir(blob).unwrap().next().unwrap().unwrap().path();
    let original = std::fs::read(&blob).unwrap();
    let mut changed = original.clone();
    changed[20] ^= 1;
    std::fs::write(&blob, &changed).unwrap();

    let (out, database, files_dir, _db) = restore_fresh(&dir, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    let name = blob.file_name().unwrap().to_string_lossy().into_owned();
    assert!(err.contains("does not match its manifest") && err.contains(&name), "{err}");
    assert!(!database.exists(), "no database written");
    assert!(blobs(&files_dir).is_empty(), "no file written");

    // Put back, it restores; into a database that holds data, only with --force.
    std::fs::write(&blob, &original).unwrap();
    let (out, database, files_dir, _db) = restore_fresh(&dir, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(database.exists() && blobs(&files_dir) == [name.clone()]);
    let own = app.config.database.url.to_string();
    let args = ["restore", "--from", &dir.to_string_lossy(), "--config", &config.to_string_lossy()];
    let out = onceform(&args, &own);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("holds data") && text(&out.stderr).contains("--force"),
        "{}",
        text(&out.stderr)
    );

    // A schema newer than this binary's migrations, and a manifest's own path out of the
    // folder, are refused too.
    let manifest_path = dir.join("manifest.json");
    let manifest = std::fs::read_to_string(&manifest_path).unwrap();
    let mut m: Value = serde_json::from_str(&manifest).unwrap();
    m["migration"] = json!("9999-01-01-000000_future");
    std::fs::write(&manifest_path, m.to_string()).unwrap();
    let (out, database, _, _db) = restore_fresh(&dir, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("newer than this onceform knows"), "{}", text(&out.stderr));
    assert!(!database.exists());
    let mut m: Value = serde_json::from_str(&manifest).unwrap();
    m["files"][0]["path"] = json!("../onceform.db");
    std::fs::write(&manifest_path, m.to_string()).unwrap();
    let (out, _, _, _db) = restore_fresh(&dir, &[]);
    assert!(text(&out.stderr).contains("not a file a backup holds"), "{}", text(&out.stderr));
    std::fs::remove_file(&manifest_path).unwrap();
    let (out, _, _, _db) = restore_fresh(&dir, &[]);
    assert!(text(&out.stderr).contains("not a finished backup"), "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_refuses_a_folder_that_holds_something() {
    let (app, dir, config) = one_backup().await;
    let out = onceform(
        &["backup", "--to", &dir.to_string_lossy(), "--config", &config.to_string_lossy()],
        &app.config.database.url.to_string(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("is not empty"), "{}", text(&out.stderr));
}

/// On PostgreSQL the URL's password appears nowhere: not in what is printed, not in the
/// manifest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_backup_prints_the_dump_without_the_password() {
    let db = TestDb::new(Backend::Postgres);
    // The test server trusts the tests' role: a password it never asks for is still one to hide.
    let mut url = url::Url::parse(&db.url).unwrap();
    if url.password().is_none() {
        url.set_password(Some("hunter2-not-shown")).unwrap();
    }
    let with_password = url.to_string();
    let migrated = onceform(&["migrate"], &with_password);
    assert!(migrated.status.success(), "{}", text(&migrated.stderr));
    let dir = new_dir("backup");
    let out = onceform(&["backup", "--to", &dir.to_string_lossy()], &with_password);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("pg_dump --format=custom") && report.contains("pg_basebackup"), "{report}");
    let password =
        url::Url::parse(&with_password).unwrap().password().map(str::to_string).unwrap_or_default();
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    assert!(!password.is_empty() && !report.contains(&password) && !manifest.contains(&password), "{report}");
    assert!(report.contains("PGPASSWORD"), "{report}");
}

/// An acknowledged operation and the file it named.
type WithFile = (Acked, Vec<u8>);

/// `POST /api/forms/quote/uploads` of `bytes` then a submission naming it, to the server at
/// `base`: the acknowledged operation, or `None` if either was not answered 201.
async fn submit_file(client: &reqwest::Client, base: &str, bytes: &[u8]) -> Option<Acked> {
    let resp = client
        .post(format!("{base}/api/forms/quote/uploads"))
        .header("Content-Type", "application/octet-stream")
        .header("Onceform-File-Name", "drawing.pdf")
        .body(bytes.to_vec())
        .send()
        .await
        .ok()?;
    if resp.status() != 201 {
        return None;
    }
    let up: Value = resp.json().await.ok()?;
    submit(client, base, "quote", json!({"email": "mei@example.com", "drawing": [up["upload_id"]]})).await
}

/// The PostgreSQL drill of docs/RUNBOOK.md with the files in the database (`files =
/// "database"`, the default there), step by step, while clients attach files: the dump
/// `backup` prints, run into a new folder; `backup` into it (the dump checksummed); a fresh
/// database; `restore` and the `pg_restore` it prints; a server on the restored database,
/// with an empty files folder: every operation acknowledged before the dump began replays,
/// and every file it named downloads byte for byte from the admin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_drill_restores_the_files_kept_in_the_database_with_its_dump() {
    let app = spawn_app_with(Backend::Postgres, with_quote).await;
    let in_database = onceform::config::FileStoreKind::Database;
    assert_eq!(app.config.server.file_store(&app.config.database.url), in_database);
    let database = app.config.database.url.to_string();
    let acked: Arc<Mutex<Vec<WithFile>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..2)
        .map(|c| {
            let (client, base, acked, stop) =
                (app.client.clone(), app.address.clone(), acked.clone(), stop.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    n += 1;
                    let drawing = pdf(&format!("drawing {c}-{n}"));
                    if let Some(done) = submit_file(&client, &base, &drawing).await {
                        acked.lock().unwrap().push((done, drawing));
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.lock().unwrap().len() < 10 {
        assert!(Instant::now() < deadline, "the load is not being acknowledged");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // 1. The dump first, into the new backup folder: the line `backup` prints (into an empty
    //    folder) for that folder, then `backup` into it.
    let config = config_file(&app.config);
    let config_arg = config.to_string_lossy().into_owned();
    let (probe, dir) = (new_dir("probe"), new_dir("backup"));
    let out = onceform(&["backup", "--to", &probe.to_string_lossy(), "--config", &config_arg], &database);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    assert!(printed.contains("files: kept in the database (its dump holds them)"), "{printed}");
    std::fs::create_dir_all(&dir).unwrap();
    let for_dir = printed.replace(&*probe.to_string_lossy(), &dir.to_string_lossy());
    let started = Instant::now();
    let (line, url) = (for_dir.clone(), database.clone());
    tokio::task::spawn_blocking(move || run_printed(&line, "pg_dump ", &url)).await.unwrap();
    let ended = Instant::now();
    let out = onceform(&["backup", "--to", &dir.to_string_lossy(), "--config", &config_arg], &database);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("the dump already in the folder, checksummed"), "{report}");
    assert!(report.contains("files: kept in the database"), "{report}");
    assert!(!dir.join("files").exists(), "no file copied beside the dump");
    stop.store(true, Ordering::SeqCst);
    for c in clients {
        c.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let before: Vec<&WithFile> = acked.iter().filter(|(a, _)| a.at < started).collect();
    let during = acked.iter().filter(|(a, _)| a.at >= started && a.at < ended).count();
    assert!(before.len() >= 10, "{} before the dump, {during} while it ran", before.len());

    // 2. A fresh database, a scratch configuration (its files folder empty), the same secret.
    let db = TestDb::new(Backend::Postgres);
    let mut restored = test_config(&db.url);
    with_quote(&mut restored);
    assert_eq!(restored.server.file_store(&restored.database.url), in_database);
    let restored_file = config_file(&restored);
    // 3. `restore` checks the dump and prints the `pg_restore`; run it.
    let args = ["restore", "--from", &dir.to_string_lossy(), "--config", &restored_file.to_string_lossy()];
    let out = onceform(&args, &db.url);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("onceform.pgdump checked"), "{report}");
    assert!(report.contains("files: kept in the database (its dump holds them)"), "{report}");
    assert!(report.contains("secret: ONCEFORM_SECRET is the backup's"), "{report}");
    let (line, url) = (report.clone(), db.url.clone());
    tokio::task::spawn_blocking(move || run_printed(&line, "pg_restore ", &url)).await.unwrap();

    // 4–5. A server on it: every operation acknowledged before the dump replays, and its file
    //      downloads from the submission's page, byte for byte.
    let files_dir = restored.server.files_dir.clone();
    let server = spawn_on(db, restored).await;
    let admin = server.sign_in(onceform::services::accounts::Role::Viewer).await;
    for (a, drawing) in &before {
        let url = server.url("/api/forms/quote/submissions");
        let resp =
            server.client.post(url).header("Idempotency-Key", &a.key).json(&a.body).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{}: {}", a.key, resp.text().await.unwrap());
        assert_eq!(resp.headers().get("idempotent-replayed").unwrap(), "true");
        let receipt: Value = resp.json().await.unwrap();
        assert_eq!(receipt["submission_id"], a.id.as_str(), "{}", a.key);
        let href = format!("/admin/submissions/{}/files/{}", a.id, sha256(drawing));
        let resp = server.admin_get(Some(&admin), &href).await;
        assert_eq!(resp.status(), 200, "{href}");
        assert!(resp.bytes().await.unwrap() == drawing.as_slice(), "{href} byte for byte");
    }
    assert!(blobs(&files_dir).is_empty(), "the files came from the database, not a folder");
}
