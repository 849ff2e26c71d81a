//! How alike two submissions of one form are, and why.

use std::collections::{BTreeMap, BTreeSet};

use crate::config::FormConfig;
use crate::domain::FieldType;

/// Pairs scoring below this are not stored.
pub const MIN_SCORE: f64 = 0.5;

/// What the two submissions share besides their fields.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shared {
    pub email: bool,
    pub phone: bool,
    /// Identical normalised content (the fingerprint), both without a key.
    pub content: bool,
}

/// A score in 0..=1 and the reasons for it; `None` below `MIN_SCORE`.
/// Same email 0.5 (or same phone 0.45, both 0.6); each equal choice field (a topic) +0.25;
/// free text +0.25 × its word overlap; identical keyless content is 1.0.
pub fn score(
    form: &FormConfig,
    new: &BTreeMap<String, String>,
    old: &BTreeMap<String, String>,
    shared: Shared,
) -> Option<(f64, Vec<String>)> {
    if shared.content {
        return Some((1.0, vec!["identical content, sent without an operation ID".into()]));
    }
    if !shared.email && !shared.phone {
        return None; // alike text from different people is not a duplicate
    }
    let mut reasons = Vec::new();
    let mut score: f64 = match (shared.email, shared.phone) {
        (true, true) => 0.6,
        (true, false) => 0.5,
        (false, true) => 0.45,
        (false, false) => 0.0,
    };
    if shared.email {
        reasons.push("same email address".to_string());
    }
    if shared.phone {
        reasons.push("same phone number".to_string());
    }
    for field in &form.fields {
        let (a, b) = (new.get(&field.name), old.get(&field.name));
        match field.kind {
            FieldType::Select if a.is_some() && a == b => {
                score += 0.25;
                reasons.push(format!("same {}", field.label().to_lowercase()));
            }
            FieldType::Select if a.is_some() && b.is_some() => {
                reasons.push(format!("different {}", field.label().to_lowercase()));
            }
            FieldType::Textarea => {
                let similarity = overlap(a.map_or("", String::as_str), b.map_or("", String::as_str));
                score += 0.25 * similarity;
                if similarity >= 0.3 {
                    reasons.push(format!(
                        "{} {:.0}% alike",
                        field.label().to_lowercase(),
                        similarity * 100.0
                    ));
                }
            }
            _ => {}
        }
    }
    let score = score.min(1.0);
    (score >= MIN_SCORE).then_some((score, reasons))
}

/// Jaccard overlap of the two texts' words (lower case, 3+ letters).
fn overlap(a: &str, b: &str) -> f64 {
    let words = |s: &str| -> BTreeSet<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 3)
            .map(str::to_lowercase)
            .collect()
    };
    let (a, b) = (words(a), words(b));
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    a.intersection(&b).count() as f64 / a.union(&b).count() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn fields(topic: &str, message: &str) -> BTreeMap<String, String> {
        [("email", "ada@example.com"), ("topic", topic), ("message", message)]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_same_topic_repeat_outscores_a_different_topic() {
        let form = &Config::builtin().unwrap().forms["contact"];
        let email = Shared { email: true, ..Shared::default() };
        let first = fields("Sales", "Please send a quote for 40 units of the X200");
        let (same, reasons) =
            score(form, &fields("Sales", "Please send me a quote for 40 units of X200"), &first, email)
                .unwrap();
        assert!(same >= 0.9, "{same}");
        assert_eq!(reasons[..2], ["same email address".to_string(), "same topic".to_string()]);
        let (other, reasons) = score(form, &fields("Support", "My X200 is broken"), &first, email).unwrap();
        assert!(other < same && other < 0.8, "{other}");
        assert!(reasons.contains(&"different topic".to_string()));
        assert!(score(form, &first, &first, Shared::default()).is_none(), "no shared contact: no pair");
    }
}
