//! Property tests over the submit body parsers with arbitrary input: they answer `Ok` or a
//! `malformed-body` problem, never panic. Bounded case counts keep them in the normal test run.

use actix_web::http::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use actix_web::web::Bytes;
use proptest::prelude::*;

use super::body::{parse_json, parse_parts, parse_urlencoded};
use super::problem::ProblemKind;

/// JSON-looking text: objects with awkward keys and values, nesting, escapes and breakage.
fn jsonish() -> impl Strategy<Value = String> {
    let scalar = prop_oneof![
        any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
        Just("null".to_string()),
        Just("1e999".to_string()),
        Just("-0".to_string()),
        Just("\"\\ud800\"".to_string()),
        Just("[]".to_string()),
        Just("{}".to_string()),
        "[ -~]{0,12}",
    ];
    let member = (prop_oneof![any::<String>(), Just("operation_id".to_string())], scalar)
        .prop_map(|(k, v)| format!("{}:{v}", serde_json::to_string(&k).unwrap_or_default()));
    (proptest::collection::vec(member, 0..8), any::<bool>())
        .prop_map(|(members, close)| format!("{{{}{}", members.join(","), if close { "}" } else { "" }))
}

fn multipart_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("multipart/form-data; boundary=XyZ"));
    h
}

/// Multipart-looking bodies: parts with arbitrary names, values and header lines.
fn multipartish() -> impl Strategy<Value = Vec<u8>> {
    let part = (any::<String>(), proptest::collection::vec(any::<u8>(), 0..40), "[ -~]{0,30}").prop_map(
        |(name, value, extra)| {
            let mut p =
                format!("--XyZ\r\nContent-Disposition: form-data; name=\"{name}\"\r\n{extra}\r\n\r\n")
                    .into_bytes();
            p.extend_from_slice(&value);
            p.extend_from_slice(b"\r\n");
            p
        },
    );
    (proptest::collection::vec(part, 0..5), any::<bool>()).prop_map(|(parts, end)| {
        let mut body: Vec<u8> = parts.concat();
        if end {
            body.extend_from_slice(b"--XyZ--\r\n");
        }
        body
    })
}

fn contact() -> crate::config::FormConfig {
    crate::config::Config::builtin().unwrap().forms["contact"].clone()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().build().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn json_from_any_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        if let Err(p) = parse_json(&bytes, &contact()) {
            prop_assert_eq!(p.kind, ProblemKind::MalformedBody);
        }
    }

    #[test]
    fn json_like_text_never_panics(text in jsonish()) {
        match parse_json(text.as_bytes(), &contact()) {
            Ok((_, fields)) => prop_assert!(fields.iter().all(|(n, _)| n != "operation_id")),
            Err(p) => prop_assert_eq!(p.kind, ProblemKind::MalformedBody),
        }
    }

    #[test]
    fn urlencoded_from_any_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        if let Err(p) = parse_urlencoded(&bytes) {
            prop_assert_eq!(p.kind, ProblemKind::MalformedBody);
        }
    }

    #[test]
    fn urlencoded_pairs_round_trip(pairs in proptest::collection::vec((any::<String>(), any::<String>()), 0..6)) {
        let encoded = serde_urlencoded::to_string(&pairs).unwrap();
        prop_assert_eq!(parse_urlencoded(encoded.as_bytes()).unwrap(), pairs);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn multipart_from_any_body_never_panics(body in multipartish()) {
        let parsed = runtime().block_on(parse_parts(&multipart_headers(), Bytes::from(body)));
        if let Err(p) = parsed {
            prop_assert_eq!(p.kind, ProblemKind::MalformedBody);
        }
    }

    #[test]
    fn multipart_from_any_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let parsed = runtime().block_on(parse_parts(&multipart_headers(), Bytes::from(bytes)));
        if let Err(p) = parsed {
            prop_assert_eq!(p.kind, ProblemKind::MalformedBody);
        }
    }
}

/// Parses `body` on its own thread; `None` if it has not answered within a few seconds.
fn parse_within_deadline(body: &'static [u8]) -> Option<Result<usize, ProblemKind>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let parsed = runtime().block_on(parse_parts(&multipart_headers(), Bytes::from_static(body)));
        let _ = tx.send(parsed.map(|f| f.len()).map_err(|p| p.kind));
    });
    rx.recv_timeout(std::time::Duration::from_secs(5)).ok()
}

#[test]
fn a_truncated_multipart_body_is_refused_not_awaited_for_ever() {
    let cases: [&'static [u8]; 3] = [
        b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue",
        b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue\r\n",
        b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n",
    ];
    for body in cases {
        let answer = parse_within_deadline(body);
        assert_eq!(answer, Some(Err(ProblemKind::MalformedBody)), "{}", String::from_utf8_lossy(body));
    }
    let whole = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue\r\n--XyZ--\r\n";
    assert_eq!(parse_within_deadline(whole), Some(Ok(1)));
}
