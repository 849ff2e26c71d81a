//! What is wrong with one submitted field: a stable code (the 422 body's `codes`) and a
//! message in the visitor's language naming the field by its label (`errors`).

use std::fmt;

use crate::i18n::{Arg, Locale};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldError {
    Required,
    InvalidEmail,
    InvalidPhone,
    TooLong {
        max: usize,
    },
    /// The canonical option values the field takes.
    NotAnOption {
        options: Vec<String>,
    },
    UnknownField,
    GivenTwice,
    ControlCharacters,
    InvisibleCharacters,
    InvalidJourneyId,
}

/// Every code a 422 can carry: the ones in use, then those reserved for file fields.
pub const FIELD_ERROR_CODES: &[&str] = &[
    "required",
    "invalid_email",
    "invalid_phone",
    "too_long",
    "not_an_option",
    "unknown_field",
    "duplicate_field",
    "control_characters",
    "invisible_characters",
    "invalid_journey_id",
    "invalid_file_type",
    "file_too_large",
    "too_many_files",
];

impl FieldError {
    /// The stable, machine-readable code (never translated, never reworded).
    pub fn code(&self) -> &'static str {
        match self {
            FieldError::Required => "required",
            FieldError::InvalidEmail => "invalid_email",
            FieldError::InvalidPhone => "invalid_phone",
            FieldError::TooLong { .. } => "too_long",
            FieldError::NotAnOption { .. } => "not_an_option",
            FieldError::UnknownField => "unknown_field",
            FieldError::GivenTwice => "duplicate_field",
            FieldError::ControlCharacters => "control_characters",
            FieldError::InvisibleCharacters => "invisible_characters",
            FieldError::InvalidJourneyId => "invalid_journey_id",
        }
    }

    /// The visitor's message in `locale`: `label` names the field, `options` are the
    /// option labels a select offers (already in `locale`).
    pub fn message(&self, locale: Locale, label: &str, options: &[String]) -> String {
        let key = match self {
            FieldError::Required => "field-required",
            FieldError::InvalidEmail => "field-invalid-email",
            FieldError::InvalidPhone => "field-invalid-phone",
            FieldError::TooLong { .. } => "field-too-long",
            FieldError::NotAnOption { .. } => "field-not-an-option",
            FieldError::UnknownField => "field-unknown",
            FieldError::GivenTwice => "field-given-twice",
            FieldError::ControlCharacters => "field-control-characters",
            FieldError::InvisibleCharacters => "field-invisible-characters",
            FieldError::InvalidJourneyId => "field-invalid-journey",
        };
        let max = match self {
            FieldError::TooLong { max } => i64::try_from(*max).unwrap_or(i64::MAX),
            _ => 0,
        };
        let options = locale.list(options);
        locale.format(
            key,
            &[("label", Arg::Str(label)), ("max", Arg::Num(max)), ("options", Arg::Str(&options))],
        )
    }
}

/// The operator's wording (CLI and admin reports: `email is required`), after the field's name.
impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldError::Required => f.write_str("is required"),
            FieldError::InvalidEmail => f.write_str("is not a valid email address"),
            FieldError::InvalidPhone => f.write_str("is not a valid phone number"),
            FieldError::TooLong { max } => write!(f, "must be at most {max} characters"),
            FieldError::NotAnOption { options } => write!(f, "must be one of: {}", options.join(", ")),
            FieldError::UnknownField => f.write_str("is not a field of this form"),
            FieldError::GivenTwice => f.write_str("was given more than once"),
            FieldError::ControlCharacters => f.write_str("contains control characters"),
            FieldError::InvisibleCharacters => {
                f.write_str("contains invisible characters (bidirectional overrides or zero-width spaces)")
            }
            FieldError::InvalidJourneyId => f.write_str("must be 1 to 128 characters of A-Z a-z 0-9 _ - . :"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes are a contract with API clients: this list changes only by adding to it.
    #[test]
    fn field_error_codes_are_stable() {
        let all = [
            (FieldError::Required, "required"),
            (FieldError::InvalidEmail, "invalid_email"),
            (FieldError::InvalidPhone, "invalid_phone"),
            (FieldError::TooLong { max: 3 }, "too_long"),
            (FieldError::NotAnOption { options: vec![] }, "not_an_option"),
            (FieldError::UnknownField, "unknown_field"),
            (FieldError::GivenTwice, "duplicate_field"),
            (FieldError::ControlCharacters, "control_characters"),
            (FieldError::InvisibleCharacters, "invisible_characters"),
            (FieldError::InvalidJourneyId, "invalid_journey_id"),
        ];
        for (error, code) in &all {
            assert_eq!(error.code(), *code);
            assert!(FIELD_ERROR_CODES.contains(code));
        }
        assert_eq!(&FIELD_ERROR_CODES[10..], ["invalid_file_type", "file_too_large", "too_many_files"]);
    }

    #[test]
    fn messages_name_the_field_by_its_label_in_the_locale() {
        let options = vec!["業務".to_string(), "技術支援".to_string()];
        let e = FieldError::NotAnOption { options: vec!["Sales".into(), "Support".into()] };
        assert_eq!(e.message(Locale::ZhTw, "主題", &options), "「主題」請從以下選項中選擇：業務、技術支援");
        assert_eq!(
            FieldError::InvalidPhone.message(Locale::Ja, "電話番号", &[]),
            "「電話番号」には正しい電話番号を入力してください"
        );
        assert_eq!(FieldError::Required.message(Locale::En, "Email", &[]), "Email is required");
        assert_eq!(e.to_string(), "must be one of: Sales, Support");
    }
}
