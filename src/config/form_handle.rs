//! `Form`: a configured form's name and its settings, handed around as one value.

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
}

/// A `Form` reads as its settings: `form.rate_limit`, `form.field("email")`.
impl Deref for Form {
    type Target = FormConfig;

    fn deref(&self) -> &FormConfig {
        &self.config
    }
}
