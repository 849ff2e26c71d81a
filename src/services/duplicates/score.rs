//! Whether a later submission repeats an earlier one's request, and why. First: are they
//! the same sender? (the same canonical email, or phone, or name plus company, and no other
//! name where a name was given: a company switchboard shared by colleagues is not an
//! identity). Then: is it the same request? (the free text alike, the same product codes
//! and quantities, the same choices, close in time). The same sender's new request is a
//! verdict of its own, never a repeat.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;

use super::canonical::{self, Contact};
use super::reason::{Gap, Reason};
use super::text::{conflict, profile, similarity, Profile};
use crate::config::FormConfig;
use crate::domain::FieldType;

/// A repeat scoring below this is the same sender's new request.
pub const REPEAT_MIN: f64 = 0.6;

/// One side of a pair: its form, stored fields and time.
pub struct Side<'a> {
    pub form: &'a FormConfig,
    pub fields: &'a BTreeMap<String, String>,
    pub received_at: NaiveDateTime,
    pub fingerprint: &'a str,
    pub keyless: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The same request sent again: listed for review.
    Repeat,
    /// The same sender asking for something else: listed apart, nothing held.
    SameSender,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub verdict: Verdict,
    pub score: f64,
    /// Free of personal data (the review page shows the values themselves).
    pub reasons: Vec<Reason>,
}

/// How a name on one side relates to the other's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Names {
    Same,
    Alike,
    Other,
    Unknown,
}

fn names(a: &Option<String>, b: &Option<String>) -> Names {
    match (a, b) {
        (Some(a), Some(b)) if a == b => Names::Same,
        (Some(a), Some(b)) => match similarity(&profile(a), &profile(b)) >= 0.5 {
            true => Names::Alike,
            false => Names::Other,
        },
        _ => Names::Unknown,
    }
}

fn contact(side: &Side<'_>) -> Contact {
    Contact::of(side.form, |n| side.fields.get(n).map(String::as_str))
}

/// The value of the first field of `kind` as typed.
fn typed<'a>(side: &'a Side<'_>, kind: FieldType) -> Option<&'a str> {
    side.form
        .fields
        .iter()
        .filter(|f| f.kind == kind)
        .find_map(|f| side.fields.get(&f.name))
        .map(String::as_str)
}

/// The free text of a side: its textareas and text fields other than the sender's name
/// and company, in the form's order.
fn free_text(side: &Side<'_>) -> String {
    let d = &side.form.duplicates;
    side.form
        .fields
        .iter()
        .filter(|f| matches!(f.kind, FieldType::Textarea | FieldType::Text))
        .filter(|f| f.name != d.name_field && f.name != d.company_field)
        .filter_map(|f| side.fields.get(&f.name))
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The verdict on `new` against the earlier `old`; `None` when they are not the same sender.
pub fn judge(new: &Side<'_>, old: &Side<'_>) -> Option<Judged> {
    if new.keyless && old.keyless && new.fingerprint == old.fingerprint {
        let reasons = vec![Reason::KeylessRepeat];
        return Some(Judged { verdict: Verdict::Repeat, score: 1.0, reasons });
    }
    let (a, b) = (contact(new), contact(old));
    let email = a.email.is_some() && a.email == b.email;
    let phone = a.phone.is_some() && a.phone.as_ref().map(|p| &p.e164) == b.phone.as_ref().map(|p| &p.e164);
    let name = names(&a.name, &b.name);
    let company = a.company.is_some() && a.company == b.company;
    let mut reasons = Vec::new();
    let written = |kind: FieldType| typed(new, kind) != typed(old, kind);
    let same_sender = match (email, phone, name) {
        // One address with another name on it: a shared mailbox, unless the phone agrees.
        (true, _, Names::Same | Names::Alike | Names::Unknown) | (true, true, Names::Other) => true,
        // A shared number with another name is a switchboard, not an identity.
        (false, true, Names::Same | Names::Alike | Names::Unknown) => true,
        (false, false, Names::Same) => company,
        _ => false,
    };
    if !same_sender {
        return None;
    }
    let mut score = 0.3;
    if email {
        reasons.push(Reason::SameEmail { written_differently: written(FieldType::Email) });
    }
    if phone {
        reasons.push(Reason::SamePhone { written_differently: written(FieldType::Phone) });
    }
    if email && phone {
        score += 0.05;
    }
    match name {
        Names::Same if company => reasons.push(Reason::SameNameAndCompany),
        Names::Same => reasons.push(Reason::SameName),
        Names::Alike => reasons.push(Reason::NamesAlike),
        Names::Other | Names::Unknown => {}
    }
    let (ta, tb) = (profile(&free_text(new)), profile(&free_text(old)));
    let alike = similarity(&ta, &tb);
    score += 0.5 * alike;
    reasons.push(Reason::MessageAlike((alike * 100.0).round() as u32));
    score += exact_evidence(&ta, &tb, &mut reasons);
    score += choices(new, old, &mut reasons);
    let gap = (new.received_at - old.received_at).num_minutes().abs();
    score += match gap {
        0..=120 => 0.1,
        121..=1440 => 0.05,
        1441..=2880 => 0.0,
        _ => -0.05,
    };
    reasons.push(Reason::SentApart(Gap::of_minutes(gap)));
    let score = score.clamp(0.0, 1.0);
    let verdict = if score >= REPEAT_MIN { Verdict::Repeat } else { Verdict::SameSender };
    if verdict == Verdict::SameSender {
        reasons.insert(0, Reason::SameSenderNewRequest);
    }
    Some(Judged { verdict, score, reasons })
}

/// Product codes and quantities compared exactly: another one is strong evidence of a new
/// request, the same one of a repeat.
fn exact_evidence(a: &Profile, b: &Profile, reasons: &mut Vec<Reason>) -> f64 {
    let (codes, numbers) = (conflict(&a.codes, &b.codes), conflict(&a.numbers, &b.numbers));
    let mut score: f64 = 0.0;
    if codes {
        score -= 0.5;
        reasons.push(Reason::DifferentCode);
    }
    if numbers {
        score -= 0.5;
        reasons.push(Reason::DifferentQuantity);
    }
    // Agreement counts only where nothing disagrees (the same product in another quantity
    // is another request).
    if !codes && !numbers {
        if !a.codes.is_empty() && a.codes == b.codes {
            score += 0.15;
            reasons.push(Reason::SameCode);
        } else if a.codes.is_empty() != b.codes.is_empty() {
            score -= 0.05;
        }
        if !a.numbers.is_empty() && a.numbers == b.numbers {
            score += 0.05;
            reasons.push(Reason::SameQuantity);
        }
    }
    score.max(-0.7)
}

/// Choice fields both forms declare: each equal one counts for, each other one against.
fn choices(new: &Side<'_>, old: &Side<'_>, reasons: &mut Vec<Reason>) -> f64 {
    let mut score: f64 = 0.0;
    for field in new.form.fields.iter().filter(|f| f.kind == FieldType::Select) {
        let (Some(a), Some(b)) = (new.fields.get(&field.name), old.fields.get(&field.name)) else { continue };
        if canonical::name(a) == canonical::name(b) {
            score += 0.1;
            reasons.push(Reason::SameChoice { field: field.name.clone() });
        } else {
            score -= 0.2;
            reasons.push(Reason::DifferentChoice {
                field: field.name.clone(),
                was: b.clone(),
                now: a.clone(),
            });
        }
    }
    score.min(0.2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn at(minutes: i64) -> NaiveDateTime {
        chrono::DateTime::from_timestamp(1_764_000_000 + minutes * 60, 0).unwrap().naive_utc()
    }

    fn side<'a>(form: &'a FormConfig, f: &'a BTreeMap<String, String>, minutes: i64) -> Side<'a> {
        Side { form, fields: f, received_at: at(minutes), fingerprint: "", keyless: false }
    }

    #[test]
    fn a_repeat_outscores_the_same_senders_other_product() {
        let form = &Config::builtin().unwrap().forms["contact"];
        let first = fields(&[
            ("name", "Ada"),
            ("email", "ada@example.com"),
            ("topic", "Sales"),
            ("message", "Please send a quote for 40 units of the X200"),
        ]);
        let again = fields(&[
            ("name", "Ada"),
            ("email", "ADA@example.com"),
            ("topic", "Sales"),
            ("message", "Please send me a quote for 40 units of X200 (the first one failed)"),
        ]);
        let other = fields(&[
            ("name", "Ada"),
            ("email", "ada@example.com"),
            ("topic", "Sales"),
            ("message", "Please send a quote for 40 units of the A-17"),
        ]);
        let repeat = judge(&side(form, &again, 5), &side(form, &first, 0)).unwrap();
        assert_eq!(repeat.verdict, Verdict::Repeat, "{repeat:?}");
        assert!(repeat.reasons.contains(&Reason::SameEmail { written_differently: true }), "{repeat:?}");
        let new = judge(&side(form, &other, 60), &side(form, &first, 0)).unwrap();
        assert_eq!(new.verdict, Verdict::SameSender, "{new:?}");
        assert!(new.reasons.contains(&Reason::DifferentCode));
        let stranger =
            fields(&[("name", "Bo"), ("email", "bo@example.com"), ("topic", "Sales"), ("message", "Hi")]);
        assert!(judge(&side(form, &stranger, 1), &side(form, &first, 0)).is_none());
    }
}
