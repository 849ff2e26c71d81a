//! `services::scan` against a real clamd of each test's own (support::clamd): EICAR is
//! found, clean files pass (a large one in many chunks), a daemon that is down is
//! `Unavailable` at once; an over-long stream, or a daemon that takes the file but says
//! nothing by the deadline, leaves that file `Unscannable` (never "scanner down").

use std::time::{Duration, Instant};

use onceform::services::scan::{ScanError, Scanner, ScannerAddr, Verdict};

use crate::support::clamd::{self, Clamd, EICAR_SIGNATURE};

fn scanner(addr: &str) -> Scanner {
    Scanner::new(ScannerAddr::parse(addr).unwrap(), Duration::from_secs(30))
}

#[tokio::test]
async fn eicar_is_malware_and_a_pdf_is_clean() {
    let clamd = Clamd::start();
    eprintln!("clamd answered PING after {:?}", clamd.startup);
    let scanner = scanner(&clamd.addr());
    scanner.ping().await.unwrap();

    let eicar = clamd.file("eicar.com", &clamd::eicar());
    assert_eq!(scanner.scan_file(&eicar).await.unwrap(), Verdict::Malware(EICAR_SIGNATURE.into()));

    let pdf =
        b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n";
    let pdf = clamd.file("invoice.pdf", pdf);
    assert_eq!(scanner.scan_file(&pdf).await.unwrap(), Verdict::Clean);

    // EICAR inside a larger file is no match: the signature is the whole file's hash.
    let mut padded = clamd::eicar();
    padded.extend_from_slice(&[b'\n'; 1000]);
    assert_eq!(scanner.scan_file(&clamd.file("padded.txt", &padded)).await.unwrap(), Verdict::Clean);
    assert_eq!(scanner.scan_file(&clamd.file("empty", b"")).await.unwrap(), Verdict::Clean);
}

#[tokio::test]
async fn a_five_mebibyte_file_is_streamed_in_chunks_and_clean() {
    let bytes: Vec<u8> =
        (0..5 * 1024 * 1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    let mut altered = bytes.clone();
    altered[4 * 1024 * 1024 + 17] ^= 1;
    // clamd knows the altered file: were a chunk lost or mangled, it would not find it.
    let clamd = Clamd::start_with("", &[("Five-MiB-Test-File", &altered)]);
    let scanner = scanner(&clamd.addr());
    assert_eq!(scanner.scan_file(&clamd.file("big.bin", &bytes)).await.unwrap(), Verdict::Clean);
    assert_eq!(
        scanner.scan_file(&clamd.file("altered.bin", &altered)).await.unwrap(),
        Verdict::Malware("Five-MiB-Test-File.UNOFFICIAL".into())
    );
}

#[tokio::test]
async fn a_stream_over_clamds_limit_is_a_file_it_could_not_scan() {
    let clamd = Clamd::start_with("StreamMaxLength 1M", &[]);
    let path = clamd.file("big.bin", &vec![b'a'; 3 * 1024 * 1024]);
    match scanner(&clamd.addr()).scan_file(&path).await {
        Err(ScanError::Unscannable(reply)) => assert_eq!(reply, "INSTREAM size limit exceeded. ERROR"),
        other => panic!("{other:?}"),
    }
    // clamd itself is up.
    scanner(&clamd.addr()).ping().await.unwrap();
}

#[tokio::test]
async fn clamd_down_is_unavailable_at_once() {
    let addr = clamd::down_addr();
    let scanner = scanner(&addr);
    let path = std::env::temp_dir().join(format!("onceform-scan-{}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, b"%PDF-1.4\n").unwrap();
    let started = Instant::now();
    let result = scanner.scan_file(&path).await;
    let _ = std::fs::remove_file(&path);
    assert!(matches!(result, Err(ScanError::Unavailable(_))), "{result:?}");
    assert!(matches!(scanner.ping().await, Err(ScanError::Unavailable(_))));
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
}

/// A daemon that takes the connection and the file but gives no verdict by the deadline:
/// this file could not be scanned (a file that hangs clamd is never "scanner down").
#[tokio::test]
async fn a_silent_daemon_leaves_the_file_unscannable_after_the_deadline() {
    let dir = std::env::temp_dir().join(format!("onceform-silent-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("clamd.sock");
    // Accepts, reads everything, never answers.
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut conn, &mut tokio::io::sink()).await;
                std::future::pending::<()>().await
            });
        }
    });
    let path = dir.join("file.txt");
    std::fs::write(&path, b"hello").unwrap();
    let scanner = Scanner::new(ScannerAddr::Unix(socket), Duration::from_millis(300));
    let started = Instant::now();
    let result = scanner.scan_file(&path).await;
    let elapsed = started.elapsed();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(matches!(result, Err(ScanError::Unscannable(_))), "{result:?}");
    assert!(elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(2), "{elapsed:?}");
}

#[tokio::test]
async fn clamd_over_tcp() {
    assert_eq!(ScannerAddr::parse("tcp:127.0.0.1:3310"), Ok(ScannerAddr::Tcp("127.0.0.1:3310".into())));
    assert_eq!(ScannerAddr::parse("tcp:clamav:3310"), Ok(ScannerAddr::Tcp("clamav:3310".into())));
    assert!(ScannerAddr::parse("tcp:clamav").unwrap_err().contains("host:port"));
    assert!(ScannerAddr::parse("clamav:3310").is_err());

    // A free port, then clamd listening on it as well as on its socket.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let clamd = Clamd::start_with(&format!("TCPSocket {port}\nTCPAddr 127.0.0.1"), &[]);
    let scanner = scanner(&format!("tcp:127.0.0.1:{port}"));
    scanner.ping().await.unwrap();
    let eicar = clamd.file("eicar.com", &clamd::eicar());
    assert_eq!(scanner.scan_file(&eicar).await.unwrap(), Verdict::Malware(EICAR_SIGNATURE.into()));
    assert_eq!(scanner.scan_file(&clamd.file("a.txt", b"hello")).await.unwrap(), Verdict::Clean);
}
