//! The captcha findings of the security review (issue 21), each named for its attack: one
//! ALTCHA solution re-encoded to buy more submissions, a digit moved from the number into
//! the salt to move the expiry, and a flood of answers filling the used-answer memory.
//! Solutions come from ALTCHA's reference library (altcha-lib from npm, installed by
//! `./test.sh` into `target/test-tools/npm`), run by Node.js.

use std::path::PathBuf;
use std::process::Command;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use onceform::config::{CaptchaConfig, Config};
use onceform::services::spam::altcha::Challenge;
use serde_json::{json, Value};

use crate::on_both_backends;
use crate::security::spam::verdict;
use crate::support::captcha::FakeCaptcha;
use crate::support::{inquiry, new_key, spawn_app_with, Backend, TestApp};

on_both_backends!(
    one_reference_solution_is_accepted_once_and_refused_in_every_re_encoding,
    a_digit_moved_into_the_salt_neither_extends_nor_revives_a_challenge,
);

const SECRET_VAR: &str = "ONCEFORM_TEST_CAPTCHA_SECRET";

fn altcha(max_number: u64, expires_seconds: u64) -> impl FnOnce(&mut Config) {
    move |c| {
        let text =
            format!("provider = 'altcha'\nmax_number = {max_number}\nexpires_seconds = {expires_seconds}");
        c.forms.get_mut("contact").unwrap().captcha = Some(toml::from_str::<CaptchaConfig>(&text).unwrap());
    }
}

async fn challenge(app: &TestApp, client: Option<&str>) -> reqwest::Response {
    let mut req = app.client.get(app.url("/api/forms/contact/altcha"));
    if let Some(ip) = client {
        req = req.header("X-Forwarded-For", ip);
    }
    req.send().await.unwrap()
}

/// The payload the ALTCHA widget posts, with the number found by altcha-lib's
/// `solveChallenge` (the library's own `took` member included).
fn reference_solution(c: &Challenge) -> String {
    let lib = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/test-tools/npm/node_modules/altcha-lib/dist/index.js");
    assert!(lib.exists(), "altcha-lib is missing: run ./test.sh, which installs it ({})", lib.display());
    let script = format!(
        "import {{ solveChallenge }} from {lib:?};
         const c = JSON.parse(process.argv[1]);
         const r = await solveChallenge(c.challenge, c.salt, c.algorithm, c.maxnumber).promise;
         const payload = {{ algorithm: c.algorithm, challenge: c.challenge, number: r.number,
                           salt: c.salt, signature: c.signature, took: r.took }};
         process.stdout.write(Buffer.from(JSON.stringify(payload)).toString('base64'));",
        lib = format!("file://{}", lib.display())
    );
    let out = Command::new("node")
        .args(["--input-type=module", "-e", &script, &serde_json::to_string(c).unwrap()])
        .output()
        .expect("node runs altcha-lib");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn decoded(answer: &str) -> Value {
    serde_json::from_slice(&STANDARD.decode(answer.trim()).unwrap()).unwrap()
}

fn encoded(v: &Value) -> String {
    STANDARD.encode(v.to_string())
}

fn with_answer(field: &str, answer: &str) -> Value {
    let mut body = inquiry("Quote for 40 units");
    body[field] = json!(answer);
    body
}

async fn one_reference_solution_is_accepted_once_and_refused_in_every_re_encoding(backend: Backend) {
    let app = spawn_app_with(backend, altcha(5_000, 600)).await;
    let c: Challenge = challenge(&app, None).await.json().await.unwrap();
    let solution = reference_solution(&c);

    let first = new_key();
    assert_eq!(app.submit(&first, &with_answer("altcha", &solution)).await.status(), 201);
    assert_eq!(verdict(&app, &first).await, (false, None, 3), "accepted, with its effects");
    assert_eq!(
        app.submit(&first, &with_answer("altcha", &solution)).await.status(),
        200,
        "its retry replays"
    );

    let mut extra = decoded(&solution);
    extra["spam"] = json!("ham");
    let mut reordered = serde_json::Map::new();
    for k in ["signature", "salt", "number", "challenge", "algorithm"] {
        reordered.insert(k.into(), decoded(&solution)[k].clone());
    }
    let pretty = STANDARD.encode(serde_json::to_string_pretty(&decoded(&solution)).unwrap());
    let variants = [
        solution.clone(),
        format!("{solution} "),
        format!("{solution}\n"),
        encoded(&Value::Object(reordered)),
        pretty,
        encoded(&extra),
    ];
    for variant in variants {
        let key = new_key();
        assert_eq!(app.submit(&key, &with_answer("altcha", &variant)).await.status(), 201);
        assert_eq!(verdict(&app, &key).await, (true, Some("captcha-replayed".into()), 0), "{variant:?}");
    }
    assert_eq!(app.stats().await.effects_total(), 3, "one submission's effects, no more");
}

async fn a_digit_moved_into_the_salt_neither_extends_nor_revives_a_challenge(backend: Backend) {
    let app = spawn_app_with(backend, altcha(5_000, 2)).await;
    // Solved with a number of at least two digits, so that one can be moved.
    let (c, solution) = loop {
        let c: Challenge = challenge(&app, None).await.json().await.unwrap();
        let s = reference_solution(&c);
        if decoded(&s)["number"].as_u64().unwrap() >= 10 {
            break (c, s);
        }
    };
    let mut moved = decoded(&solution);
    let number = moved["number"].as_u64().unwrap().to_string();
    moved["salt"] = json!(format!("{}{}", c.salt, &number[..1]));
    moved["number"] = json!(number[1..].parse::<u64>().unwrap());
    let moved = encoded(&moved);

    let key = new_key();
    assert_eq!(app.submit(&key, &with_answer("altcha", &moved)).await.status(), 201);
    assert_eq!(
        verdict(&app, &key).await,
        (true, Some("captcha-invalid".into()), 0),
        "an unexpired challenge"
    );

    tokio::time::sleep(std::time::Duration::from_millis(3_100)).await;
    let (late, revived) = (new_key(), new_key());
    assert_eq!(app.submit(&late, &with_answer("altcha", &solution)).await.status(), 201);
    assert_eq!(verdict(&app, &late).await, (true, Some("captcha-invalid".into()), 0), "expired");
    assert_eq!(app.submit(&revived, &with_answer("altcha", &moved)).await.status(), 201);
    assert_eq!(verdict(&app, &revived).await, (true, Some("captcha-invalid".into()), 0), "not revived");
}

/// One client (behind a trusted proxy) solves challenges until its share of the memory is
/// full: it is then refused new challenges, and its further answers are held as
/// unverified, while another client is served as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_flooding_altcha_solutions_fills_only_its_own_share() {
    let app = spawn_app_with(Backend::Sqlite, |c| {
        altcha(20, 600)(c);
        c.server.trusted_proxies = onceform::config::parsed::trusted_proxies(&["127.0.0.1".into()]).unwrap();
    })
    .await;
    let submit_from = |ip: &'static str, answer: String| {
        let app = &app;
        async move {
            let key = new_key();
            let resp = app
                .client
                .post(app.url("/api/forms/contact/submissions"))
                .header("Idempotency-Key", &key)
                .header("X-Forwarded-For", ip)
                .json(&with_answer("altcha", &answer))
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 201);
            verdict(app, &key).await
        }
    };
    let flooder = "198.51.100.7";
    let mut answers = Vec::new();
    for _ in 0..65 {
        let c: Challenge = challenge(&app, Some(flooder)).await.json().await.unwrap();
        answers.push(onceform::services::spam::altcha::solve(&c).unwrap());
    }
    let last = answers.pop().unwrap();
    for (i, answer) in answers.into_iter().enumerate() {
        assert_eq!(submit_from(flooder, answer).await, (false, None, 3), "solution {i}");
    }
    let held = submit_from(flooder, last).await;
    assert_eq!(held, (true, Some("captcha-unverified".into()), 0), "held for review, not lost");
    let refused = challenge(&app, Some(flooder)).await;
    assert_eq!(refused.status(), 429, "no new challenge while its share is full");
    assert!(refused.headers()["retry-after"].to_str().unwrap().parse::<u64>().unwrap() > 500);

    let other: Challenge = challenge(&app, Some("203.0.113.9")).await.json().await.unwrap();
    let answer = onceform::services::spam::altcha::solve(&other).unwrap();
    assert_eq!(submit_from("203.0.113.9", answer).await, (false, None, 3), "another client is served");
}

/// Refused Turnstile answers cost no memory: the same junk posted again is sent to the
/// provider again (not taken for "already used" here), and a client that posts junk (80 refused tokens, more than a
/// client's share) still gets its real answer accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_turnstile_answers_are_not_remembered() {
    let fake = FakeCaptcha::start().await;
    std::env::set_var(SECRET_VAR, "s3cret-key");
    let url = fake.url.clone();
    let app = spawn_app_with(Backend::Sqlite, move |c| {
        let text = format!(
            "provider = 'turnstile'\nsecret_env = '{SECRET_VAR}'\nverify_url = '{url}'\ntimeout_ms = 2000"
        );
        c.forms.get_mut("contact").unwrap().captcha = Some(toml::from_str::<CaptchaConfig>(&text).unwrap());
    })
    .await;
    for _ in 0..2 {
        let key = new_key();
        assert_eq!(app.submit(&key, &with_answer("cf-turnstile-response", "junk")).await.status(), 201);
        assert!(verdict(&app, &key).await.0, "stored as spam");
    }
    assert_eq!(fake.calls().len(), 2, "the provider was asked again: the refused answer was not remembered");
    for i in 0..80 {
        let key = new_key();
        let junk = format!("junk-{i}");
        assert_eq!(app.submit(&key, &with_answer("cf-turnstile-response", &junk)).await.status(), 201);
        assert_eq!(verdict(&app, &key).await.1.as_deref(), Some("captcha-invalid"));
    }
    let key = new_key();
    assert_eq!(
        app.submit(&key, &with_answer("cf-turnstile-response", "good-real-token")).await.status(),
        201
    );
    assert_eq!(verdict(&app, &key).await, (false, None, 3));
}
