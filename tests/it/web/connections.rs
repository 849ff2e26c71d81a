//! Deadlines and caps on connections: a slow body is cut with 408, an oversized
//! `Content-Length` is refused before reading, idle connections do not crowd out real ones.

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{inquiry, new_key, spawn_app_with, Backend, TestApp};

fn head(app: &TestApp, content_length: usize) -> String {
    format!(
        "POST /api/forms/contact/submissions HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Idempotency-Key: {}\r\nContent-Length: {content_length}\r\n\r\n",
        app.address.trim_start_matches("http://"),
        new_key()
    )
}

/// Reads what the server sends until it closes the connection or `limit` passes.
async fn read_answer(stream: &mut tokio::net::tcp::OwnedReadHalf, limit: Duration) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_)
                if got.windows(4).any(|w| w == b"\r\n\r\n")
                    && (got.ends_with(b"}") || got.ends_with(b".")) =>
            {
                break
            }
            Err(_) => {}
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_sent_one_byte_a_second_is_cut_at_the_deadline_with_408() {
    let app = spawn_app_with(Backend::Sqlite, |c| c.server.body_timeout_ms = 2_000).await;
    let stream = TcpStream::connect(app.address.trim_start_matches("http://")).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let body = serde_json::to_vec(&inquiry("Slowly, one byte at a time")).unwrap();
    write.write_all(head(&app, body.len()).as_bytes()).await.unwrap();
    let started = Instant::now();
    // One byte per second: the whole body would take over a minute.
    let trickle = tokio::spawn(async move {
        for byte in body {
            if write.write_all(&[byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    let answer = read_answer(&mut read, Duration::from_secs(30)).await;
    let waited = started.elapsed();
    trickle.abort();
    println!("slow body answered after {waited:?}: {}", answer.lines().next().unwrap_or(""));
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(waited < Duration::from_secs(10), "cut at the 2 s deadline, not after the body: {waited:?}");
    let problem: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(problem["type"].as_str().unwrap().rsplit('/').next(), Some("request-timeout"));
    assert_eq!(app.stats().await.submissions, 0, "nothing stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_sign_in_form_is_cut_at_the_deadline_too() {
    let app = spawn_app_with(Backend::Sqlite, |c| c.server.body_timeout_ms = 1_000).await;
    let stream = TcpStream::connect(app.address.trim_start_matches("http://")).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let body = b"csrf=x&email=boss%40example.com&password=trickled".to_vec();
    let head = format!(
        "POST /admin/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    write.write_all(head.as_bytes()).await.unwrap();
    let trickle = tokio::spawn(async move {
        for byte in body {
            if write.write_all(&[byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    let answer = read_answer(&mut read, Duration::from_secs(20)).await;
    trickle.abort();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_length_over_the_limit_is_413_before_any_body_is_sent() {
    let app = spawn_app_with(Backend::Sqlite, |_| {}).await;
    let stream = TcpStream::connect(app.address.trim_start_matches("http://")).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    write.write_all(head(&app, 50_000_000).as_bytes()).await.unwrap();
    let answer = read_answer(&mut read, Duration::from_secs(20)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("payload-too-large"), "{answer}");
}

/// The soft limit on open files raised to the hard one (each idle connection costs this
/// process two descriptors: the client's and the server's).
fn raise_fd_limit(wanted: u64) {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < wanted {
            lim.rlim_cur = lim.rlim_max.min(wanted.max(lim.rlim_cur));
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_idle_connections_do_not_stop_a_submission() {
    raise_fd_limit(8_192);
    // A long head deadline, so the idle connections stay open for the whole test.
    let app = spawn_app_with(Backend::Sqlite, |c| c.server.request_head_timeout_ms = 120_000).await;
    let addr = app.address.trim_start_matches("http://").to_string();
    let mut idle = Vec::with_capacity(2_000);
    for i in 0..2_000 {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        if i % 2 == 0 {
            // Half of them start a request head and never finish it.
            s.write_all(b"POST /api/forms/contact/submissions HTTP/1.1\r\nHost: x\r\n").await.unwrap();
        }
        idle.push(s);
    }
    let resp = app.submit(&new_key(), &inquiry("Sent while 2,000 connections sit idle")).await;
    assert_eq!(resp.status(), 201);
    assert_eq!(app.client.get(app.url("/healthz")).send().await.unwrap().status(), 200);
    // The idle ones are still open (the submission was not served by closing them).
    let mut probe = [0u8; 1];
    let still_open = idle
        .iter()
        .filter(|s| matches!(s.try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock))
        .count();
    println!("idle connections still open after the submission: {still_open} of {}", idle.len());
    assert!(still_open >= 1_900, "{still_open}");
    assert_eq!(app.stats().await.submissions, 1);
}

/// A connection reads at most 16 KiB ahead of its handler (`read_credit`), which is also the
/// largest request head it reads: a head of 12 KiB is served, one of 20 KiB is answered 408
/// at the head deadline instead of being read on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_over_the_read_window_is_answered_408_at_its_deadline() {
    let app = spawn_app_with(Backend::Sqlite, |c| c.server.request_head_timeout_ms = 1_000).await;
    let body = serde_json::to_vec(&inquiry("A head with a large header")).unwrap();
    let post = |padding: usize| {
        let head = head(&app, body.len());
        let (line, rest) = head.split_once("\r\n").unwrap();
        let mut request = format!("{line}\r\nX-Padding: {}\r\n{rest}", "p".repeat(padding)).into_bytes();
        request.extend_from_slice(&body);
        let address = app.address.trim_start_matches("http://").to_string();
        async move {
            let (mut read, mut write) = TcpStream::connect(address).await.unwrap().into_split();
            write.write_all(&request).await.unwrap();
            let started = Instant::now();
            (read_answer(&mut read, Duration::from_secs(10)).await, started.elapsed())
        }
    };
    let (answer, _) = post(12 * 1024).await;
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    let (answer, waited) = post(20 * 1024).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(waited < Duration::from_secs(5), "answered at the 1 s head deadline: {waited:?}");
    assert_eq!(app.stats().await.submissions, 1, "only the first was stored");
}

/// Reads one response off a kept-alive connection: its head, then its `Content-Length` body.
async fn read_response(stream: &mut tokio::net::tcp::OwnedReadHalf) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse::<usize>().unwrap());
            if got.len() >= end + 4 + length {
                return String::from_utf8_lossy(&got).into_owned();
            }
        }
        match tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            other => panic!("no whole response ({other:?}): {}", String::from_utf8_lossy(&got)),
        }
    }
}

/// Request after request on one kept-alive connection, each with a 12 KiB head (most of the
/// read window): every post and every body-less request is read and answered, so the window
/// is renewed past each request, and not only once per connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_with_large_heads_follow_each_other_on_one_connection() {
    let app = spawn_app_with(Backend::Sqlite, |c| c.server.request_head_timeout_ms = 1_000).await;
    let host = app.address.trim_start_matches("http://").to_string();
    let padding = "p".repeat(12 * 1024);
    let (mut read, mut write) = TcpStream::connect(&host).await.unwrap().into_split();
    for round in 0..6 {
        for _ in 0..2 {
            let body = serde_json::to_vec(&inquiry(&format!("Post {round} on one connection"))).unwrap();
            let head = head(&app, body.len());
            let (line, rest) = head.split_once("\r\n").unwrap();
            let mut request = format!("{line}\r\nX-Padding: {padding}\r\n{rest}").into_bytes();
            request.extend_from_slice(&body);
            write.write_all(&request).await.unwrap();
            let answer = read_response(&mut read).await;
            assert!(answer.starts_with("HTTP/1.1 201"), "post in round {round}: {answer}");
        }
        let get = format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\nX-Padding: {padding}\r\n\r\n");
        write.write_all(get.as_bytes()).await.unwrap();
        let answer = read_response(&mut read).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "get in round {round}: {answer}");
    }
    assert_eq!(app.stats().await.submissions, 12);
}
