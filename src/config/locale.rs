//! A form's languages (`locale`, `locales`, `time_zone`) and its own texts per locale
//! (`[forms.F.texts.LOCALE]`): which locale a visitor gets and the form's words in it.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

use super::{EmailTexts, FormConfig};
use crate::base::i18n::{negotiate, Locale};
use crate::domain::{FieldConfig, FieldErrors};

/// `locale = "zh-TW"` fixes the language; `"auto"` negotiates it from `Accept-Language`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocaleChoice {
    Auto,
    Fixed(Locale),
}

impl Default for LocaleChoice {
    fn default() -> Self {
        LocaleChoice::Fixed(Locale::En)
    }
}

impl<'de> Deserialize<'de> for LocaleChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let tag = String::deserialize(d)?;
        if tag.eq_ignore_ascii_case("auto") {
            return Ok(LocaleChoice::Auto);
        }
        Locale::parse(&tag).map(LocaleChoice::Fixed).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`{tag}` is neither `auto` nor a shipped locale (en, zh-TW, zh-CN, ja)"
            ))
        })
    }
}

/// `[forms.F.texts.LOCALE]`: the form's own words in one locale; each unset text falls back
/// to the form's first locale (its top-level `title`, `label`s, options and `[email]`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormTexts {
    pub title: Option<String>,
    pub intro: Option<String>,
    /// Field name → label.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Field name → (option value → the text shown for it; the value is what is stored).
    #[serde(default)]
    pub options: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(default)]
    pub email: EmailTexts,
}

impl FormConfig {
    /// The locale the form's top-level texts are written in: the first of `locales`, else
    /// the fixed `locale`, else `en`. Every missing translation falls back to it.
    pub fn first_locale(&self) -> Locale {
        match (self.locales.first(), self.locale) {
            (Some(l), _) => *l,
            (None, LocaleChoice::Fixed(l)) => l,
            (None, LocaleChoice::Auto) => Locale::En,
        }
    }

    /// The locales an `auto` form offers (all shipped ones when `locales` is empty).
    pub fn offered_locales(&self) -> Vec<Locale> {
        match self.locale {
            LocaleChoice::Fixed(l) => vec![l],
            LocaleChoice::Auto if self.locales.is_empty() => Locale::ALL.to_vec(),
            LocaleChoice::Auto => self.locales.clone(),
        }
    }

    /// The visitor's locale for this form, given their `Accept-Language`.
    pub fn locale_for(&self, accept_language: Option<&str>) -> Locale {
        match self.locale {
            LocaleChoice::Fixed(l) => l,
            LocaleChoice::Auto => negotiate(accept_language, &self.offered_locales(), self.first_locale()),
        }
    }

    /// The visitor's locale worth storing with a submission: on an `auto` form the one
    /// negotiated from `accept_language` (their confirmation is written in it); `None` on a
    /// form with a fixed locale.
    pub fn visitor_locale(&self, accept_language: Option<&str>) -> Option<Locale> {
        (self.locale == LocaleChoice::Auto).then(|| self.locale_for(accept_language))
    }

    /// The locale of the form's emails to its owners: the fixed `locale`, else the first
    /// locale (a confirmation on an `auto` form uses the visitor's, `Job::locale`).
    pub fn email_locale(&self) -> Locale {
        match self.locale {
            LocaleChoice::Fixed(l) => l,
            LocaleChoice::Auto => self.first_locale(),
        }
    }

    /// The texts in `locale`, then in the first locale (the first that has what is asked).
    fn texts_in(&self, locale: Locale) -> impl Iterator<Item = &FormTexts> {
        [locale, self.first_locale()].into_iter().filter_map(|l| self.texts.get(&l))
    }

    pub fn title_in(&self, locale: Locale) -> &str {
        self.texts_in(locale).find_map(|t| t.title.as_deref()).unwrap_or(&self.title)
    }

    pub fn intro_in(&self, locale: Locale) -> Option<&str> {
        self.texts_in(locale).find_map(|t| t.intro.as_deref()).or(self.intro.as_deref())
    }

    pub fn label_in<'a>(&'a self, field: &'a FieldConfig, locale: Locale) -> &'a str {
        self.texts_in(locale).find_map(|t| t.labels.get(&field.name)).map_or(field.label(), String::as_str)
    }

    /// `field`'s label on the admin pages in `locale`: the form's own label in that locale
    /// (`texts.LOCALE.labels`, or `label` when it is the form's first locale), else the
    /// field's name; never a label in a language the admin did not choose.
    pub fn admin_label<'a>(&'a self, field: &'a FieldConfig, locale: Locale) -> &'a str {
        let translated = self.texts.get(&locale).and_then(|t| t.labels.get(&field.name));
        let own = field.label.as_ref().filter(|_| locale == self.first_locale());
        translated.or(own).map_or(&field.name, String::as_str)
    }

    /// The text shown for `option` (a value of `field`'s options) in `locale`.
    pub fn option_in<'a>(&'a self, field: &FieldConfig, option: &'a str, locale: Locale) -> &'a str {
        self.texts_in(locale)
            .find_map(|t| t.options.get(&field.name).and_then(|o| o.get(option)))
            .map_or(option, String::as_str)
    }

    /// `[forms.F.email]` in `locale`: each text from the locale's table, else the first's.
    pub fn email_in(&self, locale: Locale) -> EmailTexts {
        let pick = |get: fn(&EmailTexts) -> &Option<String>| {
            self.texts_in(locale).find_map(|t| get(&t.email).clone()).or_else(|| get(&self.email).clone())
        };
        EmailTexts {
            confirmation_subject: pick(|e| &e.confirmation_subject),
            confirmation_intro: pick(|e| &e.confirmation_intro),
            signature: pick(|e| &e.signature),
        }
    }

    /// The 422's `errors` in `locale`: `field: [message]`, each naming the field by its label.
    pub fn error_messages(&self, errors: &FieldErrors, locale: Locale) -> BTreeMap<String, Vec<String>> {
        self.messages_naming(errors, locale, |f| self.label_in(f, locale))
    }

    /// `errors` in `locale` as the admin pages say them (each field by its `admin_label`).
    pub fn admin_error_messages(&self, errors: &FieldErrors, locale: Locale) -> Vec<String> {
        self.messages_naming(errors, locale, |f| self.admin_label(f, locale))
            .into_values()
            .flatten()
            .collect()
    }

    fn messages_naming<'a>(
        &'a self,
        errors: &FieldErrors,
        locale: Locale,
        label_of: impl Fn(&'a FieldConfig) -> &'a str,
    ) -> BTreeMap<String, Vec<String>> {
        errors
            .0
            .iter()
            .map(|(name, errs)| {
                let field = self.field(name);
                let label = match field {
                    Some(f) => label_of(f),
                    None => name.as_str(),
                };
                let options: Vec<String> = field
                    .map(|f| f.options.iter().map(|o| self.option_in(f, o, locale).to_string()).collect())
                    .unwrap_or_default();
                (name.clone(), errs.iter().map(|e| e.message(locale, label, &options)).collect())
            })
            .collect()
    }
}

/// The rules of a form's languages and texts.
pub fn form_problems(out: &mut Vec<String>, at: &str, form: &FormConfig) {
    if let LocaleChoice::Fixed(l) = form.locale {
        if !form.locales.is_empty() && !form.locales.contains(&l) {
            out.push(format!("{at}.locales: does not list the form's locale `{l}`"));
        }
    }
    for (locale, texts) in &form.texts {
        let at = format!("{at}.texts.{locale}");
        if !form.offered_locales().contains(locale) && !form.locales.contains(locale) {
            out.push(format!("{at}: `{locale}` is not among the form's locales"));
        }
        for name in texts.labels.keys().chain(texts.options.keys()) {
            if form.field(name).is_none() {
                out.push(format!("{at}: `{name}` is not a field of this form"));
            }
        }
        for (name, options) in &texts.options {
            let Some(field) = form.field(name) else { continue };
            for value in options.keys().filter(|v| !field.options.contains(v)) {
                out.push(format!("{at}.options.{name}: `{value}` is not one of the field's options"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::base::i18n::Locale;
    use crate::config::Config;
    use crate::domain::{normalise, RawFields};

    const FORM: &str = r#"
[forms.contact]
title = "Contact us"
locale = "auto"
locales = ["en", "zh-TW", "ja"]
time_zone = "Asia/Taipei"
[[forms.contact.fields]]
name = "topic"
label = "Topic"
type = "select"
required = true
options = ["Sales", "Support"]
[forms.contact.texts.zh-TW]
title = "聯絡我們"
labels = { topic = "主題" }
options = { topic = { Sales = "業務洽詢" } }
"#;

    #[test]
    fn texts_fall_back_to_the_first_locale_and_messages_use_labels() {
        let config = Config::parse(FORM).unwrap();
        let form = &config.forms["contact"];
        assert!(
            crate::services::check_config::problems(&config).is_empty(),
            "{:?}",
            crate::services::check_config::problems(&config)
        );
        assert_eq!(form.locale_for(Some("zh-TW,zh;q=0.9,en;q=0.5")), Locale::ZhTw);
        assert_eq!(form.locale_for(Some("de-CH,de;q=0.9")), Locale::En, "not offered: the first locale");
        assert_eq!(form.locale_for(Some("zh-CN")), Locale::ZhTw, "the nearest by language");
        assert_eq!(form.title_in(Locale::ZhTw), "聯絡我們");
        assert_eq!(form.title_in(Locale::Ja), "Contact us");
        let topic = form.field("topic").unwrap();
        assert_eq!(form.option_in(topic, "Sales", Locale::ZhTw), "業務洽詢");
        assert_eq!(form.option_in(topic, "Support", Locale::ZhTw), "Support");
        let raw: RawFields = vec![("topic".into(), "Gossip".into())];
        let errors = normalise(form, &raw).unwrap_err();
        assert_eq!(
            form.error_messages(&errors, Locale::ZhTw)["topic"],
            ["「主題」請從以下選項中選擇：業務洽詢、Support"]
        );
        assert_eq!(form.time_zone.to_string(), "Asia/Taipei");
    }

    #[test]
    fn unknown_locales_zones_and_names_are_refused() {
        assert!(Config::parse(&FORM.replace("\"auto\"", "\"fr\"")).unwrap_err().contains("shipped locale"));
        assert!(Config::parse(&FORM.replace("Asia/Taipei", "Asia/Taipeh")).unwrap_err().contains("IANA"));
        let c = Config::parse(&FORM.replace("labels = { topic", "labels = { colour")).unwrap();
        assert!(
            crate::services::check_config::problems(&c).iter().any(|p| p.contains("`colour` is not a field")),
            "{:?}",
            crate::services::check_config::problems(&c)
        );
        let c = Config::parse(&FORM.replace("locale = \"auto\"", "locale = \"zh-CN\"")).unwrap();
        assert!(crate::services::check_config::problems(&c)
            .iter()
            .any(|p| p.contains("does not list the form's locale")));
    }
}
