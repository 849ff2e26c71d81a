//! What people type in Chinese and Japanese: the ideographic space, characters (not bytes)
//! against the length limits, internationalised email domains.

use std::sync::LazyLock;

use serde::Deserialize;

use super::fields::normalise;
use super::{FieldConfig, FieldError, FormSchema};

#[derive(Deserialize)]
struct Fields {
    fields: Vec<FieldConfig>,
}

/// The demo form's fields (name 120 characters, email, topic, message).
static FIELDS: LazyLock<Vec<FieldConfig>> = LazyLock::new(|| {
    let text = r#"
[[fields]]
name = "name"
required = true
max_length = 120
[[fields]]
name = "email"
type = "email"
required = true
[[fields]]
name = "topic"
type = "select"
required = true
options = ["Sales", "Support"]
[[fields]]
name = "message"
type = "textarea"
required = true
"#;
    toml::from_str::<Fields>(text).unwrap().fields
});

fn contact() -> FormSchema<'static> {
    FormSchema {
        fields: &FIELDS,
        honeypot: "",
        ignore_fields: &[],
        undeclared: crate::domain::Undeclared::Reject,
    }
}

fn raw(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn the_ideographic_space_counts_as_a_space() {
    let n = normalise(
        contact(),
        &raw(&[
            ("name", "\u{3000}陳\u{3000}\u{3000}小明\u{3000}"),
            ("email", "chen@example.tw\u{3000}"),
            ("topic", "Sales"),
            ("message", "你好\u{3000}\n"),
        ]),
    )
    .unwrap();
    assert_eq!(n.get("name"), Some("陳 小明"));
    assert_eq!(n.get("email"), Some("chen@example.tw"));
    assert_eq!(n.get("message"), Some("你好"));
    let blank = normalise(
        contact(),
        &raw(&[("name", "\u{3000}\u{3000}"), ("email", "a@b.ch"), ("topic", "Sales"), ("message", "x")]),
    );
    assert_eq!(blank.unwrap_err().0["name"], [FieldError::Required]);
}

#[test]
fn length_limits_count_characters_not_bytes() {
    let at_limit = "名".repeat(120);
    let ok = normalise(
        contact(),
        &raw(&[("name", &at_limit), ("email", "a@b.ch"), ("topic", "Sales"), ("message", "x")]),
    );
    assert_eq!(ok.unwrap().get("name").map(|n| n.chars().count()), Some(120), "360 bytes, 120 characters");
    let over = "名".repeat(121);
    let e = normalise(
        contact(),
        &raw(&[("name", &over), ("email", "a@b.ch"), ("topic", "Sales"), ("message", "x")]),
    );
    assert_eq!(e.unwrap_err().0["name"], [FieldError::TooLong { max: 120 }]);
}

#[test]
fn internationalised_email_domains_are_accepted_as_typed() {
    let n = normalise(
        contact(),
        &raw(&[("name", "陳"), ("email", "chen@例子.台灣"), ("topic", "Sales"), ("message", "x")]),
    )
    .unwrap();
    assert_eq!(n.get("email"), Some("chen@例子.台灣"));
    assert_eq!(super::ascii_email("chen@例子.台灣").as_deref(), Some("chen@xn--fsqu00a.xn--kpry57d"));
}
