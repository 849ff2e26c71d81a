//! Property tests over field normalisation with arbitrary names and values: it never
//! panics, names every refused field, and what it accepts is clean and stable (normalising
//! the result again changes nothing).

use proptest::prelude::*;
use unicode_normalization::is_nfc;

use super::fields::{normalise, RawFields};
use super::invisible::is_invisible;
use crate::config::{Config, FormConfig};

/// A form with one field of every type.
fn form() -> FormConfig {
    let toml = r#"
        [forms.f]
        title = "All types"
        [[forms.f.fields]]
        name = "name"
        [[forms.f.fields]]
        name = "message"
        type = "textarea"
        [[forms.f.fields]]
        name = "email"
        type = "email"
        [[forms.f.fields]]
        name = "phone"
        type = "phone"
        [[forms.f.fields]]
        name = "topic"
        type = "select"
        options = ["Sales", "Ärger", "ﬁne"]
    "#;
    Config::parse(toml).unwrap().forms["f"].clone()
}

const NAMES: &[&str] = &["name", "message", "email", "phone", "topic", "website", "operation_id", "x"];

/// Text with the characters normalisation and validation care about.
fn value() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        any::<String>(),
        "[ \t\r\n]{0,4}",
        "[a-zA-Z0-9@.+()-]{0,12}",
        Just("e\u{301}".to_string()),
        Just("\u{212B}".to_string()),
        Just("\u{202E}".to_string()),
        Just("\u{200B}".to_string()),
        Just("\u{200D}".to_string()),
        Just("İ".to_string()),
        Just("ß".to_string()),
        Just("\u{0345}".to_string()),
        Just("ada@example.com".to_string()),
        Just("+41 44 123 45 67".to_string()),
        Just("Sales".to_string()),
    ];
    proptest::collection::vec(piece, 0..5).prop_map(|p| p.concat())
}

fn raw() -> impl Strategy<Value = RawFields> {
    let name = prop_oneof![proptest::sample::select(NAMES).prop_map(String::from), any::<String>()];
    proptest::collection::vec((name, value()), 0..8)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn normalisation_never_panics_and_accepts_only_clean_stable_values(raw in raw()) {
        let form = form();
        match normalise(&form, &raw) {
            Ok(fields) => {
                let again: RawFields = fields.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
                for (name, value) in fields.iter() {
                    prop_assert!(!value.chars().any(is_invisible), "{name}: {value:?}");
                    prop_assert!(is_nfc(value), "{name}: {value:?}");
                    prop_assert!(value.chars().count() <= form.field(name).unwrap().max_length());
                }
                let renormalised = normalise(&form, &again).map(|f| f.to_json());
                prop_assert_eq!(renormalised, Ok(fields.to_json()));
            }
            Err(errors) => {
                for field in errors.0.keys() {
                    prop_assert!(raw.iter().any(|(n, _)| n == field) || form.field(field).is_some());
                }
            }
        }
    }

    #[test]
    fn an_invisible_character_is_refused_by_field_name(prefix in "[a-z ]{0,8}", at in 0usize..3) {
        let c = ['\u{202E}', '\u{2067}', '\u{200B}'][at];
        let raw: RawFields = vec![("name".into(), format!("{prefix}{c}Ada")), ("email".into(), "a@b.co".into())];
        let errors = normalise(&form(), &raw).unwrap_err();
        prop_assert!(errors.0.contains_key("name"), "{errors:?}");
    }
}
