//! The effect kinds' own tables in a form (`[forms.F.slack]`), each parsed into its kind's
//! type when the config is read (by the kinds themselves, see `src/services/effects/kind.rs`).

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::domain::EffectKind;

/// A kind's own table in a form, parsed into the kind's type when the config is read.
pub type Settings = Arc<dyn Any + Send + Sync>;

/// The effect kinds' own tables in one form (`[forms.F.slack]`), each parsed by its kind.
#[derive(Clone, Default)]
pub struct KindSettings(pub(crate) BTreeMap<EffectKind, Settings>);

impl KindSettings {
    /// `kind`'s table, parsed.
    pub fn get<T: Any>(&self, kind: &EffectKind) -> Option<&T> {
        self.0.get(kind)?.downcast_ref()
    }

    /// `kind`'s table as its kind parsed it.
    pub fn raw(&self, kind: &EffectKind) -> Option<&Settings> {
        self.0.get(kind)
    }

    /// Sets `kind`'s table (a route's laid over the form's).
    pub fn set(&mut self, kind: EffectKind, settings: Settings) {
        self.0.insert(kind, settings);
    }

    pub fn contains(&self, kind: &EffectKind) -> bool {
        self.0.contains_key(kind)
    }

    /// The kinds that have a table here.
    pub fn kinds(&self) -> impl Iterator<Item = &EffectKind> {
        self.0.keys()
    }
}

impl fmt::Debug for KindSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}
