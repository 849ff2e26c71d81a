//! A file a visitor attached: its content's SHA-256, size and detected type, and the name it
//! was sent with (for display only, sanitised, never a path). A `file` field's value is one
//! such reference per file, as `FileRef::to_value` writes them, joined by `SEVERAL`; only
//! the web layer writes them, after it stored the bytes (a visitor's text never becomes one).

use percent_encoding::{percent_decode_str, utf8_percent_encode, NON_ALPHANUMERIC};

use super::form::FieldConfig;
use super::FieldError;

/// What the malware scan said of each attached file, by its SHA-256 (a file not named was
/// not scanned).
pub type Scans = std::collections::BTreeMap<String, super::ScanState>;

/// Longest display name kept, in characters.
const MAX_NAME: usize = 120;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRef {
    /// Lower-case hex SHA-256 of the content: the blob's name in the file store.
    pub sha256: String,
    pub size: u64,
    /// Decided from the content (magic bytes), never from what the client declared.
    pub content_type: String,
    pub name: String,
}

impl FileRef {
    /// `<sha256> <size> <content type> <percent-encoded name>`: one line, no spaces inside a part.
    pub fn to_value(&self) -> String {
        let name = utf8_percent_encode(&self.name, NON_ALPHANUMERIC);
        format!("{} {} {} {name}", self.sha256, self.size, self.content_type)
    }

    pub fn parse(value: &str) -> Option<FileRef> {
        let mut parts = value.splitn(4, ' ');
        let sha256 = parts.next().filter(|h| is_sha256(h))?.to_string();
        let size = parts.next()?.parse().ok()?;
        let content_type = parts.next().filter(|t| t.contains('/'))?.to_string();
        // `to_value` encodes every byte of the name but letters and digits.
        let encoded = parts.next().filter(|n| !n.contains([' ', '\n', '\r']))?;
        let name = percent_decode_str(encoded).decode_utf8().ok()?.into_owned();
        Some(FileRef { sha256, size, content_type, name })
    }

    /// Every reference in a `file` field's value (those that do not parse are skipped).
    pub fn all_in(value: &str) -> Vec<FileRef> {
        value.split(super::SEVERAL).filter_map(FileRef::parse).collect()
    }

    /// A file field's value as a person reads it: each file `shown`, joined by `separator`.
    pub fn shown_all(value: &str, separator: &str) -> String {
        FileRef::all_in(value).iter().map(FileRef::shown).collect::<Vec<_>>().join(separator)
    }

    /// How a person reads it: `drawing.pdf (application/pdf, 12.3 KB)`.
    pub fn shown(&self) -> String {
        format!("{} ({}, {})", self.name, self.content_type, human_size(self.size))
    }

    /// The file name's extension, lower-case, without the dot.
    fn extension(&self) -> Option<String> {
        self.name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).filter(|e| !e.is_empty())
    }
}

pub fn is_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `1.5 MB`, `320 B`: sizes in emails and pages.
pub fn human_size(bytes: u64) -> String {
    match bytes {
        b if b < 1000 => format!("{b} B"),
        b if b < 1_000_000 => format!("{:.1} KB", b as f64 / 1e3),
        b => format!("{:.1} MB", b as f64 / 1e6),
    }
}

/// A file name as a client sent it, made safe to show: its last path segment only, without
/// control, bidirectional or zero-width characters, at most `MAX_NAME` characters (the
/// extension kept); `file` when nothing is left.
pub fn safe_file_name(raw: &str) -> String {
    let last = raw.rsplit(['/', '\\']).next().unwrap_or("");
    let clean: String = last
        .chars()
        .filter(|&c| !c.is_control() && !super::invisible::is_invisible(c))
        .collect::<String>()
        .trim()
        .trim_start_matches('.')
        .to_string();
    let clean = if clean.chars().count() > MAX_NAME {
        let ext = clean.rsplit_once('.').map(|(_, e)| e).filter(|e| e.chars().count() <= 10);
        let keep = MAX_NAME - ext.map_or(0, |e| e.chars().count() + 1);
        let stem: String = clean.chars().take(keep).collect();
        ext.map_or(stem.clone(), |e| format!("{stem}.{e}"))
    } else {
        clean
    };
    if clean.is_empty() {
        "file".into()
    } else {
        clean
    }
}

/// Whether `file` is of a type `field.accept` names (a MIME type, `image/*`, or an
/// extension such as `.pdf`, checked against the type decided from the content). An empty
/// `accept` takes any type.
pub fn accepts(field: &FieldConfig, file: &FileRef) -> bool {
    if field.accept.is_empty() {
        return true;
    }
    let detected_ext = mime_guess::get_mime_extensions_str(&file.content_type).unwrap_or_default();
    field.accept.iter().any(|a| {
        let a = a.trim().to_ascii_lowercase();
        if let Some(ext) = a.strip_prefix('.') {
            // The name's extension must agree with the content: a PNG named .pdf is no PDF.
            detected_ext.contains(&ext)
                && file.extension().is_some_and(|e| detected_ext.contains(&e.as_str()))
        } else if let Some(major) = a.strip_suffix("/*") {
            file.content_type.split('/').next() == Some(major)
        } else {
            a == file.content_type
        }
    })
}

/// The field's answer: its files, checked against `max_files`, `max_bytes` and `accept`, in
/// digest order (a reordered retry is the same content), one value.
pub fn answer(field: &FieldConfig, sent: &[&str]) -> Result<Option<String>, FieldError> {
    let mut files = Vec::with_capacity(sent.len());
    for v in sent.iter().filter(|v| !v.is_empty()) {
        files.push(FileRef::parse(v).ok_or(FieldError::UnknownUpload)?);
    }
    let max_files = field.max_files();
    if files.len() > max_files {
        return Err(FieldError::TooManyFiles { max: max_files });
    }
    if let Some(max) = field.max_bytes {
        if files.iter().any(|f| f.size > max) {
            return Err(FieldError::FileTooLarge { max: human_size(max) });
        }
    }
    if files.iter().any(|f| !accepts(field, f)) {
        return Err(FieldError::InvalidFileType { accepted: field.accept.clone() });
    }
    files.sort_by(|a, b| a.sha256.cmp(&b.sha256));
    files.dedup_by(|a, b| a.sha256 == b.sha256);
    let values: Vec<String> = files.iter().map(FileRef::to_value).collect();
    Ok((!values.is_empty()).then(|| values.join(super::SEVERAL)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::FieldType;

    fn pdf(name: &str) -> FileRef {
        FileRef {
            sha256: "a".repeat(64),
            size: 2048,
            content_type: "application/pdf".into(),
            name: name.into(),
        }
    }

    fn field(accept: &[&str]) -> FieldConfig {
        FieldConfig {
            name: "drawing".into(),
            kind: FieldType::File,
            accept: accept.iter().map(|s| s.to_string()).collect(),
            max_bytes: Some(10_000),
            max_files: Some(2),
            ..FieldConfig::default()
        }
    }

    #[test]
    fn a_reference_reads_back_what_it_wrote() {
        for name in ["drawing.pdf", "規格 書 v2.pdf", "a%20b;c\nd.pdf", "file"] {
            let f = pdf(name);
            let value = f.to_value();
            assert!(!value.contains('\n') && value.matches(' ').count() == 3, "{value}");
            assert_eq!(FileRef::parse(&value), Some(f));
        }
        let two_lines = format!("{}\n{}", pdf("a").to_value(), pdf("b").to_value());
        for forged in
            ["", "abc 1 application/pdf x", &format!("{} x application/pdf n", "a".repeat(64)), &two_lines]
        {
            assert_eq!(FileRef::parse(forged), None, "{forged}");
        }
    }

    #[test]
    fn names_lose_paths_controls_and_bidi() {
        assert_eq!(safe_file_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_file_name("C:\\Users\\ada\\drawing.pdf"), "drawing.pdf");
        assert_eq!(safe_file_name("invoice\u{202e}fdp.exe"), "invoicefdp.exe");
        assert_eq!(safe_file_name("a\r\nb.png"), "ab.png");
        assert_eq!(safe_file_name(".htaccess"), "htaccess");
        assert_eq!(safe_file_name(""), "file");
        let long = format!("{}.pdf", "x".repeat(500));
        let kept = safe_file_name(&long);
        assert_eq!(kept.chars().count(), MAX_NAME);
        assert!(kept.ends_with(".pdf"));
    }

    #[test]
    fn the_type_is_the_contents() {
        assert!(accepts(&field(&["application/pdf"]), &pdf("x.pdf")));
        assert!(accepts(&field(&[".pdf"]), &pdf("x.pdf")));
        assert!(!accepts(&field(&[".pdf"]), &pdf("x.png")), "the name must agree with the content");
        let png = FileRef { content_type: "image/png".into(), ..pdf("drawing.pdf") };
        assert!(!accepts(&field(&["application/pdf"]), &png), "a PNG renamed .pdf is no PDF");
        assert!(!accepts(&field(&[".pdf"]), &png));
        assert!(accepts(&field(&["image/*"]), &png));
        assert!(accepts(&field(&[]), &png));
    }

    #[test]
    fn answers_are_checked_and_ordered() {
        let f = field(&["application/pdf", "image/png"]);
        let a = pdf("a.pdf");
        let b = FileRef { sha256: "b".repeat(64), ..pdf("b.pdf") };
        let (va, vb) = (a.to_value(), b.to_value());
        let ab = answer(&f, &[&va, &vb]).unwrap();
        assert_eq!(ab, answer(&f, &[&vb, &va]).unwrap(), "a reordered answer is the same content");
        assert_eq!(answer(&f, &[]).unwrap(), None);
        let c = FileRef { sha256: "c".repeat(64), ..pdf("c.pdf") }.to_value();
        assert_eq!(answer(&f, &[&va, &vb, &c]), Err(FieldError::TooManyFiles { max: 2 }));
        let big = FileRef { size: 10_001, ..pdf("big.pdf") }.to_value();
        assert!(matches!(answer(&f, &[&big]), Err(FieldError::FileTooLarge { .. })));
        assert_eq!(answer(&f, &["upl_x"]), Err(FieldError::UnknownUpload));
    }
}
