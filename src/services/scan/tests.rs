use super::*;

#[test]
fn parses_unix_and_tcp_addresses() {
    assert_eq!(
        ScannerAddr::parse("unix:/run/clamav/clamd.ctl"),
        Ok(ScannerAddr::Unix("/run/clamav/clamd.ctl".into()))
    );
    assert_eq!(ScannerAddr::parse("tcp:127.0.0.1:3310"), Ok(ScannerAddr::Tcp("127.0.0.1:3310".into())));
    assert_eq!(
        ScannerAddr::parse("tcp:clamav.internal:3310"),
        Ok(ScannerAddr::Tcp("clamav.internal:3310".into()))
    );
    assert_eq!(ScannerAddr::parse("tcp:[::1]:3310"), Ok(ScannerAddr::Tcp("[::1]:3310".into())));
}

#[test]
fn rejects_other_addresses() {
    for bad in [
        "",
        "/run/clamav/clamd.ctl",
        "unix:",
        "unix:relative.sock",
        "tcp:",
        "tcp:host",
        "tcp::3310",
        "tcp:host:",
        "tcp:host:0",
        "tcp:host:65536",
        "tcp:host:port",
        "http://host:3310",
        "udp:host:3310",
    ] {
        let err = ScannerAddr::parse(bad).unwrap_err();
        assert!(err.contains("unix:/") && err.contains("tcp:host:port"), "{bad:?}: {err}");
    }
}

#[test]
fn reads_verdicts() {
    assert_eq!(verdict("stream: OK").unwrap(), Verdict::Clean);
    assert_eq!(
        verdict("stream: Eicar-Test-Signature FOUND").unwrap(),
        Verdict::Malware("Eicar-Test-Signature".into())
    );
    assert_eq!(
        verdict("stream: Win.Test.EICAR_HDB-1 FOUND").unwrap(),
        Verdict::Malware("Win.Test.EICAR_HDB-1".into())
    );
    let long = format!("stream: {} FOUND", "é".repeat(500));
    assert_eq!(verdict(&long).unwrap(), Verdict::Malware("é".repeat(200)));
}

/// An error reply is no verdict on this file, never "scanner down": clamd answered.
#[test]
fn other_replies_say_the_file_could_not_be_scanned() {
    for reply in [
        "INSTREAM size limit exceeded. ERROR",
        "stream: lstat() failed. ERROR",
        "stream: FOUND",
        "stream:  FOUND",
        "stream: ",
        "PONG",
        "",
        "UNKNOWN COMMAND",
    ] {
        assert!(matches!(verdict(reply), Err(ScanError::Unscannable(_))), "{reply:?}");
    }
    let Err(ScanError::Unscannable(text)) = verdict("INSTREAM size limit exceeded. ERROR") else { panic!() };
    assert_eq!(text, "INSTREAM size limit exceeded. ERROR");
}
