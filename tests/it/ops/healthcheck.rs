//! `onceform healthcheck`: exit 0 when the running server answers 200, exit 1 with one line
//! naming the address otherwise; a server bound to every address is asked on loopback.

use std::process::{Command, Output};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{listen, own_dir, spawn_app, Backend};

fn healthcheck(args: &[&str], bind: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_onceform"));
    cmd.arg("healthcheck")
        .args(args)
        .current_dir(own_dir())
        .env_remove("ONCEFORM_CONFIG")
        .env("ONCEFORM_BIND", bind)
        .env("RUST_LOG", "off");
    cmd.output().unwrap()
}

fn port(address: &str) -> u16 {
    address.rsplit(':').next().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_server_is_healthy_and_ready() {
    let app = spawn_app(Backend::Sqlite).await;
    let port = port(&app.address);
    let run = |args: Vec<String>, bind: String| {
        tokio::task::spawn_blocking(move || {
            healthcheck(&args.iter().map(String::as_str).collect::<Vec<_>>(), &bind)
        })
    };
    for (args, bind) in [
        (vec![], format!("0.0.0.0:{port}")),
        (vec!["--ready".to_string()], format!("0.0.0.0:{port}")),
        (vec!["--url".to_string(), app.address.clone()], "127.0.0.1:1".to_string()),
    ] {
        let out = run(args.clone(), bind).await.unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains("200"), "{said}");
    }
}

/// A 503 from /readyz (the database not writable) and nothing listening are failures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unready_or_absent_server_fails_with_one_line() {
    let unready = listen((), |mut stream, ()| async move {
        let mut buf = [0; 1024];
        let _ = stream.read(&mut buf).await;
        let _ = stream.write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n").await;
    })
    .await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let out = tokio::task::spawn_blocking(move || {
        (
            healthcheck(&["--ready", "--url", &unready], "127.0.0.1:1"),
            healthcheck(&[], &format!("127.0.0.1:{closed_port}")),
            healthcheck(&[], "127.0.0.1:0"),
        )
    })
    .await
    .unwrap();
    for (out, says) in [(&out.0, "/readyz: HTTP/1.1 503"), (&out.1, "/healthz: "), (&out.2, "--url")] {
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says) && err.lines().count() == 1, "{err}");
    }
}
