//! Normalising and validating the submitted fields of one form.

use std::collections::BTreeMap;

use serde::Serialize;
use unicode_normalization::UnicodeNormalization;
use validator::ValidateEmail;

use super::field_error::FieldError;
use super::file_ref::FileRef;
use super::form::{Bound, FieldConfig, FieldType, FormSchema, Undeclared};
use super::states::SpamReason;

/// Name/value pairs as received (JSON object members or form pairs), in order.
pub type RawFields = Vec<(String, String)>;

/// Declared fields after normalisation; absent and empty optional fields are left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct NormalisedFields {
    values: BTreeMap<String, String>,
    #[serde(skip)]
    pub honeypot_hit: bool,
    /// Set by the spam screening (fill time, captcha) before the accept transaction.
    #[serde(skip)]
    pub spam_reason: Option<SpamReason>,
    /// `journey_id` (field or `Onceform-Journey-Id` header): stored, never fingerprinted.
    #[serde(skip)]
    pub journey_id: Option<String>,
    /// The visitor's negotiated locale on a `locale = "auto"` form (its tag): stored for
    /// their confirmation, never fingerprinted.
    #[serde(skip)]
    pub locale: Option<&'static str>,
    /// The values compared as content where they differ from the stored ones: a phone by its
    /// digits (`phone_digits`), so that `0912-345-678` and `0912345678` are the same content
    /// and a row stored before phones were kept as typed keeps its fingerprint.
    #[serde(skip)]
    compared: BTreeMap<String, String>,
}

impl NormalisedFields {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Why these fields are to be stored as spam, if they are.
    pub fn spam_reason(&self) -> Option<SpamReason> {
        if self.honeypot_hit {
            Some(SpamReason::Honeypot)
        } else {
            self.spam_reason
        }
    }

    /// The values as stored (what the visitor typed, normalised).
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.values).unwrap_or_default()
    }

    /// The values as their fingerprint digests them (`domain::fingerprint`).
    pub fn content_json(&self) -> String {
        self.compared_json().unwrap_or_else(|| self.to_json())
    }

    /// `content_json` where it differs from `to_json` (a phone typed with separators).
    pub fn compared_json(&self) -> Option<String> {
        if self.compared.is_empty() {
            return None;
        }
        let mut values = self.values.clone();
        values.extend(self.compared.iter().map(|(k, v)| (k.clone(), v.clone())));
        serde_json::to_string(&values).ok()
    }
}

/// A stored row's fields as its fingerprint digests them (`NormalisedFields::content_json`):
/// each phone field of `form` by its digits. `None` when `stored` is not a fields object.
pub fn stored_content_json<'a>(form: impl Into<FormSchema<'a>>, stored: &str) -> Option<String> {
    let form = form.into();
    let mut values: BTreeMap<String, String> = serde_json::from_str(stored).ok()?;
    for field in form.fields.iter().filter(|f| f.kind == FieldType::Phone) {
        if let Some(v) = values.get_mut(&field.name) {
            *v = phone_digits(v);
        }
    }
    serde_json::to_string(&values).ok()
}

/// What is wrong with each field (the 422's `codes`, and its `errors` in a locale).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldErrors(pub BTreeMap<String, Vec<FieldError>>);

impl FieldErrors {
    pub fn add(&mut self, field: &str, error: FieldError) {
        self.0.entry(field.to_string()).or_default().push(error);
    }

    /// `field: [code]`, as in the 422 `codes` member.
    pub fn codes(&self) -> BTreeMap<&str, Vec<&'static str>> {
        self.0.iter().map(|(f, e)| (f.as_str(), e.iter().map(FieldError::code).collect())).collect()
    }

    /// `field error, error`: the operator's wording (CLI and admin reports).
    pub fn summary(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|(f, e)| format!("{f} {}", e.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")))
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Undeclared fields a `undeclared_fields = "keep"` form stores at most, and their bounds.
pub const MAX_UNDECLARED: usize = 20;
pub const MAX_UNDECLARED_NAME: usize = 64;
pub const MAX_UNDECLARED_VALUE: usize = 2000;

/// Checks `raw` (a request without files) against the form's declaration and returns the
/// normalised values; see `normalise_with`.
pub fn normalise<'a>(
    form: impl Into<FormSchema<'a>>,
    raw: &RawFields,
) -> Result<NormalisedFields, FieldErrors> {
    normalise_with(form, raw, &[])
}

/// Checks `raw` and the `files` the store received for the form's file fields against the
/// form's declaration and returns the normalised values. A file field's answer comes from
/// `files` only: text sent for it is an `unknown_upload` (a visitor names uploads, never
/// blobs). `operation_id`, the honeypot and ignored (volatile) fields are not part of the
/// result.
pub fn normalise_with<'a>(
    form: impl Into<FormSchema<'a>>,
    raw: &RawFields,
    files: &[(String, FileRef)],
) -> Result<NormalisedFields, FieldErrors> {
    let form = form.into();
    let mut errors = FieldErrors::default();
    let mut given: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut undeclared: BTreeMap<&str, &str> = BTreeMap::new();
    let mut honeypot_hit = false;
    let mut journey_id = None;
    for (name, value) in raw {
        if name == "operation_id" || form.ignore_fields.contains(name) {
            continue;
        }
        if name == JOURNEY_FIELD && form.field(name).is_none() {
            match parse_journey_id(value) {
                Ok(j) => journey_id = j,
                Err(_) => errors.add(name, FieldError::InvalidJourneyId),
            }
            continue;
        }
        if !form.honeypot.is_empty() && *name == form.honeypot {
            honeypot_hit |= !value.trim().is_empty();
            continue;
        }
        match form.field(name) {
            None if form.undeclared == Undeclared::Keep => {
                if let Err(e) = keep_undeclared(&mut undeclared, name, value) {
                    errors.add(name, e);
                }
            }
            None => errors.add(name, FieldError::UnknownField),
            Some(f) if f.kind == FieldType::File => {
                if !value.is_empty() {
                    errors.add(name, FieldError::UnknownUpload);
                }
            }
            Some(f) => {
                let values = given.entry(name).or_default();
                if !values.is_empty() && !f.takes_several() {
                    errors.add(name, FieldError::GivenTwice);
                }
                values.push(value);
            }
        }
    }
    for (name, _) in files.iter().filter(|(name, _)| !form.field(name).is_some_and(|f| f.is_file())) {
        errors.add(name, FieldError::UnknownField);
    }
    let mut values = BTreeMap::new();
    for field in form.fields {
        if field.kind == FieldType::File {
            let sent: Vec<&FileRef> =
                files.iter().filter(|(n, _)| *n == field.name).map(|(_, f)| f).collect();
            match super::file_ref::answer(field, &sent) {
                Ok(None) if field.required => errors.add(&field.name, FieldError::Required),
                Ok(None) => {}
                Ok(Some(v)) => {
                    values.insert(field.name.clone(), v);
                }
                Err(message) => errors.add(&field.name, message),
            }
            continue;
        }
        let sent = given.get(field.name.as_str()).map(Vec::as_slice).unwrap_or_default();
        if let Some(Err(message)) = sent.iter().map(|v| check_sent(field, v)).find(Result::is_err) {
            errors.add(&field.name, message);
            continue;
        }
        match answer(field, sent) {
            Ok(None) if field.kind == FieldType::Consent => {
                errors.add(&field.name, FieldError::ConsentRequired)
            }
            Ok(None) if field.required => errors.add(&field.name, FieldError::Required),
            Ok(None) => {}
            Ok(Some(v)) => {
                values.insert(field.name.clone(), v);
            }
            Err(message) => errors.add(&field.name, message),
        }
    }
    for (name, value) in undeclared {
        values.insert(name.to_string(), value.to_string());
    }
    let compared = form
        .fields
        .iter()
        .filter(|f| f.kind == FieldType::Phone)
        .filter_map(|f| values.get(&f.name).map(|v| (f.name.clone(), phone_digits(v))))
        .filter(|(name, digits)| values.get(name) != Some(digits))
        .collect();
    if errors.is_empty() {
        Ok(NormalisedFields { values, honeypot_hit, spam_reason: None, journey_id, locale: None, compared })
    } else {
        Err(errors)
    }
}

/// An undeclared field a `keep` form stores: as text, bounded in number and size.
fn keep_undeclared<'r>(
    kept: &mut BTreeMap<&'r str, &'r str>,
    name: &'r str,
    value: &'r str,
) -> Result<(), FieldError> {
    if kept.contains_key(name) {
        return Err(FieldError::GivenTwice);
    }
    if kept.len() >= MAX_UNDECLARED {
        return Err(FieldError::TooManyFields { max: MAX_UNDECLARED });
    }
    let bad_name = name.is_empty()
        || name.chars().count() > MAX_UNDECLARED_NAME
        || name.chars().any(|c| c.is_control() || super::invisible::is_invisible(c));
    if bad_name {
        return Err(FieldError::UnknownField);
    }
    if value.chars().filter(|&c| c != '\r').count() > MAX_UNDECLARED_VALUE {
        return Err(FieldError::TooLong { max: MAX_UNDECLARED_VALUE });
    }
    if value
        .chars()
        .any(|c| (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) || super::invisible::is_invisible(c))
    {
        return Err(FieldError::ControlCharacters);
    }
    if !value.trim().is_empty() {
        kept.insert(name, value);
    }
    Ok(())
}

/// The field's normalised answer from what was sent for it (`None`: not answered).
fn answer(field: &FieldConfig, sent: &[&str]) -> Result<Option<String>, FieldError> {
    if field.takes_several() {
        let mut chosen = Vec::new();
        for v in sent {
            let v = normalise_value(field.kind, v);
            if v.is_empty() {
                continue; // the empty marker a form sends so that "none ticked" is explicit
            }
            if !field.options.contains(&v) {
                return Err(FieldError::NotAnOption { options: field.options.clone() });
            }
            chosen.push(v);
        }
        // In the options' order, each once: a reordered answer is the same content.
        let answer: Vec<&str> =
            field.options.iter().filter(|o| chosen.contains(o)).map(String::as_str).collect();
        return Ok((!answer.is_empty()).then(|| answer.join(SEVERAL)));
    }
    let Some(v) = sent.first().map(|v| normalise_value(field.kind, v)).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    check_value(field, &v)?;
    Ok(match field.kind {
        FieldType::Checkbox | FieldType::Consent => match boolean(&v) {
            Some(true) if field.kind == FieldType::Consent => Some(consent_value(field)),
            Some(true) => Some("true".into()),
            Some(false) => None,
            None => return Err(FieldError::NotABoolean),
        },
        FieldType::Number => Some(number(field, &v)?),
        FieldType::Date => Some(date(field, &v)?),
        FieldType::Url => Some(web_address(&v)?),
        _ => Some(v),
    })
}

/// How several chosen options are stored in one value (an option never holds a line break).
pub const SEVERAL: &str = "\n";

/// What a ticked consent box stores: the version of the text agreed to.
fn consent_value(field: &FieldConfig) -> String {
    field.version.clone().unwrap_or_else(|| "1".into())
}

/// A check box's answer: browsers send `on`, JSON clients `true`/`false`.
pub fn boolean(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "yes" => Some(true),
        "off" | "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// A decimal number in its shortest form (`+01.50` → `1.5`), within the field's bounds.
fn number(field: &FieldConfig, v: &str) -> Result<String, FieldError> {
    let v = super::width::fold_width(v);
    let (negative, digits) = match v.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, v.strip_prefix('+').unwrap_or(&v)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let well_formed = !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit())
        && (frac.is_empty() || !digits.ends_with('.'))
        && int.len() + frac.len() <= 30;
    if !well_formed {
        return Err(FieldError::NotANumber);
    }
    let int = int.trim_start_matches('0');
    let frac = frac.trim_end_matches('0');
    let body = match (int.is_empty(), frac.is_empty()) {
        (true, true) => "0".to_string(),
        (false, true) => int.to_string(),
        (true, false) => format!("0.{frac}"),
        (false, false) => format!("{int}.{frac}"),
    };
    let shortest = if negative && body != "0" { format!("-{body}") } else { body };
    let value: f64 = shortest.parse().map_err(|_| FieldError::NotANumber)?;
    if let Some(Bound::Number(min)) = field.min {
        if value < min {
            return Err(FieldError::BelowMinimum { min: shown(min) });
        }
    }
    if let Some(Bound::Number(max)) = field.max {
        if value > max {
            return Err(FieldError::AboveMaximum { max: shown(max) });
        }
    }
    if let Some(step) = field.step.filter(|s| *s > 0.0) {
        let base = match field.min {
            Some(Bound::Number(min)) => min,
            _ => 0.0,
        };
        let steps = (value - base) / step;
        if (steps - steps.round()).abs() > 1e-9 * steps.abs().max(1.0) {
            return Err(FieldError::OffStep { step: shown(step) });
        }
    }
    Ok(shortest)
}

/// A bound as a visitor reads it: `10`, not `10.0`.
fn shown(n: f64) -> String {
    format!("{n}")
}

/// A day `YYYY-MM-DD`, within the field's bounds.
fn date(field: &FieldConfig, v: &str) -> Result<String, FieldError> {
    let d = super::form::day(&super::width::fold_width(v)).ok_or(FieldError::InvalidDate)?;
    if let Some(Bound::Day(min)) = field.min {
        if d < min {
            return Err(FieldError::TooEarly { min: min.to_string() });
        }
    }
    if let Some(Bound::Day(max)) = field.max {
        if d > max {
            return Err(FieldError::TooLate { max: max.to_string() });
        }
    }
    Ok(d.format("%Y-%m-%d").to_string())
}

/// An `http` or `https` address with a host, in its normal form (lower-case host, `/` path).
fn web_address(v: &str) -> Result<String, FieldError> {
    let url = url::Url::parse(v).map_err(|_| FieldError::InvalidUrl)?;
    match (url.scheme(), url.host_str()) {
        ("http" | "https", Some(host)) if !host.is_empty() => Ok(url.to_string()),
        _ => Err(FieldError::InvalidUrl),
    }
}

/// The body field (and, as `Onceform-Journey-Id`, the header) naming a visitor's journey.
pub const JOURNEY_FIELD: &str = "journey_id";

/// A journey ID: 1 to 128 characters of `A-Z a-z 0-9 _ - . :`; empty means none.
pub fn parse_journey_id(value: &str) -> Result<Option<String>, String> {
    let v = value.trim();
    if v.is_empty() {
        return Ok(None);
    }
    let ok = v.len() <= 128
        && v.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'));
    match ok {
        true => Ok(Some(v.to_string())),
        false => Err("must be 1 to 128 characters of A-Z a-z 0-9 _ - . :".into()),
    }
}

pub fn normalise_value(kind: FieldType, raw: &str) -> String {
    let nfc: String = raw.nfc().collect();
    match kind {
        FieldType::Textarea => {
            // CRLF and a lone CR are line breaks, as in a browser's textarea.
            let nfc = nfc.replace("\r\n", "\n").replace('\r', "\n");
            let lines: Vec<&str> = nfc.split('\n').map(|l| l.trim_end()).collect();
            lines.join("\n").trim().to_string()
        }
        FieldType::Email => collapse_spaces(&nfc).to_lowercase(),
        // As typed; only separators (`-`, `.`, `( )`) are no answer, as they always were.
        FieldType::Phone => match phone_digits(&nfc).is_empty() {
            true => String::new(),
            false => collapse_spaces(&nfc),
        },
        FieldType::Text
        | FieldType::Select
        | FieldType::Radio
        | FieldType::Checkboxes
        | FieldType::Multiselect
        | FieldType::Checkbox
        | FieldType::Consent
        | FieldType::Number
        | FieldType::Date
        | FieldType::Url
        | FieldType::Hidden => collapse_spaces(&nfc),
        // A file field's answer is its files (`normalise_with`), never typed text.
        FieldType::File => raw.to_string(),
    }
}

/// A phone number as its content is compared, and as releases before typed phones stored it:
/// without spaces, brackets, dashes, dots and slashes, a leading `+` kept.
pub fn phone_digits(typed: &str) -> String {
    let nfc: String = typed.nfc().collect();
    let plus = nfc.trim_start().starts_with('+');
    let digits: String = nfc.chars().filter(|c| !" ()-./\t\u{3000}".contains(*c)).collect();
    match (plus, digits.strip_prefix('+')) {
        (true, Some(rest)) => format!("+{rest}"),
        _ => digits,
    }
}

fn collapse_spaces(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The value as sent, before normalisation: within the length (a CR of a browser's CRLF is
/// not counted) and free of control characters other than tab, CR and LF. What the OpenAPI
/// description promises is checked here, so padding cannot slip an overlong value through.
fn check_sent(field: &FieldConfig, v: &str) -> Result<(), FieldError> {
    let max = field.max_length();
    if v.chars().filter(|&c| c != '\r').count() > max {
        return Err(FieldError::TooLong { max });
    }
    if v.chars().any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r')) {
        return Err(FieldError::ControlCharacters);
    }
    Ok(())
}

fn check_value(field: &FieldConfig, v: &str) -> Result<(), FieldError> {
    let max = field.max_length();
    if v.chars().count() > max {
        return Err(FieldError::TooLong { max });
    }
    if v.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Err(FieldError::ControlCharacters);
    }
    if v.chars().any(super::invisible::is_invisible) {
        return Err(FieldError::InvisibleCharacters);
    }
    match field.kind {
        // Full-width input (an IME's `０９１２…`, `＠`) is valid: checked on its folded form.
        FieldType::Email if !is_email(v) => Err(FieldError::InvalidEmail),
        FieldType::Phone if !is_phone_number(v) => Err(FieldError::InvalidPhone),
        FieldType::Select | FieldType::Radio if !field.options.iter().any(|o| o == v) => {
            Err(FieldError::NotAnOption { options: field.options.clone() })
        }
        _ => Ok(()),
    }
}

/// An email address as a field of type `email` takes it (full-width characters folded).
pub fn is_email(typed: &str) -> bool {
    super::width::fold_width(typed).validate_email()
}

/// A phone number as a field of type `phone` takes it: 7 to 15 digits, optionally after `+`,
/// with separators and full-width characters.
pub fn is_phone_number(typed: &str) -> bool {
    is_phone(&phone_digits(&super::width::fold_width(typed)))
}

fn is_phone(v: &str) -> bool {
    let digits = v.strip_prefix('+').unwrap_or(v);
    (7..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, FormConfig};

    fn contact() -> FormConfig {
        Config::builtin().unwrap().forms["contact"].clone()
    }

    fn raw(pairs: &[(&str, &str)]) -> RawFields {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    const GOOD: &[(&str, &str)] = &[
        ("name", "  Ada   Lovelace "),
        ("email", "Ada@Example.COM"),
        ("topic", "Sales"),
        ("message", "Hello\r\nworld  \n"),
    ];

    #[test]
    fn normalises_values() {
        let n = normalise(&contact(), &raw(GOOD)).unwrap();
        assert_eq!(n.get("name"), Some("Ada Lovelace"));
        assert_eq!(n.get("email"), Some("ada@example.com"));
        assert_eq!(n.get("message"), Some("Hello\nworld"));
        let lone_cr =
            raw(&[("name", "Ada"), ("email", "a@b.ch"), ("topic", "Sales"), ("message", "one\rtwo")]);
        assert_eq!(normalise(&contact(), &lone_cr).unwrap().get("message"), Some("one\ntwo"));
        assert_eq!(n.get("company"), None);
        assert!(!n.honeypot_hit);
    }

    #[test]
    fn names_every_bad_field() {
        let e = normalise(
            &contact(),
            &raw(&[("email", "nope"), ("topic", "Gossip"), ("colour", "red"), ("name", &"x".repeat(121))]),
        )
        .unwrap_err();
        assert_eq!(e.0["email"], [FieldError::InvalidEmail]);
        assert_eq!(e.0["topic"][0].to_string(), "must be one of: Sales, Support, Partnership, Other");
        assert_eq!(e.0["colour"], [FieldError::UnknownField]);
        assert_eq!(e.0["name"], [FieldError::TooLong { max: 120 }]);
        assert_eq!(e.0["message"], [FieldError::Required]);
        assert_eq!(e.codes()["topic"], ["not_an_option"]);
    }

    #[test]
    fn honeypot_and_volatile_fields_are_set_aside() {
        let mut r = raw(GOOD);
        r.push(("website".into(), "http://spam".into()));
        r.push(("g-recaptcha-response".into(), "token".into()));
        r.push(("operation_id".into(), "abcdefghijklmnop".into()));
        let n = normalise(&contact(), &r).unwrap();
        assert!(n.honeypot_hit);
        assert_eq!(n.iter().count(), 4);
    }

    #[test]
    fn values_are_checked_as_sent_before_normalisation() {
        let padded = format!("Ada{}", " ".repeat(120));
        let e = normalise(
            &contact(),
            &raw(&[("name", &padded), ("email", "a@b.ch"), ("topic", "Sales"), ("message", "Hi")]),
        )
        .unwrap_err();
        assert_eq!(e.0["name"], [FieldError::TooLong { max: 120 }]);
        let e = normalise(
            &contact(),
            &raw(&[("name", "A\u{b}da"), ("email", "a@b.ch"), ("topic", "Sales"), ("message", "Hi")]),
        )
        .unwrap_err();
        assert_eq!(e.0["name"], [FieldError::ControlCharacters]);
        let crlf = format!("{}\r\n{}", "x".repeat(2500), "y".repeat(2499));
        assert!(normalise(
            &contact(),
            &raw(&[("name", "Ada"), ("email", "a@b.ch"), ("topic", "Sales"), ("message", &crlf)])
        )
        .is_ok());
    }

    #[test]
    fn the_journey_id_is_kept_apart_from_the_content() {
        let mut r = raw(GOOD);
        r.push(("journey_id".into(), "j-0123456789".into()));
        let n = normalise(&contact(), &r).unwrap();
        assert_eq!(n.journey_id.as_deref(), Some("j-0123456789"));
        assert_eq!(n.to_json(), normalise(&contact(), &raw(GOOD)).unwrap().to_json());
        r.push(("journey_id".into(), "not valid!".into()));
        assert!(normalise(&contact(), &r).unwrap_err().0.contains_key("journey_id"));
    }

    #[test]
    fn a_phone_is_stored_as_typed_and_compared_by_its_digits() {
        assert_eq!(normalise_value(FieldType::Phone, " +41 (0)44-123.45.67 "), "+41 (0)44-123.45.67");
        assert_eq!(phone_digits(" +41 (0)44-123.45.67 "), "+410441234567");
        assert_eq!(normalise_value(FieldType::Phone, "\t. (-) "), "", "separators alone are no answer");
        assert!(is_phone("+410441234567"));
        assert!(!is_phone("12"));
        let mut form = contact();
        form.fields.push(FieldConfig {
            name: "phone".into(),
            kind: FieldType::Phone,
            ..FieldConfig::default()
        });
        let with_phone = |phone: &str| {
            let mut r = raw(GOOD);
            r.push(("phone".into(), phone.into()));
            normalise(&form, &r).unwrap()
        };
        let (dashed, plain) = (with_phone(" 0912-345-678 "), with_phone("0912345678"));
        assert_eq!(dashed.get("phone"), Some("0912-345-678"), "stored as typed, trimmed");
        assert_eq!(dashed.content_json(), plain.content_json(), "the same content");
        assert_eq!(plain.content_json(), plain.to_json(), "digits only: compared as stored");
        assert_eq!(stored_content_json(&form, &dashed.to_json()).as_deref(), Some(plain.to_json().as_str()));
        assert_ne!(with_phone("0912-345-679").content_json(), plain.content_json());
    }

    #[test]
    fn full_width_phone_and_email_are_valid_and_kept_as_typed() {
        let typed = raw(&[
            ("name", "林美"),
            ("email", "ＭＥＩ＠ｅｘａｍｐｌｅ．ｃｏｍ"),
            ("topic", "Sales"),
            ("message", "Hi"),
        ]);
        let n = normalise(&contact(), &typed).unwrap();
        assert_eq!(n.get("email"), Some("ｍｅｉ＠ｅｘａｍｐｌｅ．ｃｏｍ"), "what was typed, lower-cased");
        assert!(check_value(
            &FieldConfig {
                name: "phone".into(),
                label: None,
                kind: FieldType::Phone,
                ..FieldConfig::default()
            },
            "０９１２－３４５－６７８",
        )
        .is_ok());
    }
}
