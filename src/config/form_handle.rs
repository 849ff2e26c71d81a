//! `Form`: a configured form's name, its settings and its version, handed around as one value.

use std::ops::Deref;
use std::sync::Arc;

use super::FormConfig;

/// One configured form: its name (the `[forms.NAME]` table, the `/f/NAME` path) and its
/// settings. Cheap to clone, so the accept transaction can take it to another thread.
#[derive(Debug, Clone)]
pub struct Form {
    name: Arc<str>,
    config: Arc<FormConfig>,
}

impl Form {
    pub fn new(name: &str, config: FormConfig) -> Form {
        Form { name: name.into(), config: Arc::new(config) }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn config(&self) -> &FormConfig {
        &self.config
    }

    /// Its version (a digest of its definition, `config::definition`); `None` for a form not
    /// read from TOML text.
    pub fn version(&self) -> Option<&str> {
        Some(&*self.config.definition.version).filter(|v| !v.is_empty())
    }

    /// Its definition as canonical JSON (what its version digests).
    pub fn definition(&self) -> &str {
        &self.config.definition.text
    }
}

/// A `Form` reads as its settings: `form.rate_limit`, `form.field("email")`.
impl Deref for Form {
    type Target = FormConfig;

    fn deref(&self) -> &FormConfig {
        &self.config
    }
}
