//! `[[forms.NAME.routes]]`: who gets a submission, by what it says. The routes are checked in
//! order; the first whose `when` holds sets the submission's effects and owner recipients
//! (`services::accept::route` decides, in the accept plan). Their check-config rules are here.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{FormConfig, KindSettings};
use crate::domain::{EffectKind, FieldType};

/// The keys of `when` that are not fields: the submission's locale, its phone's region and
/// whether it is spam.
pub const FACTS: &[&str] = &["locale", "phone_region", "spam"];

/// One route. Unknown keys are refused by `settings`, which takes only the tables of effect
/// kinds (check-config refuses those of a kind that takes none on a route).
#[derive(Debug, Clone, Deserialize)]
pub struct RouteConfig {
    /// Shown in the admin and the JSON answer's `route`; an unnamed route is `#INDEX`
    /// (from 0, in the file's order).
    #[serde(default)]
    pub name: Option<String>,
    /// Every key must match (an empty `when` always does): a field of the form, `locale`,
    /// `phone_region` or `spam`.
    #[serde(default)]
    pub when: BTreeMap<String, WhenValue>,
    /// Replaces the form's `notify` for the owner notification.
    #[serde(default)]
    pub notify: Option<Vec<String>>,
    /// Replaces the form's `effects`.
    #[serde(default)]
    pub effects: Option<Vec<EffectKind>>,
    /// Effect kinds' own tables on a route (`line = { to_env = "…" }`), laid over the
    /// form's `[forms.F.KIND]` by kinds that take one (`effects::route_settings`); check-config
    /// refuses the others (such a route uses the form's table).
    #[serde(flatten)]
    pub settings: KindSettings,
}

/// A value in `when`: a string, one of a list of strings, or a boolean (`spam`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum WhenValue {
    Flag(bool),
    One(String),
    Any(Vec<String>),
}

impl WhenValue {
    /// The strings this value accepts (a boolean's as `true`/`false`).
    pub fn accepted(&self) -> Vec<String> {
        match self {
            WhenValue::Flag(b) => vec![b.to_string()],
            WhenValue::One(s) => vec![s.clone()],
            WhenValue::Any(list) => list.clone(),
        }
    }
}

impl RouteConfig {
    /// The keys of a route's own table (kind tables come beside them): for "did you mean"
    /// on a misspelt one, and the reference's test.
    pub const KEYS: &'static [&'static str] = &["name", "when", "notify", "effects"];

    /// What the submission stores and the answer says: its `name`, or `#INDEX`.
    pub fn label(&self, index: usize) -> String {
        self.name.clone().unwrap_or_else(|| format!("#{index}"))
    }
}

impl FormConfig {
    /// The route a stored label names (`name`, or `#INDEX` of an unnamed one), if the form
    /// still has it.
    pub fn route(&self, label: &str) -> Option<&RouteConfig> {
        self.routes.iter().enumerate().find(|(i, r)| r.label(*i) == label).map(|(_, r)| r)
    }
}

/// The routes' problems in `form` (at `forms.NAME`).
pub(super) fn form_problems(out: &mut Vec<String>, at: &str, form: &FormConfig) {
    let mut names = std::collections::HashSet::new();
    let mut always: Option<String> = None;
    for (i, route) in form.routes.iter().enumerate() {
        let label = route.label(i);
        let here = format!("{at}.routes[{i}] ({label})");
        if let Some(name) = &route.name {
            if name.is_empty() || name.starts_with('#') || name.chars().count() > 64 {
                out.push(format!("{here}.name: 1 to 64 characters, not starting with #"));
            }
            if !names.insert(name.as_str()) {
                out.push(format!("{here}.name: used by an earlier route"));
            }
        }
        if let Some(earlier) = &always {
            out.push(format!(
                "{here}: can never match: route {earlier} before it has no `when` (always matches)"
            ));
        }
        for (key, value) in &route.when {
            when_problems(out, &here, form, key, value);
        }
        if route.when.is_empty() && always.is_none() {
            always = Some(label.clone());
        }
        let mut kinds = std::collections::HashSet::new();
        for kind in route.effects.iter().flatten() {
            if !kinds.insert(kind) {
                out.push(format!("{here}.effects: `{}` listed twice", kind.as_str()));
            }
        }
    }
}

/// The problems of one `when` key and its value.
fn when_problems(out: &mut Vec<String>, here: &str, form: &FormConfig, key: &str, value: &WhenValue) {
    let at = format!("{here}.when.{key}");
    if matches!(value, WhenValue::Any(list) if list.is_empty()) {
        out.push(format!("{at}: can never match: an empty list"));
    }
    match (key, form.field(key)) {
        ("spam", None) => {
            if !matches!(value, WhenValue::Flag(_)) {
                out.push(format!("{at}: `spam` is true or false"));
            }
        }
        ("locale", None) => {
            for tag in value.accepted() {
                if crate::base::i18n::Locale::parse(&tag).is_none() {
                    out.push(format!("{at}: can never match: `{tag}` is not a shipped locale"));
                }
            }
        }
        ("phone_region", None) => {
            if !form.fields.iter().any(|f| f.kind == FieldType::Phone) {
                out.push(format!("{at}: can never match: the form has no phone field"));
            }
            for region in value.accepted() {
                if crate::domain::region::check_region(&region).is_err() {
                    out.push(format!("{at}: can never match: `{region}` is not a region code (e.g. TW, US)"));
                }
            }
        }
        (_, None) => {
            out.push(format!("{at}: `{key}` is neither a field of the form nor one of {}", FACTS.join(", ")))
        }
        (_, Some(field)) if field.has_options() => {
            for v in value.accepted().iter().filter(|v| !field.options.contains(v)) {
                out.push(format!("{at}: can never match: `{v}` is not one of the field's options"));
            }
        }
        (_, Some(_)) => {}
    }
}
