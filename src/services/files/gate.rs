//! A file streaming in, checked before its bytes reach the store: its first bytes are held
//! in memory until they decide its type, and only a type the caller allows is written on
//! (to the store's temporary file, which goes unless the file is kept).

use super::store::{content_type_of, HEAD};
use super::{Files, Incoming};

/// Why a file was not taken.
#[derive(Debug)]
pub enum Refused {
    /// Its content is of this type, which the caller does not allow.
    Type(&'static str),
    /// The store could not take it.
    Store(std::io::Error),
}

/// One file streaming in.
pub struct FileGate<'f> {
    files: &'f Files,
    head: Vec<u8>,
    incoming: Option<Incoming>,
}

impl<'f> FileGate<'f> {
    pub fn new(files: &'f Files) -> FileGate<'f> {
        FileGate { files, head: Vec::new(), incoming: None }
    }

    /// Bytes taken so far.
    pub fn size(&self) -> u64 {
        self.incoming.as_ref().map_or(self.head.len() as u64, Incoming::size)
    }

    /// Takes the next piece; once the first `HEAD` bytes are in, the type they show must be
    /// `allowed` before anything is written. A chunk the database store filled is stored on
    /// a blocking thread, so the request's thread goes on serving the others meanwhile.
    pub async fn write(&mut self, chunk: &[u8], allowed: impl Fn(&str) -> bool) -> Result<(), Refused> {
        match &mut self.incoming {
            Some(incoming) => incoming.write(chunk).map_err(Refused::Store)?,
            None => {
                self.head.extend_from_slice(chunk);
                if self.head.len() >= HEAD {
                    self.open(allowed)?;
                }
            }
        }
        let Some(full) = self.incoming.as_mut().and_then(Incoming::full_chunk) else {
            return Ok(());
        };
        tokio::task::spawn_blocking(move || full.store())
            .await
            .map_err(|_| Refused::Store(std::io::Error::other("the blocking pool is gone")))?
            .map_err(Refused::Store)
    }

    /// The end of the file: `None` when it was empty (no file chosen).
    pub fn end(mut self, allowed: impl Fn(&str) -> bool) -> Result<Option<Incoming>, Refused> {
        if self.incoming.is_none() && !self.head.is_empty() {
            self.open(allowed)?;
        }
        Ok(self.incoming)
    }

    fn open(&mut self, allowed: impl Fn(&str) -> bool) -> Result<(), Refused> {
        let content_type = content_type_of(&self.head);
        if !allowed(content_type) {
            return Err(Refused::Type(content_type));
        }
        let mut incoming = self.files.begin().map_err(Refused::Store)?;
        incoming.write(&std::mem::take(&mut self.head)).map_err(Refused::Store)?;
        self.incoming = Some(incoming);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> (Files, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("onceform-gate-{}", uuid::Uuid::new_v4()));
        (Files::local(dir.to_str().unwrap_or_default()), dir)
    }

    fn walk(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir)
            .map_or(0, |d| d.flatten().map(|e| if e.path().is_dir() { walk(&e.path()) } else { 1 }).sum())
    }

    /// Each piece in turn, until one is refused.
    async fn write_all(
        gate: &mut FileGate<'_>,
        bytes: &[u8],
        piece: usize,
        allowed: impl Fn(&str) -> bool + Copy,
    ) -> Result<(), Refused> {
        for c in bytes.chunks(piece) {
            gate.write(c, allowed).await?;
        }
        Ok(())
    }

    #[tokio::test]
    async fn a_refused_type_writes_nothing() {
        let (files, dir) = files();
        let mut gate = FileGate::new(&files);
        let exe = [b"MZ".as_slice(), &[0u8; 20_000]].concat();
        let pdf_only = |t: &str| t == "application/pdf";
        let refused = write_all(&mut gate, &exe, 1000, pdf_only).await;
        assert!(matches!(refused, Err(Refused::Type(t)) if t != "application/pdf"), "{refused:?}");
        assert_eq!(walk(&dir), 0, "nothing reached the store");
        let mut small = FileGate::new(&files);
        small.write(b"MZ\x90\x00", pdf_only).await.unwrap();
        assert!(matches!(small.end(pdf_only), Err(Refused::Type(_))), "a short file is checked at its end");
        assert_eq!(walk(&dir), 0);
    }

    #[tokio::test]
    async fn an_allowed_type_is_written_whole() {
        let (files, dir) = files();
        let mut gate = FileGate::new(&files);
        let pdf = [b"%PDF-1.7\n".as_slice(), &[b'x'; 20_000]].concat();
        let any = |_: &str| true;
        write_all(&mut gate, &pdf, 3000, any).await.unwrap();
        assert_eq!(gate.size(), pdf.len() as u64);
        let incoming = gate.end(any).unwrap().unwrap();
        assert_eq!(incoming.content_type(), "application/pdf");
        assert_eq!(incoming.size(), pdf.len() as u64);
        drop(incoming);
        assert_eq!(walk(&dir), 0, "an incoming file not kept leaves nothing");
        assert!(FileGate::new(&files).end(any).unwrap().is_none(), "an empty part is no file");
    }
}
