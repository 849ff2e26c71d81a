//! Upload turns go to those who send (issue 45, "slow clients starve the upload slots"):
//! clients trickling a byte a second lose their turn after the grace period, and a real
//! upload waiting behind them gets one long before its body deadline.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::files::attach::with_quote;
use crate::support::files::{blobs, pdf, sha256};
use crate::support::{spawn_app_with, Backend};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_trickling_a_byte_a_second_do_not_keep_the_upload_turns() {
    let app = spawn_app_with(Backend::Sqlite, |c| {
        with_quote(c);
        c.server.max_concurrent_uploads = 2;
        c.server.body_timeout_ms = 10_000;
    })
    .await;
    let addr = app.address.trim_start_matches("http://").to_string();
    let mut tricklers = Vec::new();
    for _ in 0..2 {
        let addr = addr.clone();
        tricklers.push(tokio::spawn(async move {
            let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
            let head = format!(
                "POST /api/forms/quote/uploads HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 90000\r\n\r\n%PDF-1.4\n"
            );
            s.write_all(head.as_bytes()).await.unwrap();
            // A byte a second until the server answers (or 12 s: past the body deadline).
            let mut answer = vec![0u8; 1024];
            for _ in 0..12 {
                tokio::select! {
                    n = s.read(&mut answer) => return String::from_utf8_lossy(&answer[..n.unwrap_or(0)]).into_owned(),
                    () = tokio::time::sleep(Duration::from_secs(1)) => { let _ = s.write_all(b"x").await; }
                }
            }
            String::from("no answer")
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await; // they hold both turns
    let real = pdf(&"a real drawing ".repeat(5_000));
    let started = Instant::now();
    let resp = app
        .client
        .post(app.url("/api/forms/quote/uploads"))
        .header("Onceform-File-Name", "drawing.pdf")
        .body(real.clone())
        .send()
        .await
        .unwrap();
    let waited = started.elapsed();
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    assert!(waited < Duration::from_secs(8), "the real upload got a turn after {waited:?}");
    for t in tricklers {
        let answer = t.await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 408"), "a trickler lost its turn: {answer}");
    }
    assert_eq!(blobs(&app.config.server.files_dir), [sha256(&real)]);
}
