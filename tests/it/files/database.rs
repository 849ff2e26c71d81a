//! Attached files kept in PostgreSQL (`[server] files = "database"`, the default there): a
//! file uploaded to one `serve` process is attached by a worker process with another, empty,
//! files folder (they share only the database); two `serve` nodes and a `worker`, each in an
//! empty folder of its own, deliver every file posted to either node to the owner's email and
//! to HubSpot, byte for byte; a large upload streams through with flat
//! memory; an upload cut short by a crash leaves no complete blob and the sweep deletes its
//! chunks; `files migrate` copies every file both ways, checked by SHA-256. (Retention and
//! erasure on this store: `kept::postgres::*`, which run on it.)

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mail_parser::{MessageParser, MimeHeaders};
use serde_json::{json, Value};

use super::attach::{with_quote, QUOTE};
use crate::lifecycle::{onceform_with, stdout};
use crate::support::files::{kept_blobs, pdf, read_stored, sha256};
use crate::support::files::{multipart, Part};
use crate::support::hubspot::FakeHubspot;
use crate::support::serve_process::ServeProcess;
use crate::support::smtp::SmtpSink;
use crate::support::vendor::{set_token, TOKEN_ENV};
use crate::support::worker_process::WorkerProcess;
use crate::support::{new_key, spawn_app_with, Backend, TestDb};
use onceform::config::{Config, FileStoreKind};

/// The quote form sending the owner notification, its drawing up to 60 MB; `worker` lines.
fn config(worker: &str) -> String {
    format!(
        "[server]\nmax_concurrent_uploads = 2\nbody_timeout_ms = 120000\n\n[worker]\npoll_ms = 50\n{worker}\n\n[smtp]\nfrom = \"onceform <noreply@localhost>\"\n{}",
        QUOTE
            .replace("effects = []", "effects = [\"owner_notification\"]\nnotify = [\"sales@example.com\"]")
            .replace("max_files_bytes = 1000000", "max_files_bytes = 60000000")
            .replace("max_bytes = 100000", "max_bytes = 60000000")
    )
}

/// A fresh folder holding `onceform.toml` with `text`.
fn node(text: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("onceform-node-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("onceform.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn serve(db: &TestDb, dir: &Path, config: &Path) -> ServeProcess {
    let mut cmd = ServeProcess::command(&db.url, &["--config", config.to_str().unwrap()]);
    cmd.current_dir(dir).env("ONCEFORM_SECRET", crate::support::TEST_SECRET);
    ServeProcess::start(cmd)
}

async fn upload(client: &reqwest::Client, server: &ServeProcess, body: reqwest::Body) -> Value {
    let resp = client
        .post(format!("{}/api/forms/quote/uploads", server.address))
        .header("Content-Type", "application/octet-stream")
        .header("Onceform-File-Name", "drawing.pdf")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    resp.json().await.unwrap()
}

#[tokio::test]
async fn a_file_uploaded_to_one_node_is_attached_by_a_worker_with_another_folder() {
    let db = TestDb::new(Backend::Postgres);
    let (web_dir, web_config) = node(&config("enabled = false"));
    let (worker_dir, worker_config) = node(&format!("{}\n[database]\nurl = \"{}\"\n", config(""), db.url));
    let server = serve(&db, &web_dir, &web_config);
    let drawing = pdf("made on the web node");
    let client = reqwest::Client::new();
    let up = upload(&client, &server, drawing.clone().into()).await;
    let resp = client
        .post(format!("{}/api/forms/quote/submissions", server.address))
        .header("Idempotency-Key", new_key())
        .json(&json!({"email": "mei@example.com", "drawing": [up["upload_id"]]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    assert!(!web_dir.join("data/files").exists(), "the web node kept nothing in a folder");

    let _worker = WorkerProcess::start(&worker_config);
    let mail = worker_dir.join("data/mail");
    let deadline = Instant::now() + Duration::from_secs(30);
    let raw = loop {
        let found = std::fs::read_dir(&mail).into_iter().flatten().flatten().find_map(|e| {
            let text = std::fs::read_to_string(e.path()).ok()?;
            text.contains("sales@example.com").then_some(text)
        });
        match found {
            Some(text) => break text,
            None if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            None => panic!("no owner notification in {}", mail.display()),
        }
    };
    let message = MessageParser::default().parse(raw.as_bytes()).unwrap();
    let attached: Vec<(&str, &[u8])> =
        message.attachments().map(|a| (a.attachment_name().unwrap_or(""), a.contents())).collect();
    assert_eq!(attached, [("drawing.pdf", drawing.as_slice())], "the worker read the web node's file");
    assert!(!worker_dir.join("data/files").exists(), "the worker's folder was never used");
}

/// The quote form sending each submission to HubSpot (`crm_lead`, its files with it) and the
/// owner notification (its files attached) through `smtp`; `worker` lines.
fn delivering(worker: &str, hubspot: &FakeHubspot, smtp: &SmtpSink) -> String {
    format!(
        "[worker]\npoll_ms = 50\n{worker}\n\n[crm]\nadapter = \"hubspot\"\nurl = \"{}\"\ntoken_env = \"{TOKEN_ENV}\"\n\n\
         [smtp]\nurl = \"{}\"\nfrom = \"onceform <noreply@localhost>\"\n{}",
        hubspot.url,
        smtp.url,
        QUOTE.replace(
            "effects = []",
            "effects = [\"crm_lead\", \"owner_notification\"]\nnotify = [\"sales@example.com\"]\n\
             crm_fields = { email = \"email\" }"
        )
    )
}

/// `POST /f/quote` as a browser sends it to `server`: its status.
async fn post_form(client: &reqwest::Client, server: &ServeProcess, email: &str, drawing: &[u8]) -> u16 {
    let key = new_key();
    let (content_type, body) = multipart(&[
        Part::Text("operation_id", &key),
        Part::Text("email", email),
        Part::File("drawing", "drawing.pdf", drawing),
    ]);
    let url = format!("{}/f/quote", server.address);
    let resp = client.post(url).header("Content-Type", content_type).body(body).send().await.unwrap();
    resp.status().as_u16()
}

/// Names the upload `upload_id` in a submission to `server`: its status.
async fn submit_upload(
    client: &reqwest::Client,
    server: &ServeProcess,
    email: &str,
    upload_id: &Value,
) -> u16 {
    let resp = client
        .post(format!("{}/api/forms/quote/submissions", server.address))
        .header("Idempotency-Key", new_key())
        .json(&json!({"email": email, "drawing": [upload_id]}))
        .send()
        .await
        .unwrap();
    resp.status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_web_nodes_and_a_worker_in_empty_folders_deliver_every_file_to_the_owner_and_the_crm() {
    set_token(); // the processes started below inherit it
    let db = TestDb::new(Backend::Postgres);
    let (hubspot, smtp) = (FakeHubspot::start().await, SmtpSink::start().await);
    let web = delivering("enabled = false", &hubspot, &smtp);
    let (a_dir, a_config) = node(&web);
    let (b_dir, b_config) = node(&web);
    let (worker_dir, worker_config) =
        node(&format!("[database]\nurl = \"{}\"\n\n{}", db.url, delivering("", &hubspot, &smtp)));
    let (a, b) = (serve(&db, &a_dir, &a_config), serve(&db, &b_dir, &b_config));
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();

    // A browser's post to each node, an upload and submission on each, and an upload to one
    // node named in a submission to the other.
    let files: Vec<(String, Vec<u8>)> =
        (0..5).map(|i| (format!("visitor{i}@example.com"), pdf(&format!("drawing {i}")))).collect();
    assert_eq!(post_form(&client, &a, &files[0].0, &files[0].1).await, 303);
    assert_eq!(post_form(&client, &b, &files[1].0, &files[1].1).await, 303);
    for (i, (upload_to, submit_to)) in [(&a, &a), (&b, &b), (&a, &b)].into_iter().enumerate() {
        let (email, drawing) = &files[i + 2];
        let up = upload(&client, upload_to, drawing.clone().into()).await;
        assert_eq!(submit_upload(&client, submit_to, email, &up["upload_id"]).await, 201);
    }

    let _worker = WorkerProcess::start(&worker_config);
    let to_owner = || -> Vec<String> {
        smtp.messages().into_iter().filter(|m| m.contains("sales@example.com")).collect()
    };
    let deadline = Instant::now() + Duration::from_secs(40);
    while to_owner().len() < files.len() || hubspot.notes().len() < files.len() {
        assert!(
            Instant::now() < deadline,
            "{} owner emails, {} notes: {:?}",
            to_owner().len(),
            hubspot.notes().len(),
            hubspot.refused()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let mut want: Vec<Vec<u8>> = files.iter().map(|(_, f)| f.clone()).collect();
    want.sort();
    let mut mailed: Vec<Vec<u8>> = Vec::new();
    for raw in to_owner() {
        let message = MessageParser::default().parse(raw.as_bytes()).unwrap();
        let attached: Vec<Vec<u8>> = message.attachments().map(|a| a.contents().to_vec()).collect();
        assert_eq!(attached.len(), 1, "one file per owner email");
        mailed.extend(attached);
    }
    mailed.sort();
    assert_eq!(mailed, want, "each file reached the owner, byte for byte");
    let mut crm: Vec<Vec<u8>> = hubspot.files().into_iter().map(|f| f.bytes).collect();
    crm.sort();
    assert_eq!(crm, want, "each file reached HubSpot once, byte for byte");
    assert!(hubspot.refused().is_empty(), "{:?}", hubspot.refused());
    assert_eq!(hubspot.notes().len(), files.len(), "one note per lead");
    for dir in [&a_dir, &b_dir, &worker_dir] {
        assert!(!dir.join("data/files").exists(), "{} kept no file", dir.display());
    }
}

/// The server's peak resident memory (`VmHWM`), in kB.
fn peak_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Piece `i` of 1 MB of a large file (a PDF header first).
fn piece(i: usize) -> Vec<u8> {
    let mut p = vec![(i % 251) as u8; 1_000_000];
    if i == 0 {
        p[..9].copy_from_slice(b"%PDF-1.4\n");
    }
    p
}

/// Uploads `n` MB generated a piece at a time (over a plain socket: the client holds one
/// piece too); the answer's JSON and the file's digest.
fn upload_large(address: &str, n: usize) -> (Value, String) {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let address = address.trim_start_matches("http://").to_string();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        stream,
        "POST /api/forms/quote/uploads HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/octet-stream\r\n\
         Onceform-File-Name: large.pdf\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        n * 1_000_000
    )
    .unwrap();
    let mut hash = Sha256::new();
    for i in 0..n {
        let p = piece(i);
        hash.update(&p);
        stream.write_all(&p).unwrap();
    }
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    let body = answer.split("\r\n\r\n").nth(1).unwrap();
    let digest = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    (serde_json::from_str(body).unwrap(), digest)
}

#[tokio::test]
async fn a_large_upload_streams_into_the_database_with_flat_memory() {
    let db = TestDb::new(Backend::Postgres);
    let (dir, path) = node(&config("enabled = false"));
    let server = serve(&db, &dir, &path);
    // Warm: the pools, the first chunk buffer, the runtime's threads.
    let address = server.address.clone();
    let warm = address.clone();
    tokio::task::spawn_blocking(move || upload_large(&warm, 2)).await.unwrap();
    let before = peak_kb(server.child.id());
    let (up, digest) = tokio::task::spawn_blocking(move || upload_large(&address, 50)).await.unwrap();
    assert_eq!(up["sha256"], digest.as_str());
    let grown = peak_kb(server.child.id()).saturating_sub(before);
    assert!(grown < 30_000, "the server's peak memory grew by {grown} kB for a 50 MB file");
    let config = crate::support::test_config(&db.url);
    assert!(kept_blobs(&config).contains(&digest));
    let back = read_stored(&config, &digest);
    assert_eq!((back.len(), sha256(&back)), (50_000_000, digest), "read back whole, a chunk at a time");
}

/// `POST /f/quote` as a browser sends it, over a plain socket, with a PDF of `mib` MiB
/// (its first line names `tag`, the rest is `filler`): the status line of the answer.
fn post_large_form(address: &str, tag: &str, mib: usize, filler: &[u8]) -> String {
    use std::io::Read;
    let address = address.trim_start_matches("http://").to_string();
    let boundary = format!("----onceform{}", uuid::Uuid::new_v4().simple());
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"operation_id\"\r\n\r\n{}\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\n{tag}@example.com\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"drawing\"; filename=\"drawing.pdf\"\r\n\
         Content-Type: application/pdf\r\n\r\n%PDF-1.4\n% {tag}\n",
        new_key()
    );
    let tail = format!("\r\n--{boundary}--\r\n");
    let length = head.len() + mib * (1 << 20) + tail.len();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    write!(
        stream,
        "POST /f/quote HTTP/1.1\r\nHost: {address}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\n\
         Connection: close\r\nContent-Length: {length}\r\n\r\n{head}"
    )
    .unwrap();
    for _ in 0..mib {
        // A server that answered early (408, 413) may close before the rest: its answer counts.
        if stream.write_all(filler).is_err() {
            break;
        }
    }
    let _ = stream.write_all(tail.as_bytes());
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).lines().next().unwrap_or("no answer").to_string()
}

/// A database slow to take a chunk (each insert into `blob_chunks` takes a second here: a
/// busy disk, a synchronous replica) holds up only the upload whose chunk it is (issue 43).
/// Four browsers post 3 MiB files at once to a server with one HTTP worker and the default
/// 10 s body deadline: each upload waits for its own three chunks (about 4 s with the last
/// one), not for the others'. A chunk inserted on the HTTP worker's thread held every other
/// upload of that worker for its second: twelve seconds in all, and the last posts ran out of
/// their deadline (408), as 8 posts of the load benchmark's row of 16 clients with 16 MiB
/// files did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_chunk_write_holds_up_only_its_own_upload() {
    use diesel::connection::SimpleConnection;
    let db = TestDb::new(Backend::Postgres);
    let quote = QUOTE
        .replace("max_files_bytes = 1000000", "max_files_bytes = 20000000")
        .replace("max_bytes = 100000", "max_bytes = 20000000");
    let (dir, path) = node(&format!("[server]\nhttp_workers = 1\n\n[worker]\nenabled = false\n{quote}"));
    let server = serve(&db, &dir, &path);
    let mut direct = onceform::db::establish_pg(&db.url).unwrap();
    direct
        .batch_execute(
            "CREATE FUNCTION slow_chunk() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1); RETURN NEW; END $$;
             CREATE TRIGGER slow_chunk BEFORE INSERT ON blob_chunks FOR EACH ROW EXECUTE FUNCTION slow_chunk();",
        )
        .unwrap();
    let filler: std::sync::Arc<Vec<u8>> = std::sync::Arc::new(vec![b'x'; 1 << 20]);
    let started = Instant::now();
    let posts: Vec<_> = (0..4)
        .map(|i| {
            let (address, filler) = (server.address.clone(), filler.clone());
            std::thread::spawn(move || post_large_form(&address, &format!("visitor{i}"), 3, &filler))
        })
        .collect();
    let answers: Vec<String> = posts.into_iter().map(|p| p.join().unwrap()).collect();
    let elapsed = started.elapsed();
    let refused: Vec<&String> = answers.iter().filter(|a| !a.starts_with("HTTP/1.1 303")).collect();
    assert!(refused.is_empty(), "{} of 4 posts not accepted in {elapsed:?}: {refused:?}", refused.len());
    let config = crate::support::test_config(&db.url);
    assert_eq!(kept_blobs(&config).len(), 4, "one blob per post");
}

#[tokio::test]
async fn an_upload_cut_short_leaves_no_blob_and_the_sweep_deletes_its_chunks() {
    use diesel::prelude::*;
    use onceform::db::schema::{blob_chunks, blobs};
    let db = TestDb::new(Backend::Postgres);
    let (dir, path) = node(&config("enabled = false"));
    let mut server = serve(&db, &dir, &path);
    // 5 MB announced, 3 MB sent, then the server dies (a crash, a deploy): nothing can tidy up.
    let address = server.address.trim_start_matches("http://").to_string();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    write!(
        stream,
        "POST /api/forms/quote/uploads HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/octet-stream\r\n\
         Onceform-File-Name: cut.pdf\r\nContent-Length: 5000000\r\n\r\n%PDF-1.4\n"
    )
    .unwrap();
    stream.write_all(&vec![b'x'; 3_000_000]).unwrap();
    let config = crate::support::test_config(&db.url);
    let pool = onceform::db::Pool::for_files(&config.database);
    let chunks = || -> i64 { blob_chunks::table.count().get_result(&mut *pool.get().unwrap()).unwrap() };
    let deadline = Instant::now() + Duration::from_secs(20);
    while chunks() < 2 {
        assert!(Instant::now() < deadline, "the chunks are written as they arrive");
        std::thread::sleep(Duration::from_millis(50));
    }
    server.child.kill().unwrap(); // SIGKILL
    server.child.wait().unwrap();
    drop(stream);
    let complete: i64 =
        blobs::table.filter(blobs::complete.eq(true)).count().get_result(&mut *pool.get().unwrap()).unwrap();
    assert_eq!(complete, 0, "no complete blob");
    assert!(kept_blobs(&config).is_empty());

    let files = onceform::services::files::Files::stored(&config.server, &config.database);
    let main = onceform::db::Pool::connect(&config.database).unwrap();
    let now = onceform::base::clock::now();
    onceform::services::files::sweep(&main, &files, now).unwrap();
    assert!(chunks() >= 2, "within its hour an upload may still be streaming in");
    crate::support::files::age_stored(&config);
    onceform::services::files::sweep(&main, &files, now).unwrap();
    assert_eq!(chunks(), 0, "the sweep deleted the chunks of the upload never finished");
    let rows: i64 = blobs::table.count().get_result(&mut *pool.get().unwrap()).unwrap();
    assert_eq!(rows, 0);
}

crate::on_both_backends!(files_migrate_copies_every_file_both_ways);

async fn files_migrate_copies_every_file_both_ways(backend: Backend) {
    let folder = |c: &mut Config| {
        with_quote(c);
        c.server.files = Some(FileStoreKind::Folder);
    };
    let app = spawn_app_with(backend, folder).await;
    let files = [pdf("one"), pdf("two"), crate::support::files::png()];
    for f in &files {
        let (status, _) = super::attach::upload(&app, "quote", "f.pdf", f).await;
        assert_eq!(status, 201);
    }
    let mut want: Vec<String> = files.iter().map(|f| sha256(f)).collect();
    want.sort();
    assert_eq!(kept_blobs(&app.config), want);
    let files_dir = &app.config.server.files_dir;
    let text =
        |store: &str, dir: &str| format!("{QUOTE}\n[server]\nfiles = \"{store}\"\nfiles_dir = \"{dir}\"\n");

    if backend == Backend::Sqlite {
        let out = onceform_with(&app, &text("folder", files_dir), &["files", "migrate", "--to", "database"]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("PostgreSQL only"));
        let out = onceform_with(&app, &text("database", files_dir), &["check-config"]);
        assert!(!out.status.success(), "files = \"database\" on SQLite is refused");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("server.files"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let out = onceform_with(&app, &text("folder", files_dir), &["files", "migrate", "--to", "database"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout(&out).contains("copied: 3\n"), "{}", stdout(&out));
    let mut in_db = (*app.config).clone();
    in_db.server.files = Some(FileStoreKind::Database);
    assert_eq!(kept_blobs(&in_db), want, "every file is in the database");
    for f in &files {
        assert_eq!(read_stored(&in_db, &sha256(f)), *f);
    }
    let again = onceform_with(&app, &text("folder", files_dir), &["files", "migrate", "--to", "database"]);
    assert!(stdout(&again).contains("copied: 0\nalready there: 3\n"), "{}", stdout(&again));

    // Back into a new, empty folder.
    let fresh = std::env::temp_dir().join(format!("onceform-files-{}", uuid::Uuid::new_v4().simple()));
    let fresh = fresh.to_string_lossy().into_owned();
    let out = onceform_with(&app, &text("database", &fresh), &["files", "migrate", "--to", "folder"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout(&out).contains("copied: 3\n"), "{}", stdout(&out));
    assert_eq!(crate::support::files::blobs(&fresh), want);
    for f in &files {
        let d = sha256(f);
        assert_eq!(std::fs::read(format!("{fresh}/{}/{d}", &d[..2])).unwrap(), *f);
    }
    let _ = std::fs::remove_dir_all(&fresh);
}
