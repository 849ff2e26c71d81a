//! Issue 23's row: accepts with a 1 MiB attachment per request. On a fresh database per
//! backend, `serve` with a `quote` form whose `file` field takes PDFs; `POST /f/quote` as a
//! browser sends it (`multipart/form-data`), each post a new operation with a distinct 1 MiB
//! PDF (a new blob), at 1, 16 and 64 clients, then 64 clients with 4 MiB PDFs. Before each
//! row, the limit of the idea at the same concurrency, in-process: the file written to a new
//! file, fsynced, renamed into its shard and the shard fsynced (as the file store commits a
//! blob, without hashing it), then the accept transaction (`Acceptor`) of a submission naming
//! it. Each row has a `serve` of its own (on the same database), whose peak RSS is the row's:
//! what the earlier rows' posts left in the replay memory and caches is not counted. The bodies stream
//! to disk, so 64 uploads at once should not hold 64 MiB, and 4 MiB files should cost what
//! 1 MiB files cost. The run ends with a check: submissions = operations accepted (303s and
//! the limit's), one file row each, blobs in `files_dir` = posts accepted.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diesel::prelude::*;
use onceform::config::{FileStoreKind, Form};
use onceform::db::schema::submission_files;
use onceform::db::{DbError, Pool, Store};
use onceform::domain::{normalise_with, FileRef, OperationId};
use onceform::services::accept::{Acceptor, Intake, Outcome};
use onceform::services::request_log::Channel;
use onceform::with_conn;

use crate::common::{self, Db};
use crate::traffic::{drive, Stop, Tally};
use crate::Options;

/// Each row's clients and the size of each post's file, in MiB.
pub const ROWS: [(usize, usize); 5] = [(1, 1), (16, 1), (64, 1), (64, 4), (16, 16)];
/// The largest file, in MiB.
const LARGEST: usize = 16;
const MIB: usize = 1 << 20;

/// A quote form: an email and a required PDF of up to 32 MiB, the contact form's three effects.
const QUOTE: &str = r#"
[forms.quote]
title = "Request a quote"
honeypot = ""
min_fill_seconds = 0
max_files_bytes = 33554432
effects = ["crm_lead", "confirmation_email", "owner_notification"]
notify = ["sales@example.com"]
crm_fields = { email = "email" }
[[forms.quote.fields]]
name = "email"
type = "email"
required = true
[[forms.quote.fields]]
name = "drawing"
type = "file"
required = true
accept = ["application/pdf"]
max_bytes = 33554432
"#;

pub fn header() {
    println!(
        "| backend | files | clients | file MiB | req/s | p50 ms | p99 ms | server RSS before MiB | server peak RSS MiB | \
         limit req/s | limit p50 ms | limit p99 ms | × limit | unexpected |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
}

/// Measures and prints `backend`'s rows with the files kept in `store` (`folder` or
/// `database`), the memory line and the consistency check.
pub fn measure(rt: &tokio::runtime::Runtime, backend: &str, store: &str, opts: &Options) {
    let db = Db::new(backend);
    let (path, _) = db.config(&format!("[worker]\nenabled = false\n\n{QUOTE}"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("[server]\n", &format!("[server]\nfiles = \"{store}\"\n"), 1))
        .unwrap();
    let config = onceform::services::check_config::load(Some(&path), |_| None).unwrap();
    let in_database = config.server.file_store(&config.database.url) == FileStoreKind::Database;
    assert_eq!(in_database, store == "database", "{store}");
    let pool = Pool::connect(&config.database).unwrap();
    let acceptor = Acceptor::start(Arc::new(config.clone()), pool.clone(), common::keyring(&config)).unwrap();
    let form = Form::new("quote", config.form("quote").unwrap().clone());
    let limit_dir = db.dir.join("limit-files");
    let (mut posted, mut limited, mut unexpected, mut peaks) = (0, 0, 0, Vec::new());
    if db.is_pg() {
        // A second of warm-up, then fresh statistics (see `crate::analyze`).
        limited += limit(&acceptor, &form, &limit_dir, 16, 1, 1).0;
        crate::analyze(&pool);
    }
    for (clients, mib) in ROWS {
        let (n, ceiling) = limit(&acceptor, &form, &limit_dir, clients, mib, opts.seconds);
        limited += n;
        // A server of its own per row: the replay memory and the caches the earlier rows
        // filled do not count as this row's concurrency.
        let server = crate::serve(&path);
        let before = server.rss_mib();
        let t = rt.block_on(posts(&server.address(), clients, mib, opts.seconds));
        let peak = server.peak_rss_mib();
        (posted, unexpected) = (posted + t.created, unexpected + t.unexpected);
        peaks.push(peak);
        println!(
            "| {backend} | {store} | {clients} | {mib} | {:.0} | {:.2} | {:.2} | {before:.0} | {peak:.0} | {:.0} | {:.2} | {:.2} | \
             {:.2} | {} |",
            t.rate,
            t.p50_ms,
            t.p99_ms,
            ceiling.rate,
            ceiling.p50_ms,
            ceiling.p99_ms,
            t.rate / ceiling.rate,
            t.unexpected + ceiling.unexpected
        );
    }
    if let [one, sixteen, small, large, huge] = peaks[..] {
        println!(
            "\nmemory ({backend}, files in the {store}): server peak RSS {one:.0} MiB at 1 client, {small:.0} MiB \
             ({:+.0}) at 64 clients with 1 MiB files, {large:.0} MiB ({:+.0}) at 64 clients with 4 MiB files; \
             {sixteen:.0} MiB at 16 clients with 1 MiB files, {huge:.0} MiB ({:+.0}) with 16 MiB files",
            small - one,
            large - one,
            huge - sixteen
        );
    }
    acceptor.deliveries().flush_blocking();
    let stored = match in_database {
        true => database_blobs(&db.url),
        false => blobs(Path::new(&config.server.files_dir)),
    };
    check(&format!("{backend}, {store}"), &pool, stored, &limit_dir, posted, limited, unexpected);
}

/// `clients` browsers posting the quote form until `seconds` are up, each post a new
/// operation with a new PDF of `mib` MiB; every status but 303 is unexpected.
async fn posts(address: &str, clients: usize, mib: usize, seconds: u64) -> Tally {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(clients * 2)
        .build()
        .unwrap();
    let counts = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0)]);
    let (url, filler, shared) = (format!("{address}/f/quote"), Arc::new(filler()), counts.clone());
    let (samples, rate) = drive(clients, Stop::After(Duration::from_secs(seconds)), move |_| {
        let (client, url, filler, counts) = (client.clone(), url.clone(), filler.clone(), shared.clone());
        async move {
            let (content_type, body) = multipart(&filler[..mib * MIB]);
            let started = Instant::now();
            let resp = client.post(url).header("Content-Type", content_type).body(body).send().await;
            let status = resp.as_ref().map(|r| r.status().as_u16()).unwrap_or(0);
            if let Ok(r) = resp {
                let _ = r.bytes().await;
            }
            let micros = started.elapsed().as_micros() as u64;
            let [created, unexpected, five_xx] = &*counts;
            match status {
                303 => created.fetch_add(1, Ordering::Relaxed),
                s if s == 0 || s >= 500 => five_xx.fetch_add(1, Ordering::Relaxed),
                _ => 0,
            };
            if status != 303 {
                unexpected.fetch_add(1, Ordering::Relaxed);
            }
            vec![micros]
        }
    })
    .await;
    let [created, unexpected, five_xx] = &*counts;
    Tally {
        created: created.load(Ordering::Relaxed),
        unexpected: unexpected.load(Ordering::Relaxed),
        five_xx: five_xx.load(Ordering::Relaxed),
        ..Tally::from_samples(&samples, rate)
    }
}

/// The bytes of the largest file (the first line of each file differs).
fn filler() -> Vec<u8> {
    (0..LARGEST * MIB).map(|i| b"0123456789abcdef\n"[i % 17]).collect()
}

/// The first line of a PDF, naming `tag`.
fn pdf_head(tag: &str) -> Vec<u8> {
    format!("%PDF-1.4\n% {tag}\n").into_bytes()
}

/// The `Content-Type` and body of a browser's post of a new operation with a new PDF of the
/// size of `filler`.
fn multipart(filler: &[u8]) -> (String, Vec<u8>) {
    let op = OperationId::generate();
    let boundary = format!("----onceform{}", uuid::Uuid::new_v4().simple());
    let head = pdf_head(op.as_str());
    let mut body = Vec::with_capacity(filler.len() + 1024);
    for (name, value) in [("operation_id", op.as_str()), ("email", &format!("{}@example.com", op.as_str()))] {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"drawing\"; filename=\"drawing.pdf\"\r\n\
             Content-Type: application/pdf\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(&head);
    body.extend_from_slice(&filler[head.len()..]);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// The limit of the idea: `clients` threads, until `seconds` are up, each storing a new blob
/// of `mib` MiB under `dir` and accepting a submission naming it. (Operations accepted, their
/// rate and latency; a failure counts as unexpected.)
fn limit(
    acceptor: &Acceptor,
    form: &Form,
    dir: &Path,
    clients: usize,
    mib: usize,
    seconds: u64,
) -> (usize, Tally) {
    let (filler, failed, samples) = (filler(), AtomicUsize::new(0), Mutex::new(Vec::new()));
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    std::thread::scope(|s| {
        for _ in 0..clients {
            s.spawn(|| {
                let mut mine = Vec::new();
                while Instant::now() < until {
                    let t = Instant::now();
                    match store_and_accept(acceptor, form, dir, &filler[..mib * MIB]) {
                        Ok(true) => mine.push(t.elapsed().as_micros() as u64),
                        _ => {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                samples.lock().unwrap().extend(mine);
            });
        }
    });
    let elapsed = started.elapsed().as_secs_f64();
    let mut samples = samples.into_inner().unwrap();
    samples.sort_unstable();
    let n = samples.len();
    let tally = Tally::from_samples(&samples, n as f64 / elapsed);
    (n, Tally { unexpected: failed.load(Ordering::Relaxed), ..tally })
}

/// One blob written as the file store commits it (a temporary file, fsynced, renamed into
/// its shard, the shard fsynced; named by two UUIDs instead of its digest), then the accept
/// transaction of a submission naming it: whether it was created.
fn store_and_accept(acceptor: &Acceptor, form: &Form, dir: &Path, filler: &[u8]) -> std::io::Result<bool> {
    let name = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    let tmp = dir.join("tmp").join(&name);
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
    let head = pdf_head(&name);
    file.write_all(&head)?;
    file.write_all(&filler[head.len()..])?;
    file.sync_all()?;
    let shard = dir.join(&name[..2]);
    std::fs::create_dir_all(&shard)?;
    std::fs::rename(&tmp, shard.join(&name))?;
    std::fs::File::open(&shard)?.sync_all()?;
    let file = FileRef {
        sha256: name,
        size: filler.len() as u64,
        content_type: "application/pdf".into(),
        name: "drawing.pdf".into(),
    };
    let raw = vec![("email".to_string(), format!("{}@example.com", uuid::Uuid::new_v4().simple()))];
    let files = [("drawing".to_string(), file)];
    let intake = Intake {
        form: form.clone(),
        operation_id: Some(OperationId::generate()),
        channel: Channel::Html,
        fields: normalise_with(&**form, &raw, &files).unwrap(),
        scans: Default::default(),
        received: None,
        test: false,
    };
    Ok(matches!(acceptor.accept(intake), Ok(Outcome::Created(_))))
}

/// Blobs under a file store's folder (its shards; `tmp` counted apart): (blobs, temporary files).
fn blobs(dir: &Path) -> (usize, usize) {
    let count = |d: &Path| std::fs::read_dir(d).map_or(0, |entries| entries.count());
    let shards = std::fs::read_dir(dir).into_iter().flatten().flatten();
    let blobs = shards.filter(|s| s.file_name() != "tmp").map(|s| count(&s.path())).sum();
    (blobs, count(&dir.join("tmp")))
}

/// Blobs in the database's `blobs` table: (complete, not complete: an upload's chunks under
/// its temporary key).
fn database_blobs(url: &str) -> (usize, usize) {
    use onceform::db::schema::blobs;
    let mut c = onceform::db::establish_pg(url).unwrap();
    let rows: Vec<bool> = blobs::table.select(blobs::complete).load(&mut c).unwrap();
    let complete = rows.iter().filter(|c| **c).count();
    (complete, rows.len() - complete)
}

/// Submissions = operations accepted (posts and the limit's), one file row and three effect
/// records each, a blob per post in the file store (`stored`: blobs, temporary ones) and per
/// limit accept in `limit_dir`, no temporary file left, every status 303; loud if not.
fn check(
    backend: &str,
    pool: &Pool,
    stored: (usize, usize),
    limit_dir: &Path,
    posted: usize,
    limited: usize,
    unexpected: usize,
) {
    let stats = with_conn!(pool, |c| c.stats().map_err(DbError::from)).unwrap();
    let file_rows: i64 =
        with_conn!(pool, |c| submission_files::table.count().get_result(c).map_err(DbError::from)).unwrap();
    let effects = common::form_effects(&stats);
    let ((blobs, tmp), (limit_blobs, limit_tmp)) = (stored, blobs(limit_dir));
    let accepted = (posted + limited) as i64;
    let ok = stats.submissions == accepted
        && file_rows == accepted
        && effects == 3 * accepted
        && blobs == posted
        && limit_blobs == limited
        && tmp + limit_tmp == 0
        && unexpected == 0;
    println!(
        "\nattachments' consistency ({backend}): {} submissions for {posted} posts accepted (303) and \
         {limited} limit accepts, {file_rows} file rows, {effects} effect records, {blobs} blobs in the file store \
         and {limit_blobs} in the limit's folder, {} temporary files left, {unexpected} unexpected answers: {}\n",
        stats.submissions,
        tmp + limit_tmp,
        if ok { "OK" } else { "FAILED" }
    );
    assert!(ok, "attachments' consistency check failed on {backend}");
}
