//! The visitor's and the admin's language: the shipped locales (`locales/*/onceform.ftl` for
//! visitors, `locales/*/admin.ftl` for the admin pages, Fluent), the texts in each,
//! negotiation from `Accept-Language`, and dates in a locale's style.

mod date;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use fluent_langneg::{negotiate_languages, NegotiationStrategy};
use unic_langid::LanguageIdentifier;

pub use date::{local_date_time, TimeZone};

/// A shipped locale. Every visitor-facing text exists in each (a test holds them to `en`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Locale {
    #[default]
    En,
    ZhTw,
    ZhCn,
    Ja,
}

const SOURCES: [(Locale, &str); 4] = [
    (Locale::En, include_str!("../../../locales/en/onceform.ftl")),
    (Locale::ZhTw, include_str!("../../../locales/zh-TW/onceform.ftl")),
    (Locale::ZhCn, include_str!("../../../locales/zh-CN/onceform.ftl")),
    (Locale::Ja, include_str!("../../../locales/ja/onceform.ftl")),
];

/// The admin pages' texts, in the same bundles (their keys start with `admin-`).
const ADMIN_SOURCES: [(Locale, &str); 4] = [
    (Locale::En, include_str!("../../../locales/en/admin.ftl")),
    (Locale::ZhTw, include_str!("../../../locales/zh-TW/admin.ftl")),
    (Locale::ZhCn, include_str!("../../../locales/zh-CN/admin.ftl")),
    (Locale::Ja, include_str!("../../../locales/ja/admin.ftl")),
];

impl Locale {
    pub const ALL: [Locale; 4] = [Locale::En, Locale::ZhTw, Locale::ZhCn, Locale::Ja];

    /// The BCP 47 tag (`<html lang>`, `Content-Language`, the configuration's spelling).
    pub fn tag(self) -> &'static str {
        match self {
            Locale::En => "en",
            Locale::ZhTw => "zh-TW",
            Locale::ZhCn => "zh-CN",
            Locale::Ja => "ja",
        }
    }

    /// A shipped locale by its tag (any case).
    pub fn parse(tag: &str) -> Option<Locale> {
        Locale::ALL.into_iter().find(|l| l.tag().eq_ignore_ascii_case(tag.trim()))
    }

    fn id(self) -> LanguageIdentifier {
        self.tag().parse().unwrap_or_default()
    }

    /// The text `key` with no arguments.
    pub fn text(self, key: &str) -> String {
        self.format(key, &[])
    }

    /// The text `key` with its placeables filled from `args`; the `en` text where this
    /// locale lacks it, and the key itself where no locale has it.
    pub fn format(self, key: &str, args: &[(&str, Arg<'_>)]) -> String {
        self.lookup(key, args).unwrap_or_else(|| key.to_string())
    }

    /// The text `key` as `format` gives it, or `None` where no locale has it.
    pub fn lookup(self, key: &str, args: &[(&str, Arg<'_>)]) -> Option<String> {
        let mut fluent_args = FluentArgs::new();
        for (name, value) in args {
            fluent_args.set(*name, value.value());
        }
        let bundles = bundles();
        [self, Locale::En].iter().filter_map(|l| bundles.get(l)).find_map(|bundle| {
            let pattern = bundle.get_message(key)?.value()?;
            let mut errors = Vec::new();
            let text = bundle.format_pattern(pattern, Some(&fluent_args), &mut errors);
            if !errors.is_empty() {
                tracing::warn!(key, ?errors, "locale text with errors");
            }
            Some(text.into_owned())
        })
    }

    /// Words joined as a list in this locale (`a, b` or `a、b`).
    pub fn list(self, items: &[String]) -> String {
        items.join(&self.text("list-separator"))
    }
}

impl<'de> serde::Deserialize<'de> for Locale {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let tag = String::deserialize(d)?;
        Locale::parse(&tag).ok_or_else(|| {
            serde::de::Error::custom(format!("`{tag}` is not a shipped locale (en, zh-TW, zh-CN, ja)"))
        })
    }
}

impl fmt::Display for Locale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.tag())
    }
}

/// One placeable's value.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    Str(&'a str),
    Num(i64),
}

impl Arg<'_> {
    fn value(&self) -> FluentValue<'static> {
        match *self {
            Arg::Str(s) => FluentValue::from(s.to_string()),
            Arg::Num(n) => FluentValue::from(n),
        }
    }
}

type Bundle = FluentBundle<FluentResource>;

fn bundles() -> &'static BTreeMap<Locale, Bundle> {
    static BUNDLES: OnceLock<BTreeMap<Locale, Bundle>> = OnceLock::new();
    BUNDLES.get_or_init(|| {
        SOURCES
            .iter()
            .zip(ADMIN_SOURCES.iter())
            .map(|((l, source), (_, admin))| (*l, bundle(*l, &[source, admin])))
            .collect()
    })
}

fn bundle(locale: Locale, sources: &[&str]) -> Bundle {
    let mut bundle = FluentBundle::new_concurrent(vec![locale.id()]);
    // Texts go into escaped HTML and plain-text email: no invisible isolation marks.
    bundle.set_use_isolating(false);
    for source in sources {
        let resource = FluentResource::try_new(source.to_string()).unwrap_or_else(|(partial, errors)| {
            tracing::error!(locale = locale.tag(), ?errors, "locale file does not parse");
            partial
        });
        if let Err(errors) = bundle.add_resource(resource) {
            tracing::error!(locale = locale.tag(), ?errors, "locale file has duplicate keys");
        }
    }
    bundle
}

/// The best of `available` for an `Accept-Language` header; `default` when none fits.
/// `zh-Hant`, `zh-HK` and `zh-MO` ask for Traditional Chinese (`zh-TW`), `zh-Hans` and
/// `zh-SG` for Simplified (`zh-CN`).
pub fn negotiate(accept_language: Option<&str>, available: &[Locale], default: Locale) -> Locale {
    let Some(header) = accept_language.filter(|h| h.len() <= 512) else { return default };
    let requested: Vec<LanguageIdentifier> = fluent_langneg::accepted_languages::parse(header)
        .into_iter()
        .take(16)
        .map(chinese_by_script)
        .collect();
    let ids: Vec<LanguageIdentifier> = available.iter().map(|l| l.id()).collect();
    let chosen = negotiate_languages(&requested, &ids, None, NegotiationStrategy::Lookup);
    chosen.first().and_then(|id| available.iter().copied().find(|l| l.id() == **id)).unwrap_or(default)
}

fn chinese_by_script(id: LanguageIdentifier) -> LanguageIdentifier {
    if id.language.as_str() != "zh" {
        return id;
    }
    let script = id.script.map(|s| s.as_str().to_ascii_lowercase());
    let region = id.region.map(|r| r.as_str().to_ascii_uppercase());
    let tag = match (script.as_deref(), region.as_deref()) {
        (Some("hant"), _) | (_, Some("TW" | "HK" | "MO")) => "zh-TW",
        (Some("hans"), _) | (_, Some("CN" | "SG")) => "zh-CN",
        _ => return id,
    };
    tag.parse().unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use fluent_syntax::ast::Entry;

    use super::*;

    fn keys(source: &str) -> BTreeSet<String> {
        let resource = FluentResource::try_new(source.to_string()).unwrap();
        resource
            .entries()
            .filter_map(|e| match e {
                Entry::Message(m) => Some(m.id.name.to_string()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_shipped_locale_has_every_key_of_en_and_parses() {
        for sources in [SOURCES, ADMIN_SOURCES] {
            same_keys_as_en(sources);
        }
    }

    fn same_keys_as_en(sources: [(Locale, &str); 4]) {
        let en = keys(sources[0].1);
        assert!(en.len() > 50, "{en:?}");
        for (locale, source) in sources {
            if let Err((_, errors)) = FluentResource::try_new(source.to_string()) {
                panic!("{locale}: {errors:?}");
            }
            let have = keys(source);
            let missing: Vec<_> = en.difference(&have).collect();
            assert!(missing.is_empty(), "{locale} lacks {missing:?}");
            let extra: Vec<_> = have.difference(&en).collect();
            assert!(extra.is_empty(), "{locale} has keys en lacks: {extra:?}");
        }
    }

    #[test]
    fn every_text_formats_with_the_arguments_the_code_gives() {
        let args = [
            ("label", Arg::Str("L")),
            ("form", Arg::Str("F")),
            ("max", Arg::Num(5)),
            ("options", Arg::Str("a")),
            ("limit", Arg::Str("10")),
            ("seconds", Arg::Num(3)),
            ("name", Arg::Str("N")),
            ("subject", Arg::Str("S")),
            ("reference", Arg::Str("R")),
            ("date", Arg::Str("D")),
            ("weekday", Arg::Str("W")),
            ("day", Arg::Num(1)),
            ("month", Arg::Num(2)),
            ("month-name", Arg::Str("M")),
            ("year", Arg::Num(2026)),
            ("time", Arg::Str("T")),
            ("zone", Arg::Str("Z")),
            ("n", Arg::Num(1)),
            ("path", Arg::Str("P")),
            ("value", Arg::Str("V")),
            ("route", Arg::Str("R")),
            ("a1", Arg::Str("1")),
            ("a2", Arg::Str("2")),
            ("a3", Arg::Str("3")),
            ("hours", Arg::Num(72)),
            ("size", Arg::Num(3)),
            ("count", Arg::Num(2)),
            ("who", Arg::Str("W")),
            ("page", Arg::Num(1)),
            ("pages", Arg::Num(2)),
            ("imported", Arg::Num(1)),
            ("present", Arg::Num(1)),
            ("rejected", Arg::Num(1)),
            ("paired", Arg::Num(1)),
            ("line", Arg::Num(3)),
            ("reason", Arg::Str("R")),
            ("values", Arg::Num(2)),
            ("columns", Arg::Num(3)),
            ("submissions", Arg::Num(1)),
            ("conflicts", Arg::Num(1)),
            ("pairs", Arg::Num(1)),
            ("events", Arg::Num(1)),
            ("quarantined", Arg::Num(1)),
            ("deliveries", Arg::Num(1)),
            ("redacted", Arg::Num(1)),
            ("attachments", Arg::Num(1)),
            ("version", Arg::Str("V")),
        ];
        let mut fluent_args = FluentArgs::new();
        for (name, value) in &args {
            fluent_args.set(*name, value.value());
        }
        for (locale, bundle) in bundles() {
            for key in keys(SOURCES[0].1).into_iter().chain(keys(ADMIN_SOURCES[0].1)) {
                let pattern = bundle.get_message(&key).and_then(|m| m.value()).unwrap();
                let mut errors = Vec::new();
                let text = bundle.format_pattern(pattern, Some(&fluent_args), &mut errors);
                assert!(errors.is_empty(), "{locale} {key}: {errors:?}");
                assert!(!text.trim().is_empty(), "{locale} {key} is empty");
            }
        }
    }

    #[test]
    fn accept_language_picks_among_the_forms_locales() {
        let all = Locale::ALL;
        let pick = |h: &str| negotiate(Some(h), &all, Locale::En);
        assert_eq!(pick("zh-TW,zh;q=0.9,en;q=0.5"), Locale::ZhTw);
        assert_eq!(pick("zh-Hant-HK"), Locale::ZhTw);
        assert_eq!(pick("zh-Hans,en;q=0.5"), Locale::ZhCn);
        assert_eq!(pick("ja-JP,ja;q=0.9"), Locale::Ja);
        assert_eq!(pick("fr-CH, fr;q=0.9, en;q=0.8"), Locale::En);
        assert_eq!(pick("de"), Locale::En);
        assert_eq!(negotiate(Some("ja"), &[Locale::ZhTw, Locale::En], Locale::ZhTw), Locale::ZhTw);
        assert_eq!(negotiate(None, &all, Locale::Ja), Locale::Ja);
        assert_eq!(negotiate(Some("en-US,en;q=0.9"), &[Locale::ZhTw, Locale::En], Locale::ZhTw), Locale::En);
    }

    #[test]
    fn texts_fill_placeables_without_isolation_marks() {
        let t = Locale::ZhTw.format("field-required", &[("label", Arg::Str("電話"))]);
        assert_eq!(t, "請填寫「電話」");
        assert_eq!(
            Locale::En.format("field-too-long", &[("label", Arg::Str("Name")), ("max", Arg::Num(120))]),
            "Name must be at most 120 characters"
        );
        assert_eq!(Locale::Ja.list(&["a".into(), "b".into()]), "a、b");
        assert_eq!(Locale::En.list(&["a".into(), "b".into()]), "a, b");
        assert_eq!(Locale::parse("ZH-tw"), Some(Locale::ZhTw));
        assert_eq!(Locale::parse("fr"), None);
    }
}
