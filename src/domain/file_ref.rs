//! A file a visitor attached: its content's SHA-256, size and detected type, and the name it
//! was sent with (for display only, sanitised, never a path). A request's files travel beside
//! its text fields as `Attached`, each `FileRef` made by the file store from the bytes it
//! received (`services::files`); a stored `file` field's value is one reference per file, as
//! `FileRef::to_value` writes them, joined by `SEVERAL`. Only a stored value is ever read
//! back into a `FileRef` (`FileRef::stored_in`): a visitor's text never becomes one.

use percent_encoding::{percent_decode_str, utf8_percent_encode, NON_ALPHANUMERIC};

use super::form::FieldConfig;
use super::FieldError;

/// What the malware scan said of each attached file, by its SHA-256 (a file not named was
/// not scanned).
pub type Scans = std::collections::BTreeMap<String, super::ScanState>;

/// The files a request attached, by field name, in the order they came: only the file store
/// makes them, from bytes it received (a multipart part, a resolved upload, an import's file).
pub type Attached = Vec<(String, FileRef)>;

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

    /// One reference as `to_value` wrote it into a stored value.
    fn from_stored(value: &str) -> Option<FileRef> {
        let mut parts = value.splitn(4, ' ');
        let sha256 = parts.next().filter(|h| is_sha256(h))?.to_string();
        let size = parts.next()?.parse().ok()?;
        let content_type = parts.next().filter(|t| t.contains('/'))?.to_string();
        // `to_value` encodes every byte of the name but letters and digits.
        let encoded = parts.next().filter(|n| !n.contains([' ', '\n', '\r']))?;
        let name = percent_decode_str(encoded).decode_utf8().ok()?.into_owned();
        Some(FileRef { sha256, size, content_type, name })
    }

    /// Every reference in a stored `file` field's value (those that do not parse are
    /// skipped). Never for what a client sent: its files come as `Attached`.
    pub fn stored_in(value: &str) -> Vec<FileRef> {
        value.split(super::SEVERAL).filter_map(FileRef::from_stored).collect()
    }

    /// A file field's value as a person reads it: each file `shown`, joined by `separator`.
    pub fn shown_all(value: &str, separator: &str) -> String {
        FileRef::stored_in(value).iter().map(FileRef::shown).collect::<Vec<_>>().join(separator)
    }

    /// How a person reads it: `drawing.pdf (application/pdf, 12.3 KB)`.
    pub fn shown(&self) -> String {
        format!("{} ({}, {})", self.name, self.content_type, human_size(self.size))
    }
}

/// A stored submission's fields as a request would send them again: the text pairs, and
/// the files its file fields' stored values name.
pub fn split_stored<'a>(
    form: impl Into<super::FormSchema<'a>>,
    stored: impl IntoIterator<Item = (String, String)>,
) -> (super::RawFields, Attached) {
    let form = form.into();
    let (mut raw, mut files) = (Vec::new(), Vec::new());
    for (name, value) in stored {
        match form.field(&name).is_some_and(FieldConfig::is_file) {
            true => files.extend(FileRef::stored_in(&value).into_iter().map(|f| (name.clone(), f))),
            false => raw.push((name, value)),
        }
    }
    (raw, files)
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
    accepts_type(field, &file.content_type, &file.name)
}

/// Whether a file of `content_type` (decided from its content) named `name` is of a type
/// `field.accept` names: what a file part is checked by before its bytes are stored.
pub fn accepts_type(field: &FieldConfig, content_type: &str, name: &str) -> bool {
    if field.accept.is_empty() {
        return true;
    }
    let detected_ext = mime_guess::get_mime_extensions_str(content_type).unwrap_or_default();
    let extension = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).filter(|e| !e.is_empty());
    field.accept.iter().any(|a| {
        let a = a.trim().to_ascii_lowercase();
        if let Some(ext) = a.strip_prefix('.') {
            // The name's extension must agree with the content: a PNG named .pdf is no PDF.
            detected_ext.contains(&ext) && extension.as_deref().is_some_and(|e| detected_ext.contains(&e))
        } else if let Some(major) = a.strip_suffix("/*") {
            content_type.split('/').next() == Some(major)
        } else {
            a == content_type
        }
    })
}

/// The field's answer: its files, checked against `max_files`, `max_bytes` and `accept`, in
/// digest order (a reordered retry is the same content), each with its own name (equal
/// contents sent under two names are two files), one value.
pub fn answer(field: &FieldConfig, files: &[&FileRef]) -> Result<Option<String>, FieldError> {
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
    let mut files = files.to_vec();
    files.sort_by(|a, b| (&a.sha256, &a.name).cmp(&(&b.sha256, &b.name)));
    let values: Vec<String> = files.iter().map(|f| f.to_value()).collect();
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
            assert_eq!(FileRef::stored_in(&value), [f]);
        }
        let two_lines = format!("{}\n{}", pdf("a").to_value(), pdf("b").to_value());
        for forged in
            ["", "abc 1 application/pdf x", &format!("{} x application/pdf n", "a".repeat(64)), &two_lines]
        {
            assert_eq!(FileRef::from_stored(forged), None, "{forged}");
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
        let ab = answer(&f, &[&a, &b]).unwrap();
        assert_eq!(ab, answer(&f, &[&b, &a]).unwrap(), "a reordered answer is the same content");
        assert_eq!(answer(&f, &[]).unwrap(), None);
        let c = FileRef { sha256: "c".repeat(64), ..pdf("c.pdf") };
        assert_eq!(answer(&f, &[&a, &b, &c]), Err(FieldError::TooManyFiles { max: 2 }));
        let big = FileRef { size: 10_001, ..pdf("big.pdf") };
        assert!(matches!(answer(&f, &[&big]), Err(FieldError::FileTooLarge { .. })));
    }

    #[test]
    fn equal_contents_under_two_names_keep_both_names() {
        let f = field(&["application/pdf"]);
        let (first, second) = (pdf("offer.pdf"), pdf("invoice.pdf"));
        let value = answer(&f, &[&first, &second]).unwrap().unwrap();
        let names: Vec<String> = FileRef::stored_in(&value).into_iter().map(|r| r.name).collect();
        assert_eq!(names, ["invoice.pdf", "offer.pdf"]);
        assert_eq!(Some(value), answer(&f, &[&second, &first]).unwrap(), "the order sent does not matter");
    }
}
