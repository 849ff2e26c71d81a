//! The feed's cursor: an opaque string a consumer stores and sends back. It encodes a
//! position of the feed (`db::changes::Position`) with a version and a check, so that an
//! altered or truncated cursor is refused (`BadCursor`) instead of read from somewhere else.
//! It is not a secret: any position is readable by whoever may read the feed.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::db::changes::Position;

/// The layout's version (the first byte).
const VERSION: u8 = 1;
/// Version, transaction ID, row: the bytes the check covers.
const BODY: usize = 1 + 8 + 8;
/// Bytes of the check.
const CHECK: usize = 4;
/// Keeps a cursor from matching the check of some other encoded value.
const DOMAIN: &[u8] = b"onceform change feed cursor";

/// A position of the change feed, as the text a consumer keeps (28 URL-safe characters).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cursor {
    text: String,
    position: Position,
}

/// A cursor this feed did not give: not its encoding, another version, or altered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a cursor of the change feed")]
pub struct BadCursor;

impl Cursor {
    /// The cursor of `position`.
    pub fn at(position: Position) -> Cursor {
        let mut bytes = Vec::with_capacity(BODY + CHECK);
        bytes.push(VERSION);
        bytes.extend_from_slice(&position.xid.to_be_bytes());
        bytes.extend_from_slice(&position.seq.to_be_bytes());
        let check = check(&bytes);
        bytes.extend_from_slice(&check);
        Cursor { text: URL_SAFE_NO_PAD.encode(&bytes), position }
    }

    /// Reads a cursor a consumer sent back.
    pub fn parse(text: &str) -> Result<Cursor, BadCursor> {
        // The encoding of exactly BODY + CHECK bytes (a multiple of 3: no padding, no spare
        // bits); no other length is decoded at all.
        if text.len() != (BODY + CHECK) / 3 * 4 {
            return Err(BadCursor);
        }
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| BadCursor)?;
        let (body, sum) = bytes.split_at_checked(BODY).ok_or(BadCursor)?;
        if body.first() != Some(&VERSION) || sum != check(body) {
            return Err(BadCursor);
        }
        let word = |at: usize| body.get(at..at + 8).and_then(|b| b.try_into().ok()).map(i64::from_be_bytes);
        let (Some(xid), Some(seq)) = (word(1), word(9)) else { return Err(BadCursor) };
        let cursor = Cursor::at(Position { xid, seq });
        // One encoding per position: a variant spelling of the same bytes is refused too.
        if cursor.text != text {
            return Err(BadCursor);
        }
        Ok(cursor)
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The position it stands for.
    pub fn position(&self) -> Position {
        self.position
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Cursor {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

fn check(body: &[u8]) -> [u8; CHECK] {
    let digest = Sha256::new().chain_update(DOMAIN).chain_update(body).finalize();
    let mut out = [0; CHECK];
    out.copy_from_slice(&digest[..CHECK]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_as_its_position() {
        for (xid, seq) in [(0, 0), (0, 1), (812_345, 3), (i64::MAX, i64::MAX), (7, -1)] {
            let cursor = Cursor::at(Position { xid, seq });
            assert_eq!(cursor.as_str().len(), 28);
            assert_eq!(Cursor::parse(cursor.as_str()), Ok(cursor.clone()));
            assert_eq!(cursor.position(), Position { xid, seq });
        }
    }

    #[test]
    fn every_altered_character_and_truncation_is_refused() {
        let text = Cursor::at(Position { xid: 812_345, seq: 3 }).to_string();
        let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        for i in 0..text.len() {
            for c in alphabet.chars().filter(|c| Some(*c) != text.chars().nth(i)) {
                let mut altered = text.clone();
                altered.replace_range(i..=i, &c.to_string());
                assert_eq!(Cursor::parse(&altered), Err(BadCursor), "{altered}");
            }
        }
        for end in 0..text.len() {
            assert_eq!(Cursor::parse(&text[..end]), Err(BadCursor));
        }
        for bad in ["", "not a cursor", &format!("{text}A"), &format!("{text}=")] {
            assert_eq!(Cursor::parse(bad), Err(BadCursor), "{bad}");
        }
    }
}
