//! What is wrong with one submitted field: a stable code (the 422 body's `codes`) and a
//! message in the visitor's language naming the field by its label (`errors`).

use std::fmt;

use crate::base::i18n::{Arg, Locale};

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
    /// A check box answered with something other than ticked or not.
    NotABoolean,
    /// A consent box left unticked.
    ConsentRequired,
    NotANumber,
    BelowMinimum {
        min: String,
    },
    AboveMaximum {
        max: String,
    },
    OffStep {
        step: String,
    },
    InvalidDate,
    TooEarly {
        min: String,
    },
    TooLate {
        max: String,
    },
    InvalidUrl,
    /// More undeclared fields than a `keep` form stores.
    TooManyFields {
        max: usize,
    },
    /// A file whose content is not of a type the field accepts.
    InvalidFileType {
        accepted: Vec<String>,
    },
    /// A file over the field's `max_bytes` (shown as `10.5 MB`).
    FileTooLarge {
        max: String,
    },
    TooManyFiles {
        max: usize,
    },
    /// A file field's value that names no upload of this form (or an expired one).
    UnknownUpload,
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
    "not_a_boolean",
    "consent_required",
    "not_a_number",
    "below_minimum",
    "above_maximum",
    "off_step",
    "invalid_date",
    "too_early",
    "too_late",
    "invalid_url",
    "too_many_fields",
    "invalid_file_type",
    "file_too_large",
    "too_many_files",
    "unknown_upload",
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
            FieldError::NotABoolean => "not_a_boolean",
            FieldError::ConsentRequired => "consent_required",
            FieldError::NotANumber => "not_a_number",
            FieldError::BelowMinimum { .. } => "below_minimum",
            FieldError::AboveMaximum { .. } => "above_maximum",
            FieldError::OffStep { .. } => "off_step",
            FieldError::InvalidDate => "invalid_date",
            FieldError::TooEarly { .. } => "too_early",
            FieldError::TooLate { .. } => "too_late",
            FieldError::InvalidUrl => "invalid_url",
            FieldError::TooManyFields { .. } => "too_many_fields",
            FieldError::InvalidFileType { .. } => "invalid_file_type",
            FieldError::FileTooLarge { .. } => "file_too_large",
            FieldError::TooManyFiles { .. } => "too_many_files",
            FieldError::UnknownUpload => "unknown_upload",
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
            FieldError::NotABoolean => "field-not-a-boolean",
            FieldError::ConsentRequired => "field-consent-required",
            FieldError::NotANumber => "field-not-a-number",
            FieldError::BelowMinimum { .. } => "field-below-minimum",
            FieldError::AboveMaximum { .. } => "field-above-maximum",
            FieldError::OffStep { .. } => "field-off-step",
            FieldError::InvalidDate => "field-invalid-date",
            FieldError::TooEarly { .. } => "field-too-early",
            FieldError::TooLate { .. } => "field-too-late",
            FieldError::InvalidUrl => "field-invalid-url",
            FieldError::TooManyFields { .. } => "field-too-many-fields",
            FieldError::InvalidFileType { .. } => "field-invalid-file-type",
            FieldError::FileTooLarge { .. } => "field-file-too-large",
            FieldError::TooManyFiles { .. } => "field-too-many-files",
            FieldError::UnknownUpload => "field-unknown-upload",
        };
        let max = match self {
            FieldError::TooLong { max }
            | FieldError::TooManyFields { max }
            | FieldError::TooManyFiles { max } => i64::try_from(*max).unwrap_or(i64::MAX),
            _ => 0,
        };
        let limit = match self {
            FieldError::BelowMinimum { min: l }
            | FieldError::AboveMaximum { max: l }
            | FieldError::OffStep { step: l }
            | FieldError::TooEarly { min: l }
            | FieldError::TooLate { max: l }
            | FieldError::FileTooLarge { max: l } => l.as_str(),
            _ => "",
        };
        let accepted;
        let options = match self {
            FieldError::InvalidFileType { accepted: a } => {
                accepted = a.clone();
                &accepted[..]
            }
            _ => options,
        };
        let options = locale.list(options);
        locale.format(
            key,
            &[
                ("label", Arg::Str(label)),
                ("max", Arg::Num(max)),
                ("options", Arg::Str(&options)),
                ("limit", Arg::Str(limit)),
            ],
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
            FieldError::NotABoolean => f.write_str("must be ticked or not (true or false)"),
            FieldError::ConsentRequired => f.write_str("must be agreed to"),
            FieldError::NotANumber => f.write_str("is not a number"),
            FieldError::BelowMinimum { min } => write!(f, "must be at least {min}"),
            FieldError::AboveMaximum { max } => write!(f, "must be at most {max}"),
            FieldError::OffStep { step } => write!(f, "must be in steps of {step}"),
            FieldError::InvalidDate => f.write_str("is not a date (YYYY-MM-DD)"),
            FieldError::TooEarly { min } => write!(f, "must be on or after {min}"),
            FieldError::TooLate { max } => write!(f, "must be on or before {max}"),
            FieldError::InvalidUrl => f.write_str("is not a web address (http or https)"),
            FieldError::TooManyFields { max } => {
                write!(f, "is one field more than the {max} this form keeps")
            }
            FieldError::InvalidFileType { accepted } => {
                write!(f, "must be a file of type {}", accepted.join(", "))
            }
            FieldError::FileTooLarge { max } => write!(f, "must be a file of at most {max}"),
            FieldError::TooManyFiles { max } => write!(f, "takes at most {max} files"),
            FieldError::UnknownUpload => f.write_str("names no upload of this form (or an expired one)"),
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
            (FieldError::NotABoolean, "not_a_boolean"),
            (FieldError::ConsentRequired, "consent_required"),
            (FieldError::NotANumber, "not_a_number"),
            (FieldError::BelowMinimum { min: "1".into() }, "below_minimum"),
            (FieldError::AboveMaximum { max: "1".into() }, "above_maximum"),
            (FieldError::OffStep { step: "1".into() }, "off_step"),
            (FieldError::InvalidDate, "invalid_date"),
            (FieldError::TooEarly { min: "2026-01-01".into() }, "too_early"),
            (FieldError::TooLate { max: "2026-01-01".into() }, "too_late"),
            (FieldError::InvalidUrl, "invalid_url"),
            (FieldError::TooManyFields { max: 20 }, "too_many_fields"),
            (FieldError::InvalidFileType { accepted: vec![] }, "invalid_file_type"),
            (FieldError::FileTooLarge { max: "1 MB".into() }, "file_too_large"),
            (FieldError::TooManyFiles { max: 1 }, "too_many_files"),
            (FieldError::UnknownUpload, "unknown_upload"),
        ];
        for (error, code) in &all {
            assert_eq!(error.code(), *code);
            assert!(FIELD_ERROR_CODES.contains(code));
        }
        assert_eq!(all.len(), FIELD_ERROR_CODES.len(), "every code has its error");
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
