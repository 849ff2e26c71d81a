//! What the review page shows of a pair beyond its stored reasons (which hold no personal
//! data): the canonical values both sides matched on, and the product codes and quantities
//! on each side, computed from the stored fields while they are kept.

use std::collections::BTreeMap;

use super::canonical::Contact;
use super::text::profile;
use crate::base::i18n::{Arg, Locale};
use crate::config::FormConfig;
use crate::domain::FieldType;

fn contact(form: &FormConfig, fields: &BTreeMap<String, String>) -> Contact {
    Contact::of(form, |n| fields.get(n).map(String::as_str))
}

fn text(form: &FormConfig, fields: &BTreeMap<String, String>) -> String {
    form.fields
        .iter()
        .filter(|f| matches!(f.kind, FieldType::Textarea | FieldType::Text))
        .filter_map(|f| fields.get(&f.name))
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Readable lines in `locale`: "phone +886 912 345 678 on both", "product codes: X200 → A17".
pub fn evidence(
    form: &FormConfig,
    original: &BTreeMap<String, String>,
    duplicate: &BTreeMap<String, String>,
    locale: Locale,
) -> Vec<String> {
    let one = |key: &str, x: &str| locale.format(key, &[("a1", Arg::Str(x))]);
    let two = |key: &str, x: &str, y: &str| locale.format(key, &[("a1", Arg::Str(x)), ("a2", Arg::Str(y))]);
    if original.is_empty() || duplicate.is_empty() {
        return Vec::new(); // purged: nothing left to show
    }
    let (a, b) = (contact(form, original), contact(form, duplicate));
    let mut out = Vec::new();
    if let (Some(x), Some(y)) = (&a.email, &b.email) {
        out.push(match x == y {
            true => one("admin-evidence-email-same", x),
            false => two("admin-evidence-email-differs", x, y),
        });
    }
    if let (Some(x), Some(y)) = (&a.phone, &b.phone) {
        out.push(match x.e164 == y.e164 {
            true => one("admin-evidence-phone-same", &x.shown),
            false => two("admin-evidence-phone-differs", &x.shown, &y.shown),
        });
    }
    if let (Some(n), Some(m)) = (&a.name, &b.name) {
        if n == m {
            out.push(match (&a.company, &b.company) {
                (Some(c), Some(d)) if c == d => two("admin-evidence-name-company-same", n, c),
                _ => one("admin-evidence-name-same", n),
            });
        }
    }
    let (p, q) = (profile(&text(form, original)), profile(&text(form, duplicate)));
    let list = |s: &std::collections::BTreeSet<String>| match s.is_empty() {
        true => locale.text("admin-evidence-none"),
        false => s.iter().cloned().collect::<Vec<_>>().join(", "),
    };
    if !p.codes.is_empty() || !q.codes.is_empty() {
        out.push(match p.codes == q.codes {
            true => one("admin-evidence-codes-same", &list(&p.codes)),
            false => two("admin-evidence-codes-differ", &list(&p.codes), &list(&q.codes)),
        });
    }
    if p.numbers != q.numbers && !p.numbers.is_empty() && !q.numbers.is_empty() {
        out.push(two("admin-evidence-numbers", &list(&p.numbers), &list(&q.numbers)));
    }
    out
}
