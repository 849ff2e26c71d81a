//! The form schema: the fields a form declares, as the configuration states them
//! (`[[forms.F.fields]]`), and the view of a form that validation needs.

use serde::Deserialize;
use validator::Validate;

#[derive(Debug, Clone, Default, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct FieldConfig {
    #[validate(length(min = 1, max = 64))]
    pub name: String,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(rename = "type", default)]
    pub kind: FieldType,
    #[serde(default)]
    pub required: bool,
    #[validate(range(min = 1, max = 100000))]
    pub max_length: Option<usize>,
    /// select, radio, checkboxes, multiselect: the values a visitor may choose.
    #[serde(default)]
    pub options: Vec<String>,
    /// number: the smallest and largest value; date: the earliest and latest day.
    #[serde(default)]
    pub min: Option<Bound>,
    #[serde(default)]
    pub max: Option<Bound>,
    /// number: values are `min` (or 0) plus a multiple of `step`.
    #[serde(default)]
    pub step: Option<f64>,
    /// consent: the version of the text agreed to, stored with the submission.
    #[serde(default)]
    pub version: Option<String>,
    /// hidden: the value the rendered form carries (a page or script may set another).
    #[serde(default)]
    pub value: Option<String>,
    /// file: the types taken (MIME types, `image/*`, or extensions such as `.pdf`); empty: any.
    #[serde(default)]
    pub accept: Vec<String>,
    /// file: the largest file, in bytes.
    #[serde(default)]
    pub max_bytes: Option<u64>,
    /// file: how many files the field takes (1 unless set).
    #[validate(range(min = 1, max = 20))]
    pub max_files: Option<usize>,
}

impl FieldConfig {
    pub fn label(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.name)
    }

    pub fn max_length(&self) -> usize {
        self.max_length.unwrap_or(match self.kind {
            FieldType::Text | FieldType::Select | FieldType::Radio | FieldType::Hidden => 200,
            FieldType::Textarea => 5000,
            FieldType::Email => 254,
            FieldType::Phone => 32,
            FieldType::Checkbox | FieldType::Consent => 8,
            // One answer; the options each are checked, their list is bounded by the options.
            FieldType::Checkboxes | FieldType::Multiselect => 200,
            FieldType::Number => 40,
            FieldType::Date => 10,
            FieldType::Url => 2000,
            // One reference per file (`FileRef::to_value`: digest, size, type, encoded name).
            FieldType::File => 1000,
        })
    }

    /// file: how many files it takes.
    pub fn max_files(&self) -> usize {
        self.max_files.unwrap_or(1)
    }

    pub fn is_file(&self) -> bool {
        self.kind == FieldType::File
    }

    /// Whether the field takes several values (repeated names in a form post, an array in JSON).
    pub fn takes_several(&self) -> bool {
        matches!(self.kind, FieldType::Checkboxes | FieldType::Multiselect | FieldType::File)
    }

    /// Whether a visitor answers it by ticking (JSON `true`/`false`).
    pub fn is_boolean(&self) -> bool {
        matches!(self.kind, FieldType::Checkbox | FieldType::Consent)
    }

    /// Whether its answer is one or more of `options`.
    pub fn has_options(&self) -> bool {
        matches!(
            self.kind,
            FieldType::Select | FieldType::Radio | FieldType::Checkboxes | FieldType::Multiselect
        )
    }
}

/// A `min` or `max`: a number (`min = 0`), or a day (`min = 2026-01-01`, or as a string).
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    Number(f64),
    Day(chrono::NaiveDate),
}

impl<'de> Deserialize<'de> for Bound {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Bound, D::Error> {
        use serde::de::Error;
        match toml::Value::deserialize(d)? {
            toml::Value::Integer(i) => Ok(Bound::Number(i as f64)),
            toml::Value::Float(f) if f.is_finite() => Ok(Bound::Number(f)),
            toml::Value::Datetime(dt) => day(&dt.to_string())
                .map(Bound::Day)
                .ok_or_else(|| D::Error::custom(format!("`{dt}`: a date bound is a day, YYYY-MM-DD"))),
            toml::Value::String(s) => day(&s)
                .map(Bound::Day)
                .ok_or_else(|| D::Error::custom(format!("`{s}`: write a number, or a day as YYYY-MM-DD"))),
            _ => Err(D::Error::custom("write a number, or a day as YYYY-MM-DD")),
        }
    }
}

/// A day written `YYYY-MM-DD` (the form of `<input type="date">`).
pub fn day(text: &str) -> Option<chrono::NaiveDate> {
    (text.len() == 10).then(|| chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()).flatten()
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    #[default]
    Text,
    Textarea,
    Email,
    Phone,
    /// One of `options`, from a drop-down.
    Select,
    /// One of `options`, from radio buttons.
    Radio,
    /// Any of `options`, from check boxes.
    Checkboxes,
    /// Any of `options`, from a list.
    Multiselect,
    /// One check box: ticked or not.
    Checkbox,
    /// A required check box agreeing to the field's `label` in its `version`.
    Consent,
    /// A decimal number, within `min`, `max` and `step`.
    Number,
    /// A day, `YYYY-MM-DD`, within `min` and `max`.
    Date,
    /// An `http` or `https` address.
    Url,
    /// A value the page carries without showing it (a campaign, a product code).
    Hidden,
    /// Attached files, within `accept`, `max_bytes` and `max_files`.
    File,
}

impl FieldType {
    /// The name in the configuration (`type = "checkboxes"`).
    pub fn as_str(self) -> &'static str {
        match self {
            FieldType::Text => "text",
            FieldType::Textarea => "textarea",
            FieldType::Email => "email",
            FieldType::Phone => "phone",
            FieldType::Select => "select",
            FieldType::Radio => "radio",
            FieldType::Checkboxes => "checkboxes",
            FieldType::Multiselect => "multiselect",
            FieldType::Checkbox => "checkbox",
            FieldType::Consent => "consent",
            FieldType::Number => "number",
            FieldType::Date => "date",
            FieldType::Url => "url",
            FieldType::Hidden => "hidden",
            FieldType::File => "file",
        }
    }
}

/// What makes a submission valid for one form: its fields, its honeypot (empty: none) and
/// the volatile names it drops (captcha tokens).
#[derive(Debug, Clone, Copy)]
pub struct FormSchema<'a> {
    pub fields: &'a [FieldConfig],
    pub honeypot: &'a str,
    pub ignore_fields: &'a [String],
    pub undeclared: Undeclared,
}

/// What a form does with a field it does not declare (`undeclared_fields`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Undeclared {
    /// A 422 `unknown_field` (the JSON API's contract).
    #[default]
    Reject,
    /// Stored as text and fingerprinted (bounded), so an existing HTML form works unchanged.
    Keep,
}

impl<'a> FormSchema<'a> {
    pub fn field(&self, name: &str) -> Option<&'a FieldConfig> {
        self.fields.iter().find(|f| f.name == name)
    }
}
