//! Operation IDs: the key naming one logical submission of one form.

use std::fmt;

const KEYLESS_PREFIX: &str = "keyless:";
/// The keys of imported rows (`onceform import`).
const IMPORT_PREFIX: &str = "import:";
/// IDs that onceform issues: `op_` and a UUIDv7, whose first 48 bits are the issue time.
const ISSUED_PREFIX: &str = "op_";

/// 16 to 255 characters of `A-Z a-z 0-9 _ - . :`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OperationId(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OperationIdError {
    #[error("an operation ID has 16 to 255 characters (this one has {0})")]
    Length(usize),
    #[error("an operation ID uses only A-Z a-z 0-9 _ - . :")]
    Charset,
    #[error("operation IDs starting with `keyless:` or `import:` are reserved")]
    Reserved,
}

impl OperationId {
    pub const MIN_LEN: usize = 16;
    pub const MAX_LEN: usize = 255;

    pub fn parse(s: &str) -> Result<Self, OperationIdError> {
        let n = s.chars().count();
        if !(Self::MIN_LEN..=Self::MAX_LEN).contains(&n) {
            return Err(OperationIdError::Length(n));
        }
        if !s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':')) {
            return Err(OperationIdError::Charset);
        }
        Ok(Self(s.to_string()))
    }

    /// A key sent by a client: the syntax, and not in the namespace of keyless posts.
    pub fn from_client(s: &str) -> Result<Self, OperationIdError> {
        let id = Self::parse(s)?;
        match id.0.starts_with(KEYLESS_PREFIX) || id.0.starts_with(IMPORT_PREFIX) {
            true => Err(OperationIdError::Reserved),
            false => Ok(id),
        }
    }

    /// The `Idempotency-Key` header: bare, or an RFC 8941 sf-string (`"…"`).
    pub fn from_header(value: &str) -> Result<Self, OperationIdError> {
        let v = value.trim_matches([' ', '\t']);
        match v.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')) {
            Some(inner) => Self::from_client(inner),
            None => Self::from_client(v),
        }
    }

    /// A fresh ID for a rendered form or an API client; it carries its issue time.
    pub fn generate() -> Self {
        Self(format!("{ISSUED_PREFIX}{}", uuid::Uuid::now_v7().simple()))
    }

    /// The key of an imported row: its digest, so a re-run finds it taken.
    pub fn imported(digest: &str) -> Self {
        Self(format!("{IMPORT_PREFIX}{digest}"))
    }

    /// When onceform issued this ID (`None` for a client-chosen key).
    pub fn issued_at(&self) -> Option<chrono::NaiveDateTime> {
        let hex = self.0.strip_prefix(ISSUED_PREFIX)?;
        let uuid = uuid::Uuid::try_parse(hex).ok().filter(|_| hex.len() == 32)?;
        if uuid.get_version_num() != 7 {
            return None;
        }
        let (seconds, nanos) = uuid.get_timestamp()?.to_unix();
        chrono::DateTime::from_timestamp(i64::try_from(seconds).ok()?, nanos).map(|t| t.naive_utc())
    }

    /// The internal key of a keyless HTML post: unique, so the constraint still holds.
    pub fn keyless() -> Self {
        Self(format!("{KEYLESS_PREFIX}{}", uuid::Uuid::now_v7().simple()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_contract_syntax() {
        assert!(OperationId::parse("abcdefghijklmnop").is_ok());
        assert!(OperationId::parse("op_A-z.0:9_____________").is_ok());
        assert!(OperationId::parse(&"a".repeat(255)).is_ok());
        assert!(OperationId::generate().as_str().len() >= 16);
        assert!(OperationId::parse(OperationId::keyless().as_str()).is_ok());
    }

    #[test]
    fn issued_ids_carry_their_issue_time() {
        let before = chrono::Utc::now().naive_utc() - chrono::Duration::seconds(1);
        let issued = OperationId::generate().issued_at().unwrap();
        assert!(issued >= before && issued <= chrono::Utc::now().naive_utc());
        let v4 = format!("op_{}", uuid::Uuid::new_v4().simple());
        assert_eq!(OperationId::parse(&v4).unwrap().issued_at(), None);
        assert_eq!(OperationId::parse("client-chosen-key-0001").unwrap().issued_at(), None);
        assert_eq!(OperationId::from_client("import:abcdefghijklmnop"), Err(OperationIdError::Reserved));
    }

    #[test]
    fn rejects_everything_else() {
        assert_eq!(OperationId::parse("short"), Err(OperationIdError::Length(5)));
        assert_eq!(OperationId::parse(&"a".repeat(256)), Err(OperationIdError::Length(256)));
        for bad in ["abcdefghijklmnop q", "abcdefghijklmnop/", "abcdefghijklmnopé", "jane@example.com-0000"]
        {
            assert!(OperationId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn header_may_be_an_sf_string() {
        let bare = OperationId::from_header("abcdefghijklmnop").unwrap();
        assert_eq!(OperationId::from_header("\"abcdefghijklmnop\"").unwrap(), bare);
        assert!(OperationId::from_header("\"abcdefghijklmnop").is_err());
        let keyless = OperationId::keyless();
        assert_eq!(OperationId::from_header(keyless.as_str()), Err(OperationIdError::Reserved));
    }
}
