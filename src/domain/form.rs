//! The form schema: the fields a form declares, as the configuration states them
//! (`[[forms.F.fields]]`), and the view of a form that validation needs.

use serde::Deserialize;
use validator::Validate;

#[derive(Debug, Clone, Deserialize, Validate)]
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
    #[serde(default)]
    pub options: Vec<String>,
}

impl FieldConfig {
    pub fn label(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.name)
    }

    pub fn max_length(&self) -> usize {
        self.max_length.unwrap_or(match self.kind {
            FieldType::Text | FieldType::Select => 200,
            FieldType::Textarea => 5000,
            FieldType::Email => 254,
            FieldType::Phone => 32,
        })
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    #[default]
    Text,
    Textarea,
    Email,
    Phone,
    Select,
}

/// What makes a submission valid for one form: its fields, its honeypot (empty: none) and
/// the volatile names it drops (captcha tokens).
#[derive(Debug, Clone, Copy)]
pub struct FormSchema<'a> {
    pub fields: &'a [FieldConfig],
    pub honeypot: &'a str,
    pub ignore_fields: &'a [String],
}

impl<'a> FormSchema<'a> {
    pub fn field(&self, name: &str) -> Option<&'a FieldConfig> {
        self.fields.iter().find(|f| f.name == name)
    }
}
