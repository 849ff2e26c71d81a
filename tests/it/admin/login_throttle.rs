//! Sign-in guesses in parallel: each attempt is counted before its password is verified,
//! so at most the allowed number are verified, memory stays bounded, and the right password
//! works once the delay has passed.

use std::time::Duration;

use onceform::services::accounts::throttle::EMAIL;
use onceform::services::accounts::Role;

use crate::on_both_backends;
use crate::support::admin::csrf_of;
use crate::support::{spawn_app_with, Backend, TestApp};

/// This process's resident set and its peak, in KiB (`/proc/self/status`).
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// One value of `/metrics`.
async fn metric(app: &TestApp, name: &str) -> u64 {
    let text = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    let line = text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

async fn login_form(app: &TestApp) -> (String, String) {
    let form = app.client.get(app.url("/admin/login")).send().await.unwrap();
    let cookie = form
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("onceform_login_csrf="))
        .map(|v| v.split(';').next().unwrap().to_string())
        .unwrap();
    (cookie, csrf_of(&form.text().await.unwrap()))
}

async fn post_login(
    app: &TestApp,
    form: &(String, String),
    email: &str,
    password: &str,
) -> reqwest::Response {
    app.client
        .post(app.url("/admin/login"))
        .header("Cookie", &form.0)
        .form(&[("csrf", form.1.as_str()), ("email", email), ("password", password)])
        .send()
        .await
        .unwrap()
}

async fn fifty_parallel_wrong_passwords_verify_only_a_few(backend: Backend) {
    let app = spawn_app_with(backend, |_| {}).await;
    app.create_user("boss@example.com", Role::Admin).await;
    let form = login_form(&app).await;
    let (rss_before, _) = rss_kib();
    let guesses = (0..50).map(|i| {
        let (app, form) = (&app, &form);
        // The same email, written as a careless attacker (or user) might.
        let email = if i % 2 == 0 { "boss@example.com" } else { "  BOSS@Example.com " };
        async move { post_login(app, form, email, &format!("wrong guess number {i}")).await }
    });
    let answers = futures_util::future::join_all(guesses).await;
    let (rss_after, peak) = rss_kib();
    let status = |code: u16| answers.iter().filter(|r| r.status().as_u16() == code).count();
    let (wrong, delayed) = (status(401), status(429));
    let verified = metric(&app, "onceform_login_verifications_total").await;
    let at_once = metric(&app, "onceform_login_verifications_peak").await;
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2) as u64;
    println!(
        "50 parallel wrong passwords: {wrong} verified and refused (401), {delayed} delayed (429); \
         {verified} argon2 verifications, at most {at_once} at once; RSS {} MiB before, {} MiB after, peak {} MiB",
        rss_before / 1024,
        rss_after / 1024,
        peak / 1024
    );
    assert_eq!(wrong + delayed, 50, "every guess was answered 401 or 429");
    assert!(verified <= u64::from(EMAIL.free), "at most {} verified, not {verified}", EMAIL.free);
    assert_eq!(verified as usize, wrong);
    assert!(at_once <= cores, "verifications at once ({at_once}) stay within the cores ({cores})");
    assert!(rss_after < rss_before + 256 * 1024, "memory stays bounded: {rss_before} → {rss_after} KiB");

    // The owner, after the delay the 429 named, signs in.
    let retry: u64 = answers
        .iter()
        .filter_map(|r| r.headers().get("retry-after"))
        .map(|v| v.to_str().unwrap().parse().unwrap())
        .max()
        .unwrap();
    assert!(retry <= 60, "a delay, not a 15-minute lockout: {retry}");
    let early = post_login(&app, &form, "boss@example.com", "a long enough password").await;
    assert_eq!(early.status(), 429, "not before the delay, even with the right password");
    tokio::time::sleep(Duration::from_secs(retry) + Duration::from_millis(300)).await;
    let ok = post_login(&app, &form, "boss@example.com", "a long enough password").await;
    assert_eq!(ok.status(), 303, "the right password after the delay");
    assert_eq!(ok.headers()["location"], "/admin");
}

on_both_backends!(fifty_parallel_wrong_passwords_verify_only_a_few);

/// A resident set and its peak, in KiB, from `/proc/PID/status`.
fn rss_of(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        let line = status.lines().find(|l| l.starts_with(name));
        line.and_then(|l| l.split_whitespace().nth(1)).and_then(|n| n.parse().ok()).unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// A real `onceform serve` process, killed when dropped.
struct Serve(std::process::Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The same guesses against a real `serve` process: its own peak memory stays small, since
/// only a few argon2 verifications (about 19 MiB each) ever run, never one per request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serve_process_under_fifty_parallel_guesses_keeps_its_memory() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let db = crate::support::TestDb::new(Backend::Sqlite);
    let dir = std::env::temp_dir().join(format!("onceform-rss-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = env!("CARGO_BIN_EXE_onceform");
    let created = Command::new(bin)
        .args(["admin", "create-user", "--email", "boss@example.com", "--password-env", "PW"])
        .env("ONCEFORM_DATABASE_URL", &db.url)
        .env("PW", "a long enough password")
        .output()
        .unwrap();
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let mut child = Command::new(bin)
        .arg("serve")
        .current_dir(&dir)
        .env("ONCEFORM_DATABASE_URL", &db.url)
        .env("ONCEFORM_BIND", "127.0.0.1:0")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let pid = child.id();
    let _serve = Serve(child);
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let address = line.trim().rsplit(' ').next().unwrap().to_string();
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let form = client.get(format!("{address}/admin/login")).send().await.unwrap();
    let cookie = form.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    let csrf = csrf_of(&form.text().await.unwrap());

    let (rss_before, _) = rss_of(pid);
    let guesses = (0..50).map(|i| {
        let (client, address, cookie, csrf) = (&client, &address, &cookie, &csrf);
        async move {
            let password = format!("wrong guess number {i}");
            let fields =
                [("csrf", csrf.as_str()), ("email", "boss@example.com"), ("password", password.as_str())];
            let req = client.post(format!("{address}/admin/login")).header("Cookie", cookie).form(&fields);
            req.send().await.unwrap().status().as_u16()
        }
    });
    let statuses = futures_util::future::join_all(guesses).await;
    let (rss_after, peak) = rss_of(pid);
    let metrics = client.get(format!("{address}/metrics")).send().await.unwrap().text().await.unwrap();
    let verified = metrics.lines().find(|l| l.starts_with("onceform_login_verifications_total ")).unwrap();
    println!(
        "serve process {pid} under 50 parallel wrong passwords: RSS {} MiB before, {} MiB after, peak {} MiB; \
         {verified}; 401: {}, 429: {}",
        rss_before / 1024,
        rss_after / 1024,
        peak / 1024,
        statuses.iter().filter(|s| **s == 401).count(),
        statuses.iter().filter(|s| **s == 429).count()
    );
    assert!(statuses.iter().all(|s| *s == 401 || *s == 429), "{statuses:?}");
    assert!(peak > 0 && peak < rss_before + 160 * 1024, "peak {peak} KiB from {rss_before} KiB: bounded");
    let _ = std::fs::remove_dir_all(&dir);
}
