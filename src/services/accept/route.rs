//! Which of a form's routes (`[[forms.F.routes]]`) a submission takes: the first whose
//! `when` holds for its normalised fields, its locale, its phone's region and its spam
//! verdict. A pure function of those, so a plan decides it before the transaction.

use std::collections::BTreeMap;

use crate::base::i18n::Locale;
use crate::config::{FormConfig, LocaleChoice, RouteConfig, WhenValue};
use crate::domain::{FieldType, NormalisedFields, SEVERAL};
use crate::services::duplicates::canonical;

/// What a route's `when` is held against.
#[derive(Debug, Clone, Default)]
pub struct Facts<'a> {
    /// The normalised fields (several chosen options joined by `SEVERAL`).
    pub fields: BTreeMap<&'a str, &'a str>,
    /// The submission's locale tag: the negotiated one, else the form's.
    pub locale: &'static str,
    /// The ISO 3166 region of the canonical phone (the first phone field's).
    pub phone_region: Option<String>,
    pub spam: bool,
}

impl<'a> Facts<'a> {
    /// The facts of `fields` submitted to `form`.
    pub fn of(form: &FormConfig, fields: &'a NormalisedFields) -> Facts<'a> {
        Facts::of_values(form, fields.iter().collect(), fields.locale, fields.spam_reason().is_some())
    }

    /// The facts of `values` (as stored) submitted to `form` in `locale` (a tag; `None`: the
    /// form's), spam or not.
    pub fn of_values(
        form: &FormConfig,
        values: BTreeMap<&'a str, &'a str>,
        locale: Option<&str>,
        spam: bool,
    ) -> Facts<'a> {
        let contact = canonical::Contact::of(form, |name| values.get(name).copied());
        let fallback = match form.locale {
            LocaleChoice::Fixed(l) => l,
            LocaleChoice::Auto => form.locales.first().copied().unwrap_or(Locale::En),
        };
        Facts {
            locale: locale.and_then(Locale::parse).unwrap_or(fallback).tag(),
            phone_region: contact.phone.and_then(|p| canonical::region(&p.e164)),
            spam,
            fields: values,
        }
    }
}

/// The first of `form`'s routes whose `when` holds, with its index.
pub fn first<'f>(form: &'f FormConfig, facts: &Facts<'_>) -> Option<(usize, &'f RouteConfig)> {
    form.routes.iter().enumerate().find(|(_, r)| r.when.iter().all(|(k, v)| holds(form, facts, k, v)))
}

/// Whether `when.key = value` holds. A field of the form is looked at before the facts of
/// the same name.
fn holds(form: &FormConfig, facts: &Facts<'_>, key: &str, value: &WhenValue) -> bool {
    let accepted = value.accepted();
    let any = |v: &str| accepted.iter().any(|a| a == v);
    if let Some(field) = form.field(key) {
        let stored = facts.fields.get(key).copied();
        return match field.kind {
            // Unticked is not stored: it is `false`.
            FieldType::Checkbox => any(if stored.is_some() { "true" } else { "false" }),
            _ if field.takes_several() => stored.is_some_and(|s| s.split(SEVERAL).any(any)),
            _ => stored.is_some_and(any),
        };
    }
    match key {
        "locale" => accepted.iter().any(|a| Locale::parse(a).is_some_and(|l| l.tag() == facts.locale)),
        "phone_region" => {
            facts.phone_region.as_deref().is_some_and(|r| accepted.iter().any(|a| a.eq_ignore_ascii_case(r)))
        }
        "spam" => any(if facts.spam { "true" } else { "false" }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    const FORM: &str = r#"
[forms.f]
title = "F"
default_region = "TW"
fields = [
  { name = "topic", type = "select", options = ["Support", "Returns", "Sales"] },
  { name = "products", type = "checkboxes", options = ["A", "B", "C"] },
  { name = "phone", type = "phone" },
  { name = "vip", type = "checkbox" },
  { name = "message", type = "textarea" },
]
"#;

    fn form(routes: &str) -> FormConfig {
        let config = Config::parse(&format!("{FORM}{routes}")).unwrap();
        config.forms["f"].clone()
    }

    fn facts<'a>(fields: &[(&'a str, &'a str)], locale: &'static str, spam: bool) -> Facts<'a> {
        let form = form("");
        let fields: BTreeMap<&str, &str> = fields.iter().copied().collect();
        let contact = canonical::Contact::of(&form, |n| fields.get(n).copied());
        Facts { phone_region: contact.phone.and_then(|p| canonical::region(&p.e164)), fields, locale, spam }
    }

    /// (routes, fields, locale, spam, whether the route matches).
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'static str, bool, bool);

    #[test]
    fn each_kind_of_when_key_matches_as_documented() {
        let support = "[[forms.f.routes]]\nwhen = { topic = [\"Support\", \"Returns\"] }\n";
        let cases: &[Case<'_>] = &[
            (support, &[("topic", "Returns")], "en", false, true),
            (support, &[("topic", "Sales")], "en", false, false),
            (support, &[], "en", false, false),
            ("[[forms.f.routes]]\nwhen = { topic = \"Sales\" }\n", &[("topic", "Sales")], "en", false, true),
            ("[[forms.f.routes]]\nwhen = { products = \"B\" }\n", &[("products", "A\nB")], "en", false, true),
            (
                "[[forms.f.routes]]\nwhen = { products = [\"C\"] }\n",
                &[("products", "A\nB")],
                "en",
                false,
                false,
            ),
            ("[[forms.f.routes]]\nwhen = { vip = true }\n", &[("vip", "true")], "en", false, true),
            ("[[forms.f.routes]]\nwhen = { vip = false }\n", &[], "en", false, true),
            ("[[forms.f.routes]]\nwhen = { vip = true }\n", &[], "en", false, false),
            ("[[forms.f.routes]]\nwhen = { locale = \"zh-TW\" }\n", &[], "zh-TW", false, true),
            ("[[forms.f.routes]]\nwhen = { locale = \"zh-tw\" }\n", &[], "zh-TW", false, true),
            ("[[forms.f.routes]]\nwhen = { locale = \"zh-TW\" }\n", &[], "en", false, false),
            (
                "[[forms.f.routes]]\nwhen = { phone_region = \"TW\" }\n",
                &[("phone", "0912 345 678")],
                "en",
                false,
                true,
            ),
            (
                "[[forms.f.routes]]\nwhen = { phone_region = \"JP\" }\n",
                &[("phone", "+81 3-1234-5678")],
                "en",
                false,
                true,
            ),
            (
                "[[forms.f.routes]]\nwhen = { phone_region = \"TW\" }\n",
                &[("phone", "+81 3-1234-5678")],
                "en",
                false,
                false,
            ),
            ("[[forms.f.routes]]\nwhen = { phone_region = \"TW\" }\n", &[], "en", false, false),
            ("[[forms.f.routes]]\nwhen = { spam = true }\n", &[], "en", true, true),
            ("[[forms.f.routes]]\nwhen = { spam = false }\n", &[], "en", true, false),
            ("[[forms.f.routes]]\nwhen = { message = \"hi\" }\n", &[("message", "hi")], "en", false, true),
            // Every key must hold.
            (
                "[[forms.f.routes]]\nwhen = { topic = \"Support\", locale = \"zh-TW\" }\n",
                &[("topic", "Support")],
                "en",
                false,
                false,
            ),
            (
                "[[forms.f.routes]]\nwhen = { topic = \"Support\", locale = \"zh-TW\" }\n",
                &[("topic", "Support")],
                "zh-TW",
                false,
                true,
            ),
            // No `when`: always.
            ("[[forms.f.routes]]\nname = \"all\"\n", &[], "en", false, true),
        ];
        for (routes, fields, locale, spam, expected) in cases {
            let form = form(routes);
            let got = first(&form, &facts(fields, locale, *spam)).is_some();
            assert_eq!(got, *expected, "{routes} with {fields:?} {locale} spam={spam}");
        }
    }

    #[test]
    fn the_first_route_that_holds_is_taken_and_named_by_index_when_unnamed() {
        let form = form(
            "[[forms.f.routes]]\nname = \"support\"\nwhen = { topic = \"Support\" }\n\
             [[forms.f.routes]]\nwhen = { topic = [\"Support\", \"Sales\"] }\n",
        );
        let (i, r) = first(&form, &facts(&[("topic", "Support")], "en", false)).unwrap();
        assert_eq!(r.label(i), "support");
        let (i, r) = first(&form, &facts(&[("topic", "Sales")], "en", false)).unwrap();
        assert_eq!(r.label(i), "#1");
        assert!(form.route("#1").is_some() && form.route("support").is_some() && form.route("#0").is_none());
    }
}
