//! CSV as spreadsheets write it: the bytes of a file decoded (a UTF-8 or UTF-16 BOM decides;
//! without one UTF-8, or the encoding named with `--encoding`, e.g. Big5 from Excel on
//! Traditional Chinese Windows), then read with the `csv` crate (quoted fields with `""` and
//! line breaks inside, CRLF or LF, ragged rows kept for the caller to judge).

use encoding_rs::{Encoding, BIG5, GB18030, UTF_8};

/// The encodings a file without a BOM may be declared in (`--encoding`).
pub fn encoding_named(name: &str) -> Result<&'static Encoding, String> {
    match name.trim().to_ascii_lowercase().as_str() {
        "utf-8" | "utf8" => Ok(UTF_8),
        "big5" | "cp950" => Ok(BIG5),
        "gb18030" | "gbk" | "cp936" => Ok(GB18030),
        other => Err(format!("unknown encoding `{other}` (utf-8, big5, gb18030)")),
    }
}

/// The text of `bytes`: a BOM (UTF-8, UTF-16 LE/BE) wins; else `declared`, else UTF-8.
/// Bytes that are not valid in the encoding are an error, never replaced.
pub fn decode(bytes: &[u8], declared: Option<&'static Encoding>) -> Result<String, String> {
    let (encoding, body) = match Encoding::for_bom(bytes) {
        Some((encoding, bom)) => (encoding, &bytes[bom..]),
        None => (declared.unwrap_or(UTF_8), bytes),
    };
    match encoding.decode_without_bom_handling_and_without_replacement(body) {
        Some(text) => Ok(text.into_owned()),
        None if declared.is_none() && encoding == UTF_8 => {
            Err("the file is not UTF-8 text; a CSV saved by Excel on Chinese Windows needs --encoding big5 \
             (Traditional) or --encoding gb18030 (Simplified)"
                .into())
        }
        None => Err(format!("the file is not valid {} text", encoding.name())),
    }
}

/// The records of `text` as (line number, fields); blank lines are skipped.
pub fn records(text: &str) -> Result<Vec<(usize, Vec<String>)>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader =
        ::csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
    let mut out = Vec::new();
    let mut record = ::csv::StringRecord::new();
    // The line a record starts on, counted from its byte offset (past the line ends before it).
    let line_at = |byte: u64| {
        let at = usize::try_from(byte).unwrap_or(text.len()).min(text.len());
        let start = at + text[at..].len() - text[at..].trim_start_matches(['\r', '\n']).len();
        1 + text.as_bytes()[..start].iter().filter(|&&b| b == b'\n').count()
    };
    loop {
        let at = reader.position().byte();
        match reader.read_record(&mut record) {
            Ok(false) => return Ok(out),
            Ok(true) => {
                let line = line_at(record.position().map_or(at, |p| p.byte()));
                out.push((line, record.iter().map(String::from).collect()));
            }
            Err(e) => return Err(format!("line {}: {e}", line_at(at))),
        }
    }
}

/// One CSV document: rows written with CRLF, fields quoted where needed; with `bom`, a UTF-8
/// BOM first, so Excel opens it as UTF-8 instead of the machine's code page.
pub fn document<I, R, S>(rows: I, bom: bool) -> Result<String, String>
where
    I: IntoIterator<Item = R>,
    R: IntoIterator<Item = S>,
    S: AsRef<[u8]>,
{
    let mut writer = ::csv::WriterBuilder::new()
        .terminator(::csv::Terminator::CRLF)
        .flexible(true)
        .from_writer(if bom { "\u{feff}".as_bytes().to_vec() } else { Vec::new() });
    for row in rows {
        writer.write_record(row).map_err(|e| e.to_string())?;
    }
    let bytes = writer.into_inner().map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_quotes_line_breaks_crlf_and_ragged_rows() {
        let r = records("a,b\r\n\"x, \"\"y\"\"\",\"two\nlines\"\n\n3,4,5\n6").unwrap();
        assert_eq!(r[0], (1, vec!["a".to_string(), "b".into()]));
        assert_eq!(r[1], (2, vec!["x, \"y\"".to_string(), "two\nlines".into()]));
        assert_eq!(r[2], (5, vec!["3".to_string(), "4".into(), "5".into()]));
        assert_eq!(r[3], (6, vec!["6".to_string()]));
    }

    #[test]
    fn boms_and_declared_encodings_decode() {
        let text = "name,message\r\n陳小明,你好\r\n";
        let (big5, _, _) = BIG5.encode(text);
        assert_eq!(decode(&big5, Some(BIG5)).unwrap(), text);
        assert!(decode(&big5, None).unwrap_err().contains("--encoding big5"));
        let (gb, _, _) = GB18030.encode("姓名\r\n陈小明\r\n");
        assert_eq!(decode(&gb, Some(encoding_named("gb18030").unwrap())).unwrap(), "姓名\r\n陈小明\r\n");
        let mut utf16le = vec![0xFF, 0xFE];
        utf16le.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        assert_eq!(decode(&utf16le, Some(BIG5)).unwrap(), text, "the BOM wins");
        let mut utf16be = vec![0xFE, 0xFF];
        utf16be.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
        assert_eq!(decode(&utf16be, None).unwrap(), text);
        let with_bom = format!("\u{feff}{text}");
        assert_eq!(decode(with_bom.as_bytes(), None).unwrap(), text);
        assert!(encoding_named("latin1").is_err());
    }

    #[test]
    fn a_document_with_a_bom_reads_back() {
        let doc = document([vec!["name", "note"], vec!["陳", "a,\"b\"\nc"]], true).unwrap();
        assert!(doc.starts_with("\u{feff}name,note\r\n"), "{doc:?}");
        let text = decode(doc.as_bytes(), None).unwrap();
        assert_eq!(records(&text).unwrap()[1].1, ["陳", "a,\"b\"\nc"]);
    }
}
